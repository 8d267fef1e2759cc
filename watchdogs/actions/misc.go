package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// actionsScrollerJS scrolls the nearest ancestor-or-self of this that can
// scroll in the direction asked (the document's scroller last), by dx/dy
// pixels (0: one client height/width). It reports the positions before and
// after and whether the end was reached.
const actionsScrollerJS = `function(sx, sy, amount, page){
  let dx = sx, dy = sy;
  const doc = this.ownerDocument || this;
  const root = doc.scrollingElement || doc.documentElement;
  const can = (e) => {
    if (e === root) return true;
    const st = getComputedStyle(e);
    const oy = st.overflowY, ox = st.overflowX;
    const y = dy !== 0 && (oy === 'auto' || oy === 'scroll' || oy === 'overlay') && e.scrollHeight > e.clientHeight;
    const x = dx !== 0 && (ox === 'auto' || ox === 'scroll' || ox === 'overlay') && e.scrollWidth > e.clientWidth;
    return y || x;
  };
  let e = page ? null : (this.nodeType === 1 ? this : null);
  if (page) {
    // The page scrolls unless it cannot move that way; then whatever
    // scroll container sits under the viewport's centre.
    const v = doc.defaultView;
    const maxY = root.scrollHeight - v.innerHeight, maxX = root.scrollWidth - v.innerWidth;
    const pageCan = (dy > 0 && v.scrollY < maxY - 1) || (dy < 0 && v.scrollY > 0) || (dx > 0 && v.scrollX < maxX - 1) || (dx < 0 && v.scrollX > 0);
    e = root;
    if (!pageCan && root.scrollHeight <= v.innerHeight + 1 && root.scrollWidth <= v.innerWidth + 1) {
      let c = doc.elementFromPoint(v.innerWidth / 2, v.innerHeight / 2);
      while (c && c !== root && !can(c)) c = c.parentElement;
      if (c) e = c;
    }
  } else {
    while (e && e !== root && !can(e)) e = e.parentElement || (e.getRootNode() && e.getRootNode().host) || null;
    if (!e) e = root;
  }
  const isRoot = e === root || e === doc.body;
  const v = doc.defaultView;
  const ch = isRoot ? v.innerHeight : e.clientHeight, cw = isRoot ? v.innerWidth : e.clientWidth;
  dy = sy * (amount > 0 ? amount : Math.round(ch * 0.9));
  dx = sx * (amount > 0 ? amount : Math.round(cw * 0.9));
  const pos = () => isRoot ? [v.scrollX, v.scrollY] : [e.scrollLeft, e.scrollTop];
  const [bx, by] = pos();
  if (isRoot) v.scrollBy({left: dx, top: dy, behavior: 'instant'});
  else e.scrollBy({left: dx, top: dy, behavior: 'instant'});
  const [ax, ay] = pos();
  const maxY = (isRoot ? root.scrollHeight - v.innerHeight : e.scrollHeight - e.clientHeight);
  const maxX = (isRoot ? root.scrollWidth - v.innerWidth : e.scrollWidth - e.clientWidth);
  const desc = ` + actionsDescJS + `;
  return {what: isRoot ? 'page' : desc(e), bx, by, ax, ay, maxX: Math.max(0, maxX), maxY: Math.max(0, maxY)};
}`

type actionsScrollReport struct {
	What string  `json:"what"`
	BX   float64 `json:"bx"`
	BY   float64 `json:"by"`
	AX   float64 `json:"ax"`
	AY   float64 `json:"ay"`
	MaxX float64 `json:"maxX"`
	MaxY float64 `json:"maxY"`
}

// actionsDocument returns the document object of a session's main frame.
func actionsDocument(ctx context.Context, cs *cdp.Session) (runtime.RemoteObjectID, error) {
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: "document"})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return "", errors.New("watchdogs: the page has no document")
	}
	return res.Result.ObjectID, nil
}

