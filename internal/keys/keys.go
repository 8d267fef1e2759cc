// Package keys is the US keyboard as CDP's Input.dispatchKeyEvent needs it:
// named keys ("Enter", "PageDown", "F5"), modifiers and their aliases
// ("ctrl", "cmd"), printable characters with their physical keys, combos
// ("Control+Shift+k") and the editing commands Chromium needs for shortcuts
// sent over CDP. The actions watchdog types with it; anything else that
// forwards keys to a page (a live view) uses the same table.
package keys

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"

	"github.com/browseragent/browseragent/cdp"
)

// Modifier bits of Input.dispatchKeyEvent.
const (
	modAlt   = 1
	modCtrl  = 2
	modMeta  = 4
	modShift = 8
)

// Key is one key of a US keyboard.
type Key struct {
	Name     string // the DOM key value: "Enter", "a", "Shift"
	Code     string // the physical key: "Enter", "KeyA", "ShiftLeft"
	VK       int64  // Windows virtual key code
	Text     string // the text the key types, "" for none
	Location int64  // 1 for the left modifier keys
}

// modifiers are the modifier keys by alias.
var modifiers = map[string]struct {
	def Key
	bit int64
}{
	"shift":   {Key{Name: "Shift", Code: "ShiftLeft", VK: 16, Location: 1}, modShift},
	"ctrl":    {Key{Name: "Control", Code: "ControlLeft", VK: 17, Location: 1}, modCtrl},
	"control": {Key{Name: "Control", Code: "ControlLeft", VK: 17, Location: 1}, modCtrl},
	"alt":     {Key{Name: "Alt", Code: "AltLeft", VK: 18, Location: 1}, modAlt},
	"option":  {Key{Name: "Alt", Code: "AltLeft", VK: 18, Location: 1}, modAlt},
	"meta":    {Key{Name: "Meta", Code: "MetaLeft", VK: 91, Location: 1}, modMeta},
	"cmd":     {Key{Name: "Meta", Code: "MetaLeft", VK: 91, Location: 1}, modMeta},
	"command": {Key{Name: "Meta", Code: "MetaLeft", VK: 91, Location: 1}, modMeta},
	"super":   {Key{Name: "Meta", Code: "MetaLeft", VK: 91, Location: 1}, modMeta},
	"win":     {Key{Name: "Meta", Code: "MetaLeft", VK: 91, Location: 1}, modMeta},
}

// named are the non-character keys by lower-case alias.
var named = func() map[string]Key {
	m := map[string]Key{
		"enter":       {Name: "Enter", Code: "Enter", VK: 13, Text: "\r"},
		"tab":         {Name: "Tab", Code: "Tab", VK: 9},
		"escape":      {Name: "Escape", Code: "Escape", VK: 27},
		"backspace":   {Name: "Backspace", Code: "Backspace", VK: 8},
		"delete":      {Name: "Delete", Code: "Delete", VK: 46},
		"insert":      {Name: "Insert", Code: "Insert", VK: 45},
		"space":       {Name: " ", Code: "Space", VK: 32, Text: " "},
		"arrowup":     {Name: "ArrowUp", Code: "ArrowUp", VK: 38},
		"arrowdown":   {Name: "ArrowDown", Code: "ArrowDown", VK: 40},
		"arrowleft":   {Name: "ArrowLeft", Code: "ArrowLeft", VK: 37},
		"arrowright":  {Name: "ArrowRight", Code: "ArrowRight", VK: 39},
		"pageup":      {Name: "PageUp", Code: "PageUp", VK: 33},
		"pagedown":    {Name: "PageDown", Code: "PageDown", VK: 34},
		"home":        {Name: "Home", Code: "Home", VK: 36},
		"end":         {Name: "End", Code: "End", VK: 35},
		"capslock":    {Name: "CapsLock", Code: "CapsLock", VK: 20},
		"contextmenu": {Name: "ContextMenu", Code: "ContextMenu", VK: 93},
	}
	for i := 1; i <= 12; i++ {
		n := fmt.Sprintf("F%d", i)
		m[strings.ToLower(n)] = Key{Name: n, Code: n, VK: int64(111 + i)}
	}
	alias := map[string]string{
		"return": "enter", "esc": "escape", "del": "delete", "ins": "insert", "spacebar": "space",
		"up": "arrowup", "down": "arrowdown", "left": "arrowleft", "right": "arrowright",
		"page_up": "pageup", "page_down": "pagedown", "pgup": "pageup", "pgdn": "pagedown",
		"back": "backspace", "bksp": "backspace",
	}
	for a, k := range alias {
		m[a] = m[k]
	}
	return m
}()

