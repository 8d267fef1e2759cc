package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// Defaults of ActionsConfig.
const (
	DefaultActionsTypingDelay       = 10 * time.Millisecond
	DefaultActionsDownloadStartWait = 500 * time.Millisecond
	DefaultActionsNewTabWait        = 5 * time.Second
	DefaultActionsWait              = 3 * time.Second
	DefaultActionsWaitMax           = 10 * time.Second
)

// ActionsConfig configures the actions watchdog. The zero value is usable:
// each zero field means the default documented on it.
type ActionsConfig struct {
	// Logger receives debug logs; default zap.NewNop(). Typed text is never
	// logged.
	Logger *zap.Logger
	// UploadPolicy decides which local files may be uploaded; it is checked
	// before anything touches the page. Default: UploadDirPolicy{} (any
	// existing regular file).
	UploadPolicy UploadPolicy
	// TypingDelay is the pause between the characters SendKeys types when it
	// is given plain text (key by key, so pages see keydown events).
	// Default 10 ms (browser-use's); negative means none.
	TypingDelay time.Duration
	// DownloadStartWait is how long a click on a link that changed nothing
	// waits for a download to begin before reporting no_change. Default
	// 500 ms (browser-use's); negative means do not wait.
	DownloadStartWait time.Duration
	// NewTabWait bounds how long a click that made the browser create a tab
	// waits for the session to register it, so the result can name it.
	// Default 5 s.
	NewTabWait time.Duration
	// WaitDefault is the pause of a WaitEvent with no Duration (default 3 s);
	// WaitMax caps a WaitEvent with no Max (default 10 s).
	WaitDefault, WaitMax time.Duration
}

func (c ActionsConfig) withDefaults() ActionsConfig {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.UploadPolicy == nil {
		c.UploadPolicy = UploadDirPolicy{}
	}
	if c.TypingDelay == 0 {
		c.TypingDelay = DefaultActionsTypingDelay
	}
	if c.DownloadStartWait == 0 {
		c.DownloadStartWait = DefaultActionsDownloadStartWait
	}
	if c.NewTabWait <= 0 {
		c.NewTabWait = DefaultActionsNewTabWait
	}
	if c.WaitDefault <= 0 {
		c.WaitDefault = DefaultActionsWait
	}
	if c.WaitMax <= 0 {
		c.WaitMax = DefaultActionsWaitMax
	}
	return c
}

// UploadPolicy decides whether a local file may be uploaded into a page.
// AllowUpload returns nil to allow, or an error the model will read. It is
// called once per path, before the page is touched, and must be safe for
// concurrent use.
type UploadPolicy interface {
	AllowUpload(ctx context.Context, path string) error
}

// UploadPolicyFunc adapts a function to UploadPolicy.
type UploadPolicyFunc func(ctx context.Context, path string) error

// AllowUpload calls f.
func (f UploadPolicyFunc) AllowUpload(ctx context.Context, path string) error { return f(ctx, path) }

// ErrUploadNotAllowed is wrapped by the errors of UploadDirPolicy.
var ErrUploadNotAllowed = errors.New("watchdogs: upload not allowed")

// UploadDirPolicy is the default upload policy: a path must name an existing
// regular file (not a directory, device or socket) and, when Dir is set, lie
// inside Dir after symbolic links are resolved.
type UploadDirPolicy struct {
	// Dir, when non-empty, is the only directory (with its subdirectories)
	// files may be uploaded from.
	Dir string
}

// AllowUpload implements UploadPolicy.
func (p UploadDirPolicy) AllowUpload(_ context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUploadNotAllowed, path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("%w: file %s does not exist", ErrUploadNotAllowed, path)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%w: file %s does not exist", ErrUploadNotAllowed, path)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrUploadNotAllowed, path)
	}
	if p.Dir != "" {
		dir, err := filepath.Abs(p.Dir)
		if err == nil {
			if d, err2 := filepath.EvalSymlinks(dir); err2 == nil {
				dir = d
			}
		}
		rel, err := filepath.Rel(dir, real)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return fmt.Errorf("%w: %s is outside the upload directory %s", ErrUploadNotAllowed, path, p.Dir)
		}
	}
	return nil
}

