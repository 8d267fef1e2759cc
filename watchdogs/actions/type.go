package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// actionsSpecialInputs are the input types whose value is set, not typed:
// browsers show pickers for them and ignore typed characters.
var actionsSpecialInputs = map[string]string{
	"date":           "YYYY-MM-DD",
	"time":           "HH:MM or HH:MM:SS",
	"month":          "YYYY-MM",
	"week":           "YYYY-Www",
	"datetime-local": "YYYY-MM-DDTHH:MM",
	"color":          "#rrggbb",
	"range":          "a number within the range",
}

// actionsNotTextInputs are input types that take no text.
var actionsNotTextInputs = map[string]bool{
	"checkbox": true, "radio": true, "button": true, "submit": true, "reset": true, "image": true, "hidden": true,
}

// actionsEditableJS returns the element to type into: the element itself, or
// the single text field inside it (a wrapper the model indexed).
const actionsEditableJS = `function(){
  const ok = (e) => e && (e.localName === 'textarea' || e.isContentEditable ||
    (e.localName === 'input' && !['checkbox','radio','button','submit','reset','image','hidden','file'].includes((e.type||'').toLowerCase())));
  if (ok(this)) return this;
  const inner = this.querySelectorAll ? this.querySelectorAll('input,textarea,[contenteditable=""],[contenteditable=true]') : [];
  const c = Array.from(inner).filter(ok);
  if (c.length === 1) return c[0];
  if (this.localName === 'label' && ok(this.control)) return this.control;
  return null;
}`

// actionsSetValueJS sets a value through the native setter (so frameworks
// that track the value, like React, see the change) and fires input and
// change. It returns the value the element accepted.
const actionsSetValueJS = `function(v){
  const proto = this.localName === 'textarea' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  const set = Object.getOwnPropertyDescriptor(proto, 'value').set;
  set.call(this, v);
  this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
  return this.value;
}`

// actionsClearJS empties a field in a way frameworks notice, then leaves the
// caret where typing continues.
const actionsClearJS = `function(){
  if (this.isContentEditable) {
    this.focus();
    const sel = this.ownerDocument.getSelection();
    const r = this.ownerDocument.createRange();
    r.selectNodeContents(this);
    sel.removeAllRanges(); sel.addRange(r);
    if (!this.ownerDocument.execCommand('delete', false)) this.textContent = '';
    if (this.textContent !== '') { this.textContent = ''; this.dispatchEvent(new Event('input', {bubbles: true})); }
    return;
  }
  const proto = this.localName === 'textarea' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(this, '');
  this.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
}`

// actionsCaretEndJS puts the caret at the end so typed text appends.
const actionsCaretEndJS = `function(){
  if (this.isContentEditable) {
    const sel = this.ownerDocument.getSelection();
    const r = this.ownerDocument.createRange();
    r.selectNodeContents(this); r.collapse(false);
    sel.removeAllRanges(); sel.addRange(r);
    return;
  }
  try { const n = this.value.length; this.setSelectionRange(n, n); } catch (e) {}
}`

const actionsValueJS = `function(){
  if (this.localName === 'input' || this.localName === 'textarea' || this.localName === 'select') return this.value;
  if (this.isContentEditable) return this.innerText;
  return this.textContent || '';
}`

const actionsActiveValueJS = `(() => {
  let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  if (!e) return {value: '', password: false};
  const v = ('value' in e && typeof e.value === 'string') ? e.value : (e.isContentEditable ? e.innerText : '');
  return {value: v, password: (e.type || '') === 'password'};
})()`

// actionsMask hides a secret value, keeping only its length.
func actionsMask(v string) string {
	return strings.Repeat("•", utf8.RuneCountInString(v))
}