// punct maps US-layout punctuation to its physical key; shifted
// characters are listed with the same code.
var punct = map[rune]struct {
	Code  string
	VK    int64
	shift bool
}{
	' ': {"Space", 32, false}, '-': {"Minus", 189, false}, '_': {"Minus", 189, true},
	'=': {"Equal", 187, false}, '+': {"Equal", 187, true}, '[': {"BracketLeft", 219, false},
	'{': {"BracketLeft", 219, true}, ']': {"BracketRight", 221, false}, '}': {"BracketRight", 221, true},
	'\\': {"Backslash", 220, false}, '|': {"Backslash", 220, true}, ';': {"Semicolon", 186, false},
	':': {"Semicolon", 186, true}, '\'': {"Quote", 222, false}, '"': {"Quote", 222, true},
	',': {"Comma", 188, false}, '<': {"Comma", 188, true}, '.': {"Period", 190, false},
	'>': {"Period", 190, true}, '/': {"Slash", 191, false}, '?': {"Slash", 191, true},
	'`': {"Backquote", 192, false}, '~': {"Backquote", 192, true},
	'!': {"Digit1", 49, true}, '@': {"Digit2", 50, true}, '#': {"Digit3", 51, true},
	'$': {"Digit4", 52, true}, '%': {"Digit5", 53, true}, '^': {"Digit6", 54, true},
	'&': {"Digit7", 55, true}, '*': {"Digit8", 56, true}, '(': {"Digit9", 57, true}, ')': {"Digit0", 48, true},
}

// Char returns the key of a printable character on a US
// keyboard; ok is false for characters it has no key for (typed with
// Input.insertText instead).
func Char(r rune) (Key, bool) {
	s := string(r)
	switch {
	case r >= 'a' && r <= 'z':
		return Key{Name: s, Code: "Key" + strings.ToUpper(s), VK: int64(r - 'a' + 'A'), Text: s}, true
	case r >= 'A' && r <= 'Z':
		return Key{Name: s, Code: "Key" + s, VK: int64(r), Text: s}, true
	case r >= '0' && r <= '9':
		return Key{Name: s, Code: "Digit" + s, VK: int64(r), Text: s}, true
	}
	if p, ok := punct[r]; ok {
		return Key{Name: s, Code: p.Code, VK: p.VK, Text: s}, true
	}
	return Key{}, false
}

// Stroke is one key press with modifiers held.
type Stroke struct {
	Mods []Key // modifiers held, in press order
	Mask int64 // their modifier bits
	Key  Key
}

// ParseCombo parses "Enter", "a", "Control+a", "ctrl+shift+k".
func ParseCombo(tok string) (Stroke, bool) {
	var st Stroke
	parts := strings.Split(tok, "+")
	if strings.HasSuffix(tok, "++") || tok == "+" {
		// "Control++": the key is "+".
		parts = append(strings.Split(strings.TrimSuffix(tok, "++"), "+"), "+")
		if tok == "+" {
			parts = []string{"+"}
		}
	}
	for i, p := range parts {
		last := i == len(parts)-1
		if p == "" {
			return st, false
		}
		if !last {
			m, ok := modifiers[strings.ToLower(p)]
			if !ok {
				return st, false
			}
			if st.Mask&m.bit == 0 {
				st.Mods = append(st.Mods, m.def)
				st.Mask |= m.bit
			}
			continue
		}
		if k, ok := named[strings.ToLower(p)]; ok {
			st.Key = k
			return st, true
		}
		if m, ok := modifiers[strings.ToLower(p)]; ok && len(parts) > 1 {
			// "Control+Shift": press the modifiers alone.
			st.Key = m.def
			return st, true
		}
		if utf8.RuneCountInString(p) == 1 {
			r, _ := utf8.DecodeRuneInString(p)
			k, ok := Char(r)
			if !ok {
				return st, false
			}
			if st.Mask&modShift != 0 && r >= 'a' && r <= 'z' {
				up := strings.ToUpper(p)
				k.Name, k.Text = up, up
			} else if st.Mask != 0 && st.Mask&modShift == 0 && r >= 'A' && r <= 'Z' {
				// "Control+A" is the A key without Shift: key "a".
				low := strings.ToLower(p)
				k.Name, k.Text = low, low
			}
			st.Key = k
			return st, true
		}
		return st, false
	}
	return st, false
}

// Parse turns SendKeys' string into strokes. A string whose
// every space-separated token is a key or combination is a key sequence
// ("Tab Tab Enter"); anything else is text typed character by character.
func Parse(keys string) (strokes []Stroke, text bool) {
	toks := strings.Fields(keys)
	if len(toks) == 0 {
		return nil, true
	}
	for _, t := range toks {
		st, ok := ParseCombo(t)
		if !ok {
			return nil, true
		}
		// A bare single character among several tokens is ambiguous ("a b")
		// only if the tokens spell words; treat multi-token strings with
		// bare characters as text, so "I am" types a space.
		if len(toks) > 1 && len(st.Mods) == 0 && utf8.RuneCountInString(t) == 1 {
			return nil, true
		}
		strokes = append(strokes, st)
	}
	return strokes, false
}