// Actions is the default action watchdog: it performs the agent's element
// actions (click, type, scroll, keys, dropdowns, hover, upload, wait) with
// real input events over CDP and reports each one's verdict from the
// session's before/after evidence. Navigation, history and tab events are
// the session's own.
//
// Contracts:
//   - Every action runs on the CDP session that owns its element (a
//     cross-site iframe's element on that iframe's session, at its local
//     coordinates).
//   - A target that is not in the selector map, is gone or is detached is an
//     error wrapping session.ErrElementNotFound, never a success.
//   - A click is a real mouse click at a visible point that a hit test
//     proves reaches the element; only a covered element, one without a box,
//     or a checkbox the mouse did not toggle is clicked with JavaScript, and
//     the result says so (Method "js_fallback", the reason in Detail).
//   - The verdict is refined to dialog, download or new_tab when the action
//     set one off (observed only: dialogs are answered by whoever handles
//     them, such as the popups watchdog; until then a click that opened one
//     blocks).
//   - Typed text never reaches logs or errors; ActualValue is masked for
//     sensitive text and password fields.
//
// An Actions holds no goroutines between events; one value may be attached
// to several sessions.
type Actions struct {
	cfg ActionsConfig
}

// NewActions returns the actions watchdog for cfg (defaults applied).
func NewActions(cfg ActionsConfig) *Actions {
	return &Actions{cfg: cfg.withDefaults()}
}

// Name implements session.Watchdog; it is "actions".
func (a *Actions) Name() string { return "actions" }

// Attach registers the action handlers on the session's bus.
func (a *Actions) Attach(s *session.Session) error {
	b := s.Bus()
	if b == nil {
		return session.ErrNotStarted
	}
	const n = "actions"
	return errors.Join(
		register(b, n, events.ClickElement, withSession(s, a.actionsClick)),
		register(b, n, events.ClickCoordinate, withSession(s, a.actionsClickCoordinate)),
		register(b, n, events.TypeText, withSession(s, a.actionsType)),
		register(b, n, events.Scroll, withSession(s, a.actionsScroll)),
		register(b, n, events.ScrollToText, withSession(s, a.actionsScrollToText)),
		register(b, n, events.SendKeys, withSession(s, a.actionsSendKeys)),
		register(b, n, events.UploadFile, withSession(s, a.actionsUpload)),
		register(b, n, events.GetDropdownOptions, withSession(s, a.actionsDropdownOptions)),
		register(b, n, events.SelectDropdownOption, withSession(s, a.actionsSelect)),
		register(b, n, events.Hover, withSession(s, a.actionsHover)),
		register(b, n, events.Wait, func(ctx context.Context, ev events.WaitEvent) (events.None, error) {
			return events.None{}, a.actionsWait(ctx, ev)
		}),
	)
}