// actionsType handles TypeText. The text is never logged nor put in an
// error; for sensitive text and password fields ActualValue is masked.
func (a *Actions) actionsType(ctx context.Context, s *session.Session, ev events.TypeTextEvent) (events.TypeResult, error) {
	var res events.TypeResult
	if ev.Element == nil && ev.Index == 0 {
		return a.actionsTypeFocused(ctx, s, ev)
	}
	el, err := a.actionsResolve(ctx, s, ev.Target)
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	name := actionsTargetName(ev.Target)
	switch {
	case el.info.Tag == "select":
		err = fmt.Errorf("watchdogs: %s is a <select> dropdown: use select_dropdown with the option's text", name)
	case el.info.Tag == "input" && el.info.Type == "file":
		err = fmt.Errorf("watchdogs: %s is a file input: use upload_file with the file's path", name)
	case el.info.Tag == "input" && actionsNotTextInputs[el.info.Type]:
		err = fmt.Errorf("watchdogs: %s is an <input type=%s>, which takes no text; click it instead", name, el.info.Type)
	}
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	if el.info.Tag != "input" && el.info.Tag != "textarea" && !el.info.Editable {
		id, ok, err := actionsObjectNode(ctx, el.sess, el.obj, actionsEditableJS)
		if err != nil {
			res.Outcome = actionsFailed(err)
			return res, err
		}
		if !ok {
			err = fmt.Errorf("watchdogs: %s (%s) is not a text field and holds no single text field; pick an input, textarea or editable element", name, el.info.Desc)
			res.Outcome = actionsFailed(err)
			return res, err
		}
		if el, err = actionsResolveNode(ctx, el.sess, id, name); err != nil {
			res.Outcome = actionsFailed(err)
			return res, err
		}
	}
	run := a.actionsBegin(ctx, s, el.sess)
	err = a.actionsTypeInto(ctx, el, ev, &res, run)
	// Never the text: its length and whether it was secret.
	a.cfg.Logger.Debug("actions: typed", zap.String("element", el.info.Desc), zap.Int("chars", utf8.RuneCountInString(ev.Text)),
		zap.Bool("sensitive", ev.Sensitive), zap.Bool("failed", err != nil))
	res.Outcome = run.end(ctx, err)
	return res, err
}

func (a *Actions) actionsTypeInto(ctx context.Context, el *actionsElement, ev events.TypeTextEvent, res *events.TypeResult, run *actionsRun) error {
	secret := ev.Sensitive || el.info.Type == "password"
	p, perr := actionsVisiblePoint(ctx, el)
	if perr != nil && !errors.Is(perr, actionsNoGeometry) {
		return perr
	}
	if perr == nil {
		res.X, res.Y = p.X, p.Y
	}
	if _, err := cdpproto.Call(ctx, el.sess, dom.Focus, dom.FocusParams{BackendNodeID: el.backend}); err != nil {
		if ctx.Err() != nil {
			return err
		}
		if perr != nil {
			return fmt.Errorf("watchdogs: cannot focus %s: %v", el.info.Desc, err)
		}
		// Some widgets only take focus from a pointer.
		if err := actionsMouseClick(ctx, el.sess, p.X, p.Y, ""); err != nil {
			return fmt.Errorf("watchdogs: cannot focus %s: %w", el.info.Desc, err)
		}
	}
	if format, ok := actionsSpecialInputs[el.info.Type]; ok && el.info.Tag == "input" {
		var got string
		if err := callOn(ctx, el.sess, el.obj, actionsSetValueJS, &got, ev.Text); err != nil {
			return fmt.Errorf("watchdogs: setting the %s input: %w", el.info.Type, err)
		}
		res.ActualValue = got
		if secret {
			res.ActualValue = actionsMask(got)
		}
		if got == "" && ev.Text != "" {
			return fmt.Errorf("watchdogs: the %s input rejected the value; give it as %s", el.info.Type, format)
		}
		if got != ev.Text && el.info.Type != "range" && el.info.Type != "color" {
			run.addDetail(fmt.Sprintf("the %s input normalised the value", el.info.Type))
		}
		return nil
	}
	var old, prior string
	if err := callOn(ctx, el.sess, el.obj, actionsValueJS, &prior); err != nil {
		return err
	}
	if !ev.Clear {
		old = prior
	}
	if ev.Clear {
		if err := callOn(ctx, el.sess, el.obj, actionsClearJS, nil); err != nil {
			return fmt.Errorf("watchdogs: clearing %s: %w", el.info.Desc, err)
		}
	} else if err := callOn(ctx, el.sess, el.obj, actionsCaretEndJS, nil); err != nil {
		return err
	}
	if ev.Text != "" {
		if _, err := cdpproto.Call(ctx, el.sess, input.InsertText, input.InsertTextParams{Text: ev.Text}); err != nil {
			return fmt.Errorf("watchdogs: typing into %s failed: %w", el.info.Desc, actionsScrub(err, ev.Text))
		}
	}
	var got string
	if err := callOn(ctx, el.sess, el.obj, actionsValueJS, &got); err != nil {
		return err
	}
	want := old + ev.Text
	if el.info.Editable {
		got = strings.TrimRight(got, "\n")
	}
	if got != want {
		run.addDetail("the field's value differs from the text typed (input mask, maxlength or a script changed it)")
	}
	if got != prior {
		// A new value is a change even though the page's structure is not.
		run.verdict, run.override = events.VerdictChanged, true
	}
	if secret {
		res.ActualValue = actionsMask(got)
	} else {
		res.ActualValue = got
	}
	return nil
}