// editCommands are the editing commands Chromium needs to act on
// shortcut keys sent over CDP (Linux has no native key bindings there).
var editCommands = map[string]string{
	"a": "selectAll", "c": "copy", "x": "cut", "v": "paste", "z": "undo", "y": "redo",
}

// Dispatch presses one stroke on cs: modifiers down in order, the key down
// and up (a shortcut types no text and carries its editing command), then
// the modifiers up in reverse order, also when a press failed.
func Dispatch(ctx context.Context, cs *cdp.Session, st Stroke) error {
	var mask int64
	for i, m := range st.Mods {
		mask |= modMaskOf(m.Name)
		if _, err := cdpproto.Call(ctx, cs, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeRawKeyDown, Modifiers: mask, Key: m.Name, Code: m.Code,
			WindowsVirtualKeyCode: m.VK, NativeVirtualKeyCode: m.VK, Location: m.Location,
		}); err != nil {
			releaseMods(ctx, cs, st.Mods[:i], mask&^modMaskOf(m.Name))
			return err
		}
	}
	k := st.Key
	text := k.Text
	if mask&(modCtrl|modAlt|modMeta) != 0 {
		text = "" // a shortcut types nothing
	}
	var cmds []string
	if mask&(modCtrl|modMeta) != 0 {
		if c, ok := editCommands[strings.ToLower(k.Name)]; ok {
			if c == "undo" && mask&modShift != 0 {
				c = "redo"
			}
			cmds = []string{c}
		}
	}
	typ := input.DispatchKeyEventTypeKeyDown
	if text == "" {
		typ = input.DispatchKeyEventTypeRawKeyDown
	}
	_, err := cdpproto.Call(ctx, cs, input.DispatchKeyEvent, input.DispatchKeyEventParams{
		Type: typ, Modifiers: mask, Key: k.Name, Code: k.Code, Text: text, UnmodifiedText: text,
		WindowsVirtualKeyCode: k.VK, NativeVirtualKeyCode: k.VK, Location: k.Location, Commands: cmds,
	})
	if err == nil {
		_, err = cdpproto.Call(ctx, cs, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyUp, Modifiers: mask, Key: k.Name, Code: k.Code,
			WindowsVirtualKeyCode: k.VK, NativeVirtualKeyCode: k.VK, Location: k.Location,
		})
	}
	if rerr := releaseMods(ctx, cs, st.Mods, mask); err == nil {
		err = rerr
	}
	return err
}

func modMaskOf(key string) int64 {
	switch key {
	case "Shift":
		return modShift
	case "Control":
		return modCtrl
	case "Alt":
		return modAlt
	case "Meta":
		return modMeta
	}
	return 0
}

// releaseMods releases held modifiers in reverse order.
func releaseMods(ctx context.Context, cs *cdp.Session, mods []Key, mask int64) error {
	var first error
	for i := len(mods) - 1; i >= 0; i-- {
		m := mods[i]
		mask &^= modMaskOf(m.Name)
		if _, err := cdpproto.Call(ctx, cs, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyUp, Modifiers: mask, Key: m.Name, Code: m.Code,
			WindowsVirtualKeyCode: m.VK, NativeVirtualKeyCode: m.VK, Location: m.Location,
		}); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Type types text key by key, delay apart: characters of a US keyboard as
// key events (pages see keydown/keypress/keyup), others with insertText.
func Type(ctx context.Context, cs *cdp.Session, text string, delay time.Duration) error {
	for i, r := range text {
		if i > 0 && delay > 0 {
			sleep(ctx, delay)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r == '\n' || r == '\t' {
			name := map[rune]string{'\n': "enter", '\t': "tab"}[r]
			if err := Dispatch(ctx, cs, Stroke{Key: named[name]}); err != nil {
				return err
			}
			continue
		}
		k, ok := Char(r)
		if !ok {
			if _, err := cdpproto.Call(ctx, cs, input.InsertText, input.InsertTextParams{Text: string(r)}); err != nil {
				return err
			}
			continue
		}
		if err := Dispatch(ctx, cs, Stroke{Key: k}); err != nil {
			return err
		}
	}
	return nil
}

// Named returns the key of a name or alias ("enter", "Esc", "PageDown",
// "F5"), case-insensitively.
func Named(name string) (Key, bool) {
	k, ok := named[strings.ToLower(name)]
	return k, ok
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