// actionsScroll handles Scroll: the page (Index 0, no Element) or the
// element's nearest scroll container.
func (a *Actions) actionsScroll(ctx context.Context, s *session.Session, ev events.ScrollEvent) (events.ScrollResult, error) {
	var res events.ScrollResult
	dx, dy := 0, 0
	amount := ev.Amount
	if amount < 0 {
		err := fmt.Errorf("watchdogs: scroll amount %d is negative; give a direction instead", amount)
		res.Outcome = actionsFailed(err)
		return res, err
	}
	switch ev.Direction {
	case events.ScrollDown, "":
		dy = 1
	case events.ScrollUp:
		dy = -1
	case events.ScrollRight:
		dx = 1
	case events.ScrollLeft:
		dx = -1
	default:
		err := fmt.Errorf("watchdogs: unknown scroll direction %q (up, down, left, right)", ev.Direction)
		res.Outcome = actionsFailed(err)
		return res, err
	}
	page := ev.Element == nil && ev.Index == 0
	var cs *cdp.Session
	var obj runtime.RemoteObjectID
	if page {
		ps, err := s.PageSession("")
		if err == nil {
			cs = ps
			obj, err = actionsDocument(ctx, ps)
		}
		if err != nil {
			res.Outcome = actionsFailed(err)
			return res, err
		}
	} else {
		el, err := a.actionsResolve(ctx, s, ev.Target)
		if err != nil {
			res.Outcome = actionsFailed(err)
			return res, err
		}
		cs, obj = el.sess, el.obj
	}
	run := a.actionsBegin(ctx, s, cs)
	var rep actionsScrollReport
	err := callOn(ctx, cs, obj, actionsScrollerJS, &rep, dx, dy, amount, page)
	if err == nil {
		dir := ev.Direction
		if dir == "" {
			dir = events.ScrollDown
		}
		moved := rep.AX != rep.BX || rep.AY != rep.BY
		where := rep.What
		if moved {
			run.verdict, run.override = events.VerdictChanged, true
			d := rep.AY - rep.BY
			if dx != 0 {
				d = rep.AX - rep.BX
			}
			if d < 0 {
				d = -d
			}
			run.addDetail(fmt.Sprintf("scrolled %s %.0f px %s (now at %.0f of %.0f)", where, d, dir, max(rep.AY, rep.AX), max(rep.MaxY, rep.MaxX)))
		} else {
			run.verdict, run.override = events.VerdictNoChange, true
			edge := map[events.ScrollDirection]string{events.ScrollDown: "bottom", events.ScrollUp: "top", events.ScrollLeft: "left edge", events.ScrollRight: "right edge"}[dir]
			if (dy != 0 && rep.MaxY == 0) || (dx != 0 && rep.MaxX == 0) {
				run.addDetail(where + " cannot scroll " + string(dir) + ": nothing to scroll")
			} else {
				run.addDetail(where + " is already at the " + edge)
			}
		}
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

// actionsFindTextJS finds the innermost visible element whose text contains
// the text (exact, then case-insensitive, whitespace-normalised) and
// scrolls it to the centre. The text arrives as an argument, never as code.
const actionsFindTextJS = `function(text, dir){
  const doc = this;
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const want = norm(text), low = want.toLowerCase();
  const vis = (e) => e.checkVisibility ? e.checkVisibility({visibilityProperty: true, opacityProperty: true}) : e.getClientRects().length > 0;
  const hits = (exact) => {
    const out = [];
    const walk = doc.createTreeWalker(doc.body || doc.documentElement, NodeFilter.SHOW_TEXT);
    const seen = new Set();
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      let e = n.parentElement;
      if (!e || seen.has(e)) continue;
      // Climb until the element's text holds the whole phrase (it may span
      // inline children).
      for (let k = 0; e && k < 6; k++) {
        const t = norm(e.textContent);
        if (exact ? t.includes(want) : t.toLowerCase().includes(low)) break;
        e = e.parentElement;
        if (!e || e === doc.body) { e = null; break; }
      }
      if (!e || seen.has(e)) continue;
      seen.add(e);
      if (vis(e)) out.push(e);
    }
    return out;
  };
  let found = hits(true);
  if (!found.length) found = hits(false);
  if (!found.length) return {found: false};
  const v = doc.defaultView;
  let pick = found[0];
  if (dir === 'up') {
    const above = found.filter((e) => e.getBoundingClientRect().bottom < 0);
    if (above.length) pick = above[above.length - 1];
  } else {
    const below = found.filter((e) => e.getBoundingClientRect().top > v.innerHeight);
    const inView = found.filter((e) => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= v.innerHeight; });
    if (inView.length) pick = inView[0]; else if (below.length) pick = below[0];
  }
  const by = v.scrollY;
  pick.scrollIntoView({block: 'center', inline: 'nearest', behavior: 'instant'});
  const desc = ` + actionsDescJS + `;
  return {found: true, desc: desc(pick), moved: v.scrollY !== by, count: found.length};
}`

// actionsScrollToText handles ScrollToText on the focused tab.
func (a *Actions) actionsScrollToText(ctx context.Context, s *session.Session, ev events.ScrollToTextEvent) (events.ScrollResult, error) {
	var res events.ScrollResult
	if strings.TrimSpace(ev.Text) == "" {
		err := errors.New("watchdogs: scroll to text needs non-empty text")
		res.Outcome = actionsFailed(err)
		return res, err
	}
	ps, err := s.PageSession("")
	var doc runtime.RemoteObjectID
	if err == nil {
		doc, err = actionsDocument(ctx, ps)
	}
	if err != nil {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	run := a.actionsBegin(ctx, s, ps)
	var out struct {
		Found bool   `json:"found"`
		Desc  string `json:"desc"`
		Moved bool   `json:"moved"`
		Count int    `json:"count"`
	}
	err = callOn(ctx, ps, doc, actionsFindTextJS, &out, ev.Text, string(ev.Direction))
	if err == nil && !out.Found {
		err = fmt.Errorf("watchdogs: text %q is not visible anywhere on the page", actionsClip(ev.Text, 100))
	}
	if err == nil {
		if out.Moved {
			run.verdict, run.override = events.VerdictChanged, true
			run.addDetail("scrolled to the text in " + out.Desc)
		} else {
			run.addDetail("the text is already in view in " + out.Desc)
		}
	}
	res.Outcome = run.end(ctx, err)
	return res, err
}

// actionsListJS finds a dropdown's options: a native <select> (the element,
// its label's control, or the single select inside it), or an ARIA
// combobox/listbox (role=option elements in the listbox it controls or
// owns, or inside it). With pick >= 0 it returns that option's element
// instead of the list.
const actionsListJS = `function(pick){
  const e = this;
  let sel = null;
  if (e.localName === 'select') sel = e;
  else if (e.localName === 'label' && e.control && e.control.localName === 'select') sel = e.control;
  else if (!e.getAttribute('role') && e.querySelectorAll) { const s = e.querySelectorAll('select'); if (s.length === 1) sel = s[0]; }
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();
  if (sel) {
    if (pick >= 0) return sel.options[pick] || null;
    return {kind: 'native', multiple: sel.multiple, options: Array.from(sel.options).map((o, i) => ({index: i, text: clean(o.text), value: o.value, selected: o.selected, disabled: o.disabled}))};
  }
  const role = (e.getAttribute('role') || '').toLowerCase();
  const doc = e.ownerDocument;
  let list = null;
  if (role === 'listbox') list = e;
  if (!list) {
    const ids = ((e.getAttribute('aria-controls') || '') + ' ' + (e.getAttribute('aria-owns') || '')).split(/\s+/).filter(Boolean);
    for (const id of ids) { const l = doc.getElementById(id); if (l) { list = l; break; } }
  }
  if (!list) { const l = e.querySelector('[role=listbox]'); if (l) list = l; }
  if (!list && e.querySelector('[role=option]')) list = e;
  const aria = role === 'combobox' || role === 'listbox' || !!e.getAttribute('aria-haspopup') || !!list;
  const opts = list ? Array.from(list.querySelectorAll('[role=option]')) : [];
  if (pick >= 0) return opts[pick] || null;
  return {kind: aria ? 'aria' : 'none', expanded: e.getAttribute('aria-expanded'), multiple: !!list && list.getAttribute('aria-multiselectable') === 'true',
    options: opts.map((o, i) => ({index: i, text: clean(o.innerText || o.textContent), value: o.getAttribute('data-value') || o.getAttribute('value') || o.id || '', selected: o.getAttribute('aria-selected') === 'true', disabled: o.getAttribute('aria-disabled') === 'true', visible: o.getClientRects().length > 0}))};
}`

type actionsOption struct {
	Index    int    `json:"index"`
	Text     string `json:"text"`
	Value    string `json:"value"`
	Selected bool   `json:"selected"`
	Disabled bool   `json:"disabled"`
	Visible  bool   `json:"visible"`
}

type actionsList struct {
	Kind     string          `json:"kind"`
	Expanded *string         `json:"expanded"`
	Multiple bool            `json:"multiple"`
	Options  []actionsOption `json:"options"`
}

func actionsReadList(ctx context.Context, el *actionsElement) (actionsList, error) {
	var l actionsList
	err := callOn(ctx, el.sess, el.obj, actionsListJS, &l, -1)
	return l, err
}

func actionsToOptions(l actionsList) []events.DropdownOption {
	out := make([]events.DropdownOption, 0, len(l.Options))
	for _, o := range l.Options {
		out = append(out, events.DropdownOption{Index: o.Index, Text: o.Text, Value: o.Value, Selected: o.Selected})
	}
	return out
}

// actionsOpen clicks a collapsed ARIA combobox so its options render.
func (a *Actions) actionsOpen(ctx context.Context, el *actionsElement, l actionsList) (actionsList, bool, error) {
	visible := 0
	for _, o := range l.Options {
		if o.Visible {
			visible++
		}
	}
	if l.Kind != "aria" || (visible > 0 && (l.Expanded == nil || *l.Expanded != "false")) {
		return l, false, nil
	}
	var res events.ClickResult
	if err := a.actionsClickElement(ctx, el, "", &res, &actionsRun{}); err != nil {
		return l, false, fmt.Errorf("watchdogs: opening the dropdown: %w", err)
	}
	l2, err := actionsReadList(ctx, el)
	return l2, true, err
}

// actionsDropdownOptions handles GetDropdownOptions. A collapsed ARIA
// combobox is opened (clicked) to read its options and left open.
func (a *Actions) actionsDropdownOptions(ctx context.Context, s *session.Session, ev events.GetDropdownOptionsEvent) (events.DropdownOptionsResult, error) {
	var res events.DropdownOptionsResult
	el, err := a.actionsResolve(ctx, s, ev.Target)
	if err != nil {
		return res, err
	}
	l, err := actionsReadList(ctx, el)
	if err != nil {
		return res, err
	}
	if l.Kind == "none" {
		return res, fmt.Errorf("watchdogs: %s (%s) is not a dropdown (no <select>, combobox or listbox)", actionsTargetName(ev.Target), el.info.Desc)
	}
	if l, _, err = a.actionsOpen(ctx, el, l); err != nil {
		return res, err
	}
	res.Options = actionsToOptions(l)
	if len(res.Options) == 0 {
		return res, fmt.Errorf("watchdogs: the dropdown %s has no options", el.info.Desc)
	}
	return res, nil
}

// actionsMatch finds the option whose text is text: exact, then
// case-insensitive and trimmed, then by value.
func actionsMatch(opts []actionsOption, text string) int {
	for i, o := range opts {
		if o.Text == text {
			return i
		}
	}
	t := strings.ToLower(strings.Join(strings.Fields(text), " "))
	for i, o := range opts {
		if strings.ToLower(o.Text) == t {
			return i
		}
	}
	for i, o := range opts {
		if o.Value != "" && (o.Value == text || strings.ToLower(strings.TrimSpace(o.Value)) == t) {
			return i
		}
	}
	return -1
}

func actionsNotFound(name, text string, opts []actionsOption) error {
	var names []string
	for _, o := range opts {
		names = append(names, fmt.Sprintf("%q", o.Text))
	}
	if len(names) > 30 {
		names = append(names[:30], fmt.Sprintf("… (%d more)", len(names)-30))
	}
	if len(names) == 0 {
		return fmt.Errorf("watchdogs: option %q not found in %s: it has no options", text, name)
	}
	return fmt.Errorf("watchdogs: option %q not found in %s; available options: %s", text, name, strings.Join(names, ", "))
}

const actionsSelectNativeJS = `function(i){
  const o = this, sel = o.closest('select');
  if (sel.multiple) o.selected = true; else sel.selectedIndex = o.index;
  sel.dispatchEvent(new Event('input', {bubbles: true, composed: true}));
  sel.dispatchEvent(new Event('change', {bubbles: true}));
  return o.selected;
}`

// actionsSelect handles SelectDropdownOption. A native <select> selects the
// option (adding it to a multiple select's selection) and fires input and
// change; an ARIA combobox is opened if needed and the option clicked.
func (a *Actions) actionsSelect(ctx context.Context, s *session.Session, ev events.SelectDropdownOptionEvent) (events.SelectDropdownResult, error) {
	var res events.SelectDropdownResult
	fail := func(err error) (events.SelectDropdownResult, error) {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	el, err := a.actionsResolve(ctx, s, ev.Target)
	if err != nil {
		return fail(err)
	}
	name := actionsTargetName(ev.Target)
	l, err := actionsReadList(ctx, el)
	if err != nil {
		return fail(err)
	}
	if l.Kind == "none" {
		return fail(fmt.Errorf("watchdogs: %s (%s) is not a dropdown (no <select>, combobox or listbox); click its options instead", name, el.info.Desc))
	}
	run := a.actionsBegin(ctx, s, el.sess)
	err = func() error {
		if l.Kind == "native" {
			i, o, opt, err := actionsPickOption(ctx, el, l, ev.Text, name)
			if err != nil {
				return err
			}
			var selected bool
			if err := callOn(ctx, el.sess, opt.obj, actionsSelectNativeJS, &selected, i); err != nil {
				return err
			}
			res.Selected = events.DropdownOption{Index: o.Index, Text: o.Text, Value: o.Value, Selected: selected}
			if l.Multiple {
				run.addDetail(fmt.Sprintf("added %q to the selection", o.Text))
			} else {
				run.addDetail(fmt.Sprintf("selected %q", o.Text))
			}
			return nil
		}
		l, opened, err := a.actionsOpen(ctx, el, l)
		if err != nil {
			return err
		}
		if opened {
			run.addDetail("opened the dropdown")
		}
		_, o, opt, err := actionsPickOption(ctx, el, l, ev.Text, name)
		if err != nil {
			return err
		}
		var cr events.ClickResult
		if err := a.actionsClickElement(ctx, opt, "", &cr, run); err != nil {
			return fmt.Errorf("watchdogs: clicking option %q: %w", o.Text, err)
		}
		var sel *bool
		_ = callOn(ctx, el.sess, opt.obj, `function(){ return this.isConnected ? this.getAttribute('aria-selected') === 'true' : null; }`, &sel)
		res.Selected = events.DropdownOption{Index: o.Index, Text: o.Text, Value: o.Value, Selected: sel == nil || *sel}
		run.addDetail(fmt.Sprintf("clicked option %q", o.Text))
		return nil
	}()
	res.Outcome = run.end(ctx, err)
	if err == nil && res.Outcome.Verdict == events.VerdictNoChange {
		// Choosing an option rarely adds elements; the value did change.
		res.Outcome.Verdict = events.VerdictChanged
	}
	return res, err
}

// actionsFileInputJS finds the file input an element stands for: itself,
// its label's control, one inside it, one it names (for, aria-controls), or
// the only one in a close ancestor (a styled button next to a hidden input).
const actionsFileInputJS = `function(){
  const isF = (x) => x && x.localName === 'input' && (x.type || '').toLowerCase() === 'file';
  if (isF(this)) return this;
  if (this.localName === 'label' && isF(this.control)) return this.control;
  const inner = this.querySelector && this.querySelector('input[type=file]');
  if (inner) return inner;
  const doc = this.ownerDocument;
  for (const a of ['for', 'aria-controls', 'data-for']) {
    const id = this.getAttribute && this.getAttribute(a);
    if (id) { const x = doc.getElementById(id); if (isF(x)) return x; }
  }
  let p = this.parentElement;
  for (let i = 0; p && i < 3; i++, p = p.parentElement) {
    const fs = p.querySelectorAll('input[type=file]');
    if (fs.length === 1) return fs[0];
    if (fs.length > 1) break;
  }
  return null;
}`

// actionsUpload handles UploadFile: the upload policy first, then the files
// must exist, then DOM.setFileInputFiles on the file input the target is or
// stands for.
func (a *Actions) actionsUpload(ctx context.Context, s *session.Session, ev events.UploadFileEvent) (events.UploadResult, error) {
	var res events.UploadResult
	fail := func(err error) (events.UploadResult, error) {
		res.Outcome = actionsFailed(err)
		return res, err
	}
	if len(ev.Paths) == 0 {
		return fail(errors.New("watchdogs: upload needs at least one file path"))
	}
	files := make([]string, 0, len(ev.Paths))
	for _, p := range ev.Paths {
		if err := a.cfg.UploadPolicy.AllowUpload(ctx, p); err != nil {
			return fail(fmt.Errorf("watchdogs: upload of %s refused: %w", p, err))
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return fail(fmt.Errorf("watchdogs: upload: %s: %w", p, err))
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return fail(fmt.Errorf("watchdogs: upload: file %s does not exist", p))
		}
		if !fi.Mode().IsRegular() {
			return fail(fmt.Errorf("watchdogs: upload: %s is not a regular file", p))
		}
		files = append(files, abs)
	}
	el, err := a.actionsResolve(ctx, s, ev.Target)
	if err != nil {
		return fail(err)
	}
	name := actionsTargetName(ev.Target)
	id, ok, err := actionsObjectNode(ctx, el.sess, el.obj, actionsFileInputJS)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(fmt.Errorf("watchdogs: %s (%s) is not a file input and no file input belongs to it", name, el.info.Desc))
	}
	in, err := actionsResolveNode(ctx, el.sess, id, "the file input")
	if err != nil {
		return fail(err)
	}
	var multiple bool
	if err := callOn(ctx, in.sess, in.obj, `function(){ return this.multiple; }`, &multiple); err != nil {
		return fail(err)
	}
	if len(files) > 1 && !multiple {
		return fail(fmt.Errorf("watchdogs: the file input %s takes one file; %d given", in.info.Desc, len(files)))
	}
	run := a.actionsBegin(ctx, s, in.sess)
	err = func() error {
		if _, err := cdpproto.Call(ctx, in.sess, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: files, BackendNodeID: in.backend}); err != nil {
			return fmt.Errorf("watchdogs: upload: %w", err)
		}
		if err := callOn(ctx, in.sess, in.obj, `function(){ return Array.from(this.files || []).map((f) => f.name); }`, &res.Files); err != nil {
			return err
		}
		if len(res.Files) != len(files) {
			return fmt.Errorf("watchdogs: upload: the input holds %d file(s) after setting %d", len(res.Files), len(files))
		}
		run.verdict, run.override = events.VerdictChanged, true
		run.addDetail("selected " + strings.Join(res.Files, ", "))
		return nil
	}()
	res.Outcome = run.end(ctx, err)
	return res, err
}

// actionsPickOption finds the option of list l matching text, refuses a
// disabled one, and resolves its node.
func actionsPickOption(ctx context.Context, el *actionsElement, l actionsList, text, name string) (int, actionsOption, *actionsElement, error) {
	i := actionsMatch(l.Options, text)
	if i < 0 {
		return i, actionsOption{}, nil, actionsNotFound(name, text, l.Options)
	}
	o := l.Options[i]
	if o.Disabled {
		return i, o, nil, fmt.Errorf("watchdogs: option %q of %s is disabled", o.Text, name)
	}
	optID, ok, err := actionsObjectNode(ctx, el.sess, el.obj, actionsListJS, i)
	if err != nil || !ok {
		return i, o, nil, fmt.Errorf("watchdogs: option %q of %s vanished: %v", o.Text, name, err)
	}
	opt, err := actionsResolveNode(ctx, el.sess, optID, "the option")
	return i, o, opt, err
}