func (a *Actions) actionsWait(ctx context.Context, ev events.WaitEvent) error {
	d, max := ev.Duration, ev.Max
	if d <= 0 {
		d = a.cfg.WaitDefault
	}
	if max <= 0 {
		max = a.cfg.WaitMax
	}
	d = min(d, max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// actionsElement is a resolved, attached element on its own CDP session.
type actionsElement struct {
	sess    *cdp.Session
	backend cdpproto.BackendNodeID
	obj     runtime.RemoteObjectID
	info    actionsInfo
}

// actionsInfo is what one page call learns about an element.
type actionsInfo struct {
	Connected bool   `json:"connected"`
	Tag       string `json:"tag"`
	Type      string `json:"type"`
	Role      string `json:"role"`
	Checked   *bool  `json:"checked"`
	Desc      string `json:"desc"`
	Link      bool   `json:"link"`
	Editable  bool   `json:"editable"`
}

// actionsDescJS describes an element briefly for messages: <tag id=x>.
const actionsDescJS = `function(n){
  if (!n) return '?';
  if (n.nodeType !== 1) n = n.parentElement || n.host;
  if (!n || n.nodeType !== 1) return '?';
  let s = '<' + n.localName;
  if (n.id) s += ' id=' + n.id;
  else if (typeof n.className === 'string' && n.className.trim()) s += ' class=' + n.className.trim().split(/\s+/)[0];
  const nm = n.getAttribute('name'); if (nm) s += ' name=' + nm;
  const r = n.getAttribute('role'); if (r) s += ' role=' + r;
  return s + '>';
}`

const actionsInfoJS = `function(){
  const desc = ` + actionsDescJS + `;
  const e = this;
  const el = e.nodeType === 1;
  const type = el ? (e.getAttribute('type') || '').toLowerCase() : '';
  const tag = el ? e.localName : e.nodeName.toLowerCase();
  return {
    connected: e.isConnected,
    tag, type,
    role: el ? (e.getAttribute('role') || '') : '',
    checked: (tag === 'input' && (type === 'checkbox' || type === 'radio')) || (el && (e.getAttribute('role') === 'checkbox' || e.getAttribute('role') === 'radio' || e.getAttribute('role') === 'switch'))
      ? (tag === 'input' ? e.checked : e.getAttribute('aria-checked') === 'true') : null,
    desc: desc(e),
    link: !!(el && e.closest('a[href]')),
    editable: !!(el && e.isContentEditable),
  };
}`

// actionsGone wraps session.ErrElementNotFound for a node that is no longer
// in the page.
func actionsGone(what string, cause error) error {
	if cause != nil {
		return fmt.Errorf("%w: %s is no longer in the page; request a new browser state (%v)", session.ErrElementNotFound, what, cause)
	}
	return fmt.Errorf("%w: %s is no longer in the page (detached); request a new browser state", session.ErrElementNotFound, what)
}

// actionsResolve resolves an event's target to a live element on the CDP
// session that owns it.
func (a *Actions) actionsResolve(ctx context.Context, s *session.Session, t events.Target) (*actionsElement, error) {
	ref, cs, err := s.Resolve(t)
	if err != nil {
		return nil, err
	}
	return actionsResolveNode(ctx, cs, cdpproto.BackendNodeID(ref.BackendNodeID), actionsTargetName(t))
}

func actionsTargetName(t events.Target) string {
	if t.Element != nil {
		return fmt.Sprintf("node %d", t.Element.BackendNodeID)
	}
	return fmt.Sprintf("element %d", t.Index)
}

// actionsResolveNode resolves a backend node id and reads its info.
func actionsResolveNode(ctx context.Context, cs *cdp.Session, id cdpproto.BackendNodeID, name string) (*actionsElement, error) {
	res, err := cdpproto.Call(ctx, cs, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: actionsObjectGroup})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, actionsGone(name, err)
	}
	if res.Object == nil || res.Object.ObjectID == "" {
		return nil, actionsGone(name, errors.New("no object"))
	}
	el := &actionsElement{sess: cs, backend: id, obj: res.Object.ObjectID}
	if err := callOn(ctx, cs, el.obj, actionsInfoJS, &el.info); err != nil {
		return nil, err
	}
	if !el.info.Connected {
		return nil, actionsGone(name, nil)
	}
	return el, nil
}

// actionsObjectNode returns the backend id of the element a function called
// on obj returns (nil result: ok false).
func actionsObjectNode(ctx context.Context, cs *cdp.Session, obj runtime.RemoteObjectID, decl string, args ...any) (cdpproto.BackendNodeID, bool, error) {
	var cargs []*runtime.CallArgument
	for _, v := range args {
		b, err := jsonv2.Marshal(v)
		if err != nil {
			return 0, false, err
		}
		cargs = append(cargs, &runtime.CallArgument{Value: b})
	}
	res, err := cdpproto.Call(ctx, cs, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: decl,
		ObjectID:            obj,
		Arguments:           cargs,
	})
	if err != nil {
		return 0, false, err
	}
	if res.ExceptionDetails != nil {
		return 0, false, fmt.Errorf("page script failed: %s", exceptionText(res.ExceptionDetails))
	}
	if res.Result == nil || res.Result.ObjectID == "" {
		return 0, false, nil
	}
	d, err := cdpproto.Call(ctx, cs, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		return 0, false, err
	}
	return d.Node.BackendNodeID, true, nil
}

// actionsPoint is a visible point of an element: viewport coordinates for
// Input.dispatchMouseEvent and document coordinates for DOM.getNodeForLocation
// (both in the element's session's local root frame).
type actionsPoint struct {
	X, Y       float64 // viewport CSS px
	DocX, DocY float64 // document CSS px
}

// actionsNoGeometry is returned when an element has no visible box.
var actionsNoGeometry = errors.New("element has no visible box")