// actionsScrub removes a secret from an error's text.
func actionsScrub(err error, secret string) error {
	if secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "<redacted>"))
}

// actionsTypeFocused types into whatever has focus in the focused tab.
func (a *Actions) actionsTypeFocused(ctx context.Context, s *session.Session, ev events.TypeTextEvent) (events.TypeResult, error) {
	var res events.TypeResult
	ps, err := s.PageSession("")
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	run := a.actionsBegin(ctx, s, ps)
	err = func() error {
		if _, err := cdpproto.Call(ctx, ps, input.InsertText, input.InsertTextParams{Text: ev.Text}); err != nil {
			return fmt.Errorf("watchdogs: typing into the focused element failed: %w", actionsScrub(err, ev.Text))
		}
		var v struct {
			Value    string `json:"value"`
			Password bool   `json:"password"`
		}
		if err := evaluate(ctx, ps, actionsActiveValueJS, &v); err != nil {
			return err
		}
		if ev.Sensitive || v.Password {
			res.ActualValue = actionsMask(v.Value)
		} else {
			res.ActualValue = v.Value
		}
		return nil
	}()
	res.Outcome = run.end(ctx, err)
	return res, err
}

// Modifier bits of Input.dispatchKeyEvent.
const (
	actionsModAlt   = 1
	actionsModCtrl  = 2
	actionsModMeta  = 4
	actionsModShift = 8
)

// actionsKeyDef is one key of a US keyboard.
type actionsKeyDef struct {
	key, code string
	vk        int64
	text      string
	location  int64
}

// actionsModifierKeys are the modifier keys by alias.
var actionsModifierKeys = map[string]struct {
	def actionsKeyDef
	bit int64
}{
	"shift":   {actionsKeyDef{key: "Shift", code: "ShiftLeft", vk: 16, location: 1}, actionsModShift},
	"ctrl":    {actionsKeyDef{key: "Control", code: "ControlLeft", vk: 17, location: 1}, actionsModCtrl},
	"control": {actionsKeyDef{key: "Control", code: "ControlLeft", vk: 17, location: 1}, actionsModCtrl},
	"alt":     {actionsKeyDef{key: "Alt", code: "AltLeft", vk: 18, location: 1}, actionsModAlt},
	"option":  {actionsKeyDef{key: "Alt", code: "AltLeft", vk: 18, location: 1}, actionsModAlt},
	"meta":    {actionsKeyDef{key: "Meta", code: "MetaLeft", vk: 91, location: 1}, actionsModMeta},
	"cmd":     {actionsKeyDef{key: "Meta", code: "MetaLeft", vk: 91, location: 1}, actionsModMeta},
	"command": {actionsKeyDef{key: "Meta", code: "MetaLeft", vk: 91, location: 1}, actionsModMeta},
	"super":   {actionsKeyDef{key: "Meta", code: "MetaLeft", vk: 91, location: 1}, actionsModMeta},
	"win":     {actionsKeyDef{key: "Meta", code: "MetaLeft", vk: 91, location: 1}, actionsModMeta},
}