// actionsVisiblePoint scrolls the element into view and returns the centre
// of its largest quad clipped to the viewport. The three reads are
// pipelined: the renderer answers them in order.
func actionsVisiblePoint(ctx context.Context, el *actionsElement) (actionsPoint, error) {
	var p actionsPoint
	rScroll := el.sess.Send(ctx, dom.CommandScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: el.backend})
	rQuads := el.sess.Send(ctx, dom.CommandGetContentQuads, dom.GetContentQuadsParams{BackendNodeID: el.backend})
	rMetrics := el.sess.Send(ctx, page.CommandGetLayoutMetrics, nil)
	errScroll := rScroll.Wait(ctx, nil)
	var quads dom.GetContentQuadsResult
	errQuads := rQuads.Wait(ctx, &quads)
	var lm page.GetLayoutMetricsResult
	errMetrics := rMetrics.Wait(ctx, &lm)
	if ctx.Err() != nil {
		return p, ctx.Err()
	}
	if errScroll != nil && actionsIsDetached(errScroll) {
		return p, actionsGone("the element", errScroll)
	}
	if errQuads != nil || len(quads.Quads) == 0 {
		return p, actionsNoGeometry
	}
	vw, vh, sx, sy := 0.0, 0.0, 0.0, 0.0
	if errMetrics == nil && lm.CSSVisualViewport != nil && lm.CSSLayoutViewport != nil {
		vw, vh = lm.CSSVisualViewport.ClientWidth, lm.CSSVisualViewport.ClientHeight
		sx, sy = float64(lm.CSSLayoutViewport.PageX), float64(lm.CSSLayoutViewport.PageY)
	} else {
		// A frame target without Page metrics: ask its window.
		var m struct{ W, H, SX, SY float64 }
		if err := evaluate(ctx, el.sess, `({W: document.documentElement.clientWidth || innerWidth, H: document.documentElement.clientHeight || innerHeight, SX: scrollX, SY: scrollY})`, &m); err != nil {
			return p, err
		}
		vw, vh, sx, sy = m.W, m.H, m.SX, m.SY
	}
	best := -1.0
	for _, q := range quads.Quads {
		if len(q) < 8 {
			continue
		}
		minX, maxX := math.Min(math.Min(q[0], q[2]), math.Min(q[4], q[6])), math.Max(math.Max(q[0], q[2]), math.Max(q[4], q[6]))
		minY, maxY := math.Min(math.Min(q[1], q[3]), math.Min(q[5], q[7])), math.Max(math.Max(q[1], q[3]), math.Max(q[5], q[7]))
		minX, minY = math.Max(minX, 0), math.Max(minY, 0)
		maxX, maxY = math.Min(maxX, vw), math.Min(maxY, vh)
		w, h := maxX-minX, maxY-minY
		if w <= 0.5 || h <= 0.5 {
			continue
		}
		if area := w * h; area > best {
			best = area
			p.X, p.Y = minX+w/2, minY+h/2
		}
	}
	if best < 0 {
		return p, actionsNoGeometry
	}
	p.DocX, p.DocY = p.X+sx, p.Y+sy
	return p, nil
}

func actionsIsDetached(err error) bool {
	var pe *cdp.ProtocolError
	if errors.As(err, &pe) {
		m := strings.ToLower(pe.Message)
		return strings.Contains(m, "detached") || strings.Contains(m, "no node with given id")
	}
	return false
}

// actionsContainsJS reports whether hit is the element or inside it,
// crossing shadow roots (open, closed and user-agent) and same-process
// frames; it also describes hit for messages.
const actionsContainsJS = `function(hit){
  const desc = ` + actionsDescJS + `;
  let n = hit;
  for (let i = 0; n && i < 10000; i++) {
    if (n === this) return {inside: true, desc: desc(hit)};
    if (n.parentNode) n = n.parentNode;
    else if (n.host) n = n.host;
    else if (n.defaultView && n.defaultView.frameElement) n = n.defaultView.frameElement;
    else break;
  }
  return {inside: false, desc: desc(hit)};
}`

// actionsHitTest reports whether a real pointer at p reaches the element,
// and otherwise names what covers it.
func actionsHitTest(ctx context.Context, el *actionsElement, p actionsPoint) (bool, string, error) {
	hit, err := cdpproto.Call(ctx, el.sess, dom.GetNodeForLocation, dom.GetNodeForLocationParams{
		X: int64(math.Round(p.DocX)), Y: int64(math.Round(p.DocY)), IncludeUserAgentShadowDOM: ptr(true),
	})
	if err != nil {
		if ctx.Err() != nil {
			return false, "", err
		}
		return false, "nothing (no node at the point)", nil
	}
	if hit.BackendNodeID == el.backend {
		return true, "", nil
	}
	ho, err := cdpproto.Call(ctx, el.sess, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: hit.BackendNodeID, ObjectGroup: actionsObjectGroup})
	if err != nil || ho.Object == nil {
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		return false, "an unknown node", nil
	}
	res, err := cdpproto.Call(ctx, el.sess, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: actionsContainsJS,
		ObjectID:            el.obj,
		Arguments:           []*runtime.CallArgument{{ObjectID: ho.Object.ObjectID}},
		ReturnByValue:       ptr(true),
	})
	if err != nil {
		return false, "", err
	}
	if res.ExceptionDetails != nil {
		return false, "", fmt.Errorf("page script failed: %s", exceptionText(res.ExceptionDetails))
	}
	var out struct {
		Inside bool   `json:"inside"`
		Desc   string `json:"desc"`
	}
	if res.Result != nil && len(res.Result.Value) > 0 {
		if err := jsonv2.Unmarshal(res.Result.Value, &out); err != nil {
			return false, "", err
		}
	}
	return out.Inside, out.Desc, nil
}

// actionsMouseButton maps the event's button to CDP's.
func actionsMouseButton(b events.MouseButton) (input.MouseButton, int64) {
	switch b {
	case events.ButtonRight:
		return input.MouseButtonRight, 2
	case events.ButtonMiddle:
		return input.MouseButtonMiddle, 4
	default:
		return input.MouseButtonLeft, 1
	}
}

// actionsMouseClick moves to (x, y) and clicks once, on cs.
func actionsMouseClick(ctx context.Context, cs *cdp.Session, x, y float64, b events.MouseButton) error {
	btn, mask := actionsMouseButton(b)
	if _, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y}); err != nil {
		return err
	}
	if _, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: btn, Buttons: mask, ClickCount: 1}); err != nil {
		return err
	}
	_, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: btn, ClickCount: 1})
	return err
}

// actionsWatch observes, during one action, what the action may have set
// off: a JavaScript dialog (answered by whoever handles dialogs; we only
// look), a download, a new tab.
type actionsWatch struct {
	subs []*cdp.Subscription
}

func actionsStartWatch(s *session.Session, sessions ...*cdp.Session) *actionsWatch {
	w := &actionsWatch{}
	seen := map[*cdp.Session]bool{}
	for _, cs := range sessions {
		if cs == nil || seen[cs] {
			continue
		}
		seen[cs] = true
		w.subs = append(w.subs, cs.SubscribeEvents("Page.javascriptDialogOpening", "Page.downloadWillBegin"))
	}
	if c := s.Conn(); c != nil {
		w.subs = append(w.subs, c.Browser().SubscribeEvents("Browser.downloadWillBegin", "Target.targetCreated"))
	}
	return w
}

// actionsSeen is what a watch saw.
type actionsSeen struct {
	dialog     string // "alert: message"
	download   string // guid
	newTargets []string
}

// drain collects what arrived so far without blocking.
func (w *actionsWatch) drain(into *actionsSeen) {
	for _, sub := range w.subs {
		for {
			select {
			case e, ok := <-sub.C():
				if !ok {
					goto next
				}
				switch e.Method {
				case "Page.javascriptDialogOpening":
					var d page.EventJavascriptDialogOpening
					if e.Decode(&d) == nil {
						into.dialog = fmt.Sprintf("%s dialog: %q", d.Type, actionsClip(d.Message, 200))
					}
				case "Page.downloadWillBegin", "Browser.downloadWillBegin":
					var d struct {
						GUID string `json:"guid"`
					}
					if e.Decode(&d) == nil && into.download == "" {
						into.download = d.GUID
					}
				case "Target.targetCreated":
					var d struct {
						TargetInfo struct {
							TargetID string `json:"targetId"`
							Type     string `json:"type"`
						} `json:"targetInfo"`
					}
					if e.Decode(&d) == nil && d.TargetInfo.Type == "page" {
						into.newTargets = append(into.newTargets, d.TargetInfo.TargetID)
					}
				}
			default:
				goto next
			}
		}
	next:
	}
}