// actionsNamedKeys are the non-character keys by lower-case alias.
var actionsNamedKeys = func() map[string]actionsKeyDef {
	m := map[string]actionsKeyDef{
		"enter":       {key: "Enter", code: "Enter", vk: 13, text: "\r"},
		"tab":         {key: "Tab", code: "Tab", vk: 9},
		"escape":      {key: "Escape", code: "Escape", vk: 27},
		"backspace":   {key: "Backspace", code: "Backspace", vk: 8},
		"delete":      {key: "Delete", code: "Delete", vk: 46},
		"insert":      {key: "Insert", code: "Insert", vk: 45},
		"space":       {key: " ", code: "Space", vk: 32, text: " "},
		"arrowup":     {key: "ArrowUp", code: "ArrowUp", vk: 38},
		"arrowdown":   {key: "ArrowDown", code: "ArrowDown", vk: 40},
		"arrowleft":   {key: "ArrowLeft", code: "ArrowLeft", vk: 37},
		"arrowright":  {key: "ArrowRight", code: "ArrowRight", vk: 39},
		"pageup":      {key: "PageUp", code: "PageUp", vk: 33},
		"pagedown":    {key: "PageDown", code: "PageDown", vk: 34},
		"home":        {key: "Home", code: "Home", vk: 36},
		"end":         {key: "End", code: "End", vk: 35},
		"capslock":    {key: "CapsLock", code: "CapsLock", vk: 20},
		"contextmenu": {key: "ContextMenu", code: "ContextMenu", vk: 93},
	}
	for i := 1; i <= 12; i++ {
		n := fmt.Sprintf("F%d", i)
		m[strings.ToLower(n)] = actionsKeyDef{key: n, code: n, vk: int64(111 + i)}
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

// actionsPunct maps US-layout punctuation to its physical key; shifted
// characters are listed with the same code.
var actionsPunct = map[rune]struct {
	code  string
	vk    int64
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

// actionsCharKey returns the key of a printable character on a US
// keyboard; ok is false for characters it has no key for (typed with
// Input.insertText instead).
func actionsCharKey(r rune) (actionsKeyDef, bool) {
	s := string(r)
	switch {
	case r >= 'a' && r <= 'z':
		return actionsKeyDef{key: s, code: "Key" + strings.ToUpper(s), vk: int64(r - 'a' + 'A'), text: s}, true
	case r >= 'A' && r <= 'Z':
		return actionsKeyDef{key: s, code: "Key" + s, vk: int64(r), text: s}, true
	case r >= '0' && r <= '9':
		return actionsKeyDef{key: s, code: "Digit" + s, vk: int64(r), text: s}, true
	}
	if p, ok := actionsPunct[r]; ok {
		return actionsKeyDef{key: s, code: p.code, vk: p.vk, text: s}, true
	}
	return actionsKeyDef{}, false
}

// actionsStroke is one key press with modifiers held.
type actionsStroke struct {
	mods []actionsKeyDef
	mask int64
	key  actionsKeyDef
}

// actionsParseCombo parses "Enter", "a", "Control+a", "ctrl+shift+k".
func actionsParseCombo(tok string) (actionsStroke, bool) {
	var st actionsStroke
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
			m, ok := actionsModifierKeys[strings.ToLower(p)]
			if !ok {
				return st, false
			}
			if st.mask&m.bit == 0 {
				st.mods = append(st.mods, m.def)
				st.mask |= m.bit
			}
			continue
		}
		if k, ok := actionsNamedKeys[strings.ToLower(p)]; ok {
			st.key = k
			return st, true
		}
		if m, ok := actionsModifierKeys[strings.ToLower(p)]; ok && len(parts) > 1 {
			// "Control+Shift": press the modifiers alone.
			st.key = m.def
			return st, true
		}
		if utf8.RuneCountInString(p) == 1 {
			r, _ := utf8.DecodeRuneInString(p)
			k, ok := actionsCharKey(r)
			if !ok {
				return st, false
			}
			if st.mask&actionsModShift != 0 && r >= 'a' && r <= 'z' {
				up := strings.ToUpper(p)
				k.key, k.text = up, up
			} else if st.mask != 0 && st.mask&actionsModShift == 0 && r >= 'A' && r <= 'Z' {
				// "Control+A" is the A key without Shift: key "a".
				low := strings.ToLower(p)
				k.key, k.text = low, low
			}
			st.key = k
			return st, true
		}
		return st, false
	}
	return st, false
}

// actionsParseKeys turns SendKeys' string into strokes. A string whose
// every space-separated token is a key or combination is a key sequence
// ("Tab Tab Enter"); anything else is text typed character by character.
func actionsParseKeys(keys string) (strokes []actionsStroke, text bool) {
	toks := strings.Fields(keys)
	if len(toks) == 0 {
		return nil, true
	}
	for _, t := range toks {
		st, ok := actionsParseCombo(t)
		if !ok {
			return nil, true
		}
		// A bare single character among several tokens is ambiguous ("a b")
		// only if the tokens spell words; treat multi-token strings with
		// bare characters as text, so "I am" types a space.
		if len(toks) > 1 && len(st.mods) == 0 && utf8.RuneCountInString(t) == 1 {
			return nil, true
		}
		strokes = append(strokes, st)
	}
	return strokes, false
}

// actionsEditCommands are the editing commands Chromium needs to act on
// shortcut keys sent over CDP (Linux has no native key bindings there).
var actionsEditCommands = map[string]string{
	"a": "selectAll", "c": "copy", "x": "cut", "v": "paste", "z": "undo", "y": "redo",
}

func actionsDispatchStroke(ctx context.Context, cs *cdp.Session, st actionsStroke) error {
	var mask int64
	for i, m := range st.mods {
		mask |= actionsModMaskOf(m.key)
		if _, err := cdpproto.Call(ctx, cs, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeRawKeyDown, Modifiers: mask, Key: m.key, Code: m.code,
			WindowsVirtualKeyCode: m.vk, NativeVirtualKeyCode: m.vk, Location: m.location,
		}); err != nil {
			actionsReleaseMods(ctx, cs, st.mods[:i], mask&^actionsModMaskOf(m.key))
			return err
		}
	}
	k := st.key
	text := k.text
	if mask&(actionsModCtrl|actionsModAlt|actionsModMeta) != 0 {
		text = "" // a shortcut types nothing
	}
	var cmds []string
	if mask&(actionsModCtrl|actionsModMeta) != 0 {
		if c, ok := actionsEditCommands[strings.ToLower(k.key)]; ok {
			if c == "undo" && mask&actionsModShift != 0 {
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
		Type: typ, Modifiers: mask, Key: k.key, Code: k.code, Text: text, UnmodifiedText: text,
		WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Location: k.location, Commands: cmds,
	})
	if err == nil {
		_, err = cdpproto.Call(ctx, cs, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyUp, Modifiers: mask, Key: k.key, Code: k.code,
			WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Location: k.location,
		})
	}
	if rerr := actionsReleaseMods(ctx, cs, st.mods, mask); err == nil {
		err = rerr
	}
	return err
}