func (w *actionsWatch) stop() {
	for _, sub := range w.subs {
		sub.Cancel()
	}
}

func actionsClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// actionsTabSet returns the ids of the session's tabs.
func actionsTabSet(s *session.Session) map[string]bool {
	m := map[string]bool{}
	for _, t := range s.Tabs() {
		m[t.TargetID] = true
	}
	return m
}

// actionsRun is the frame of every page-affecting action: evidence before,
// watching for dialogs/downloads/tabs during, verdict after.
type actionsRun struct {
	a        *Actions
	s        *session.Session
	before   events.Evidence
	tabs     map[string]bool
	watch    *actionsWatch
	mayBeDL  bool // the action clicked a link: wait briefly for a download
	detail   string
	verdict  events.Verdict // override when set and no error
	override bool
	sessions []*cdp.Session // where the action resolved objects
}

func (a *Actions) actionsBegin(ctx context.Context, s *session.Session, sessions ...*cdp.Session) *actionsRun {
	r := &actionsRun{a: a, s: s, tabs: actionsTabSet(s)}
	if ps, err := s.PageSession(""); err == nil {
		sessions = append(sessions, ps)
	}
	r.sessions = sessions
	r.watch = actionsStartWatch(s, sessions...)
	r.before = s.Evidence(ctx)
	return r
}

// end stops watching and computes the outcome.
func (r *actionsRun) end(ctx context.Context, err error) events.ActionOutcome {
	defer r.watch.stop()
	defer r.release(ctx)
	var seen actionsSeen
	r.watch.drain(&seen)
	// A tab the browser created during the action: let the session register
	// it so that the verdict and NewTabs name it.
	if err == nil && len(seen.newTargets) > 0 {
		deadline := time.Now().Add(r.a.cfg.NewTabWait)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			now := actionsTabSet(r.s)
			all := true
			for _, id := range seen.newTargets {
				if !now[id] {
					all = false
				}
			}
			if all {
				break
			}
			actionsSleep(ctx, 20*time.Millisecond)
		}
	}
	o := r.s.Outcome(ctx, r.before, err)
	if err == nil && o.Verdict == events.VerdictNoChange && r.mayBeDL && r.a.cfg.DownloadStartWait > 0 && seen.download == "" {
		deadline := time.Now().Add(r.a.cfg.DownloadStartWait)
		for time.Now().Before(deadline) && ctx.Err() == nil && seen.download == "" {
			actionsSleep(ctx, 25*time.Millisecond)
			r.watch.drain(&seen)
		}
	}
	r.watch.drain(&seen)
	for _, t := range r.s.Tabs() {
		if !r.tabs[t.TargetID] {
			o.NewTabs = append(o.NewTabs, t.TargetID)
		}
	}
	if err != nil {
		return o
	}
	if r.override && (o.Verdict == events.VerdictNoChange || o.Verdict == events.VerdictChanged) {
		o.Verdict = r.verdict
	}
	switch {
	case seen.dialog != "":
		o.Verdict = events.VerdictDialog
		r.addDetail("a JavaScript " + seen.dialog + " opened")
	case seen.download != "":
		o.Verdict, o.Download = events.VerdictDownload, seen.download
		r.addDetail("a download began")
	case len(o.NewTabs) > 0:
		o.Verdict = events.VerdictNewTab
		r.addDetail(fmt.Sprintf("opened tab(s) %s", strings.Join(o.NewTabs, ", ")))
	}
	if r.detail != "" {
		if o.Detail != "" && !strings.Contains(r.detail, o.Detail) {
			o.Detail = r.detail + "; " + o.Detail
		} else {
			o.Detail = r.detail
		}
	}
	return o
}

func (r *actionsRun) addDetail(d string) {
	if r.detail == "" {
		r.detail = d
	} else {
		r.detail += "; " + d
	}
}

func actionsSleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// actionsObjectGroup holds the page objects an action resolves, released
// when the action ends so that a long session on one page does not pile up
// remote objects.
const actionsObjectGroup = "browseragent-actions"

// release frees the action's remote objects on every session it used. The
// replies are not awaited: nothing depends on them.
func (r *actionsRun) release(ctx context.Context) {
	for _, cs := range r.sessions {
		if cs != nil {
			cs.Send(ctx, runtime.CommandReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: actionsObjectGroup})
		}
	}
}