func actionsModMaskOf(key string) int64 {
	switch key {
	case "Shift":
		return actionsModShift
	case "Control":
		return actionsModCtrl
	case "Alt":
		return actionsModAlt
	case "Meta":
		return actionsModMeta
	}
	return 0
}

// actionsReleaseMods releases held modifiers in reverse order.
func actionsReleaseMods(ctx context.Context, cs *cdp.Session, mods []actionsKeyDef, mask int64) error {
	var first error
	for i := len(mods) - 1; i >= 0; i-- {
		m := mods[i]
		mask &^= actionsModMaskOf(m.key)
		if _, err := cdpproto.Call(ctx, cs, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: input.DispatchKeyEventTypeKeyUp, Modifiers: mask, Key: m.key, Code: m.code,
			WindowsVirtualKeyCode: m.vk, NativeVirtualKeyCode: m.vk, Location: m.location,
		}); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// actionsTypeKeys types text key by key: characters of a US keyboard as
// key events (pages see keydown/keypress/keyup), others with insertText.
func (a *Actions) actionsTypeKeys(ctx context.Context, cs *cdp.Session, text string) error {
	for i, r := range text {
		if i > 0 && a.cfg.TypingDelay > 0 {
			actionsSleep(ctx, a.cfg.TypingDelay)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r == '\n' || r == '\t' {
			name := map[rune]string{'\n': "enter", '\t': "tab"}[r]
			if err := actionsDispatchStroke(ctx, cs, actionsStroke{key: actionsNamedKeys[name]}); err != nil {
				return err
			}
			continue
		}
		k, ok := actionsCharKey(r)
		if !ok {
			if _, err := cdpproto.Call(ctx, cs, input.InsertText, input.InsertTextParams{Text: string(r)}); err != nil {
				return err
			}
			continue
		}
		if err := actionsDispatchStroke(ctx, cs, actionsStroke{key: k}); err != nil {
			return err
		}
	}
	return nil
}

// actionsSendKeys handles SendKeys on the focused tab: whatever has focus
// receives the keys.
func (a *Actions) actionsSendKeys(ctx context.Context, s *session.Session, ev events.SendKeysEvent) (events.SendKeysResult, error) {
	var res events.SendKeysResult
	if ev.Keys == "" {
		err := errors.New("watchdogs: send_keys needs keys, such as \"Enter\", \"Control+a\" or text")
		res.Outcome = actionsFailed(err)
		return res, err
	}
	ps, err := s.PageSession("")
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	strokes, text := actionsParseKeys(ev.Keys)
	run := a.actionsBegin(ctx, s, ps)
	if text {
		err = a.actionsTypeKeys(ctx, ps, ev.Keys)
		run.addDetail(fmt.Sprintf("typed %d characters", utf8.RuneCountInString(ev.Keys)))
	} else {
		for i, st := range strokes {
			if i > 0 && a.cfg.TypingDelay > 0 {
				actionsSleep(ctx, a.cfg.TypingDelay)
			}
			if err = actionsDispatchStroke(ctx, ps, st); err != nil {
				break
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("watchdogs: send keys: %w", err)
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}
