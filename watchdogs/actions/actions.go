// Package actions is the default action watchdog: it performs the agent's
// element actions — click, type, scroll, keys, dropdowns, hover, upload,
// evaluate, wait — with real input events over CDP, and reports each one's
// verdict from the page evidence read before and after it. A failed action
// returns its result (Verdict failed, with the evidence) together with an
// *events.ActionError that carries the same outcome. Navigation, history
// and tabs are the session's own events; dialogs are answered by whoever
// handles them (the popups watchdog): this one only observes them.
package actions

import (
	"context"
	_ "embed"
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
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/pathcheck"
	"github.com/browseragent/browseragent/session"
)

// Defaults of Config.
const (
	DefaultTypingDelay       = 10 * time.Millisecond
	DefaultDownloadStartWait = 500 * time.Millisecond
	DefaultNewTabWait        = 5 * time.Second
	DefaultWait              = 3 * time.Second
	DefaultWaitMax           = 10 * time.Second
	DefaultTransitionWait    = time.Second
)

// Config configures the actions watchdog. The zero value is usable:
// each zero field means the default documented on it.
type Config struct {
	// Logger receives debug logs; default: the session's logger, named
	// "actions". Typed text is never logged.
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
	// TransitionWait bounds how long an action that succeeded waits for
	// the CSS transitions and finite animations it set off (a menu fading
	// its items in) before its verdict and the next observation, which
	// would otherwise see them at opacity 0. Animations that would run
	// longer are not awaited. Default 1 s; negative means do not wait.
	TransitionWait time.Duration
}

func (c Config) withDefaults() Config {
	if c.UploadPolicy == nil {
		c.UploadPolicy = UploadDirPolicy{}
	}
	if c.TypingDelay == 0 {
		c.TypingDelay = DefaultTypingDelay
	}
	if c.DownloadStartWait == 0 {
		c.DownloadStartWait = DefaultDownloadStartWait
	}
	if c.NewTabWait <= 0 {
		c.NewTabWait = DefaultNewTabWait
	}
	if c.WaitDefault <= 0 {
		c.WaitDefault = DefaultWait
	}
	if c.WaitMax <= 0 {
		c.WaitMax = DefaultWaitMax
	}
	if c.TransitionWait == 0 {
		c.TransitionWait = DefaultTransitionWait
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
var ErrUploadNotAllowed = errors.New("actions: upload not allowed")

// UploadDirPolicy is the default upload policy: a path must name an existing
// regular file (not a directory, device or socket) and, when Dir is set, lie
// inside Dir after symbolic links are resolved, by the system's path rules
// (pathcheck.Within: on Windows case-insensitive, drive letters and UNC
// shares compared, another drive outside).
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
		// By the system's rules: on Windows another drive is outside, and
		// case and separators do not matter.
		if !pathcheck.Within(dir, real) {
			return fmt.Errorf("%w: %s is outside the upload directory %s", ErrUploadNotAllowed, path, p.Dir)
		}
	}
	return nil
}

// Name is the actions watchdog's name and the name of its handlers.
const Name = "actions"

// Watchdog is the default action watchdog: it performs the agent's element
// actions (click, type, scroll, keys, dropdowns, hover, upload, evaluate,
// wait) with
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
//   - A click (and a hover) is real mouse input at a visible point that a
//     hit test proves reaches the element. A covered element is first
//     scrolled to other alignments to get it out from under a sticky or
//     fixed header; an element without a box of its own (display:contents)
//     is clicked at a visible descendant's point; a visually hidden checkbox
//     or radio is clicked through its visible label.
//   - JavaScript clicks only an element that is visible but refuses real
//     mouse input: one still covered after uncovering (a modal, an
//     overlay), or a checkbox or radio the mouse click did not toggle. The
//     result says so (Method "js_fallback", the reason in Detail).
//   - An element a person cannot see (display:none, visibility:hidden, no
//     layout box) is never clicked or hovered: the error wraps
//     ErrNotVisible and no page handler runs.
//   - Checkboxes, radios and labels of one are verified: Checked is the
//     state after the click and the verdict changed when it toggled.
//   - The verdict is refined to dialog, download or new_tab when the action
//     set one off (observed only: dialogs are answered by whoever handles
//     them, such as the popups watchdog; until then a click that opened one
//     blocks).
//   - Typed text never reaches logs or errors; ActualValue is masked for
//     sensitive text and password fields.
//
// A Watchdog holds no goroutines between events; one value may be attached
// to several sessions.
type Watchdog struct {
	cfg Config
}

// New returns the actions watchdog for cfg (defaults applied).
func New(cfg Config) *Watchdog {
	return &Watchdog{cfg: cfg.withDefaults()}
}

// Name implements session.Watchdog; it is "actions".
func (a *Watchdog) Name() string { return Name }

// Attach registers the action handlers on the session's bus.
func (a *Watchdog) Attach(s *session.Session) error {
	if s.Bus() == nil {
		return session.ErrNotStarted
	}
	return errors.Join(
		session.Handle(s, events.ClickElement, Name, bind(a, s, events.ClickElement.Name, a.click, func(r *events.ClickResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.ClickCoordinate, Name, bind(a, s, events.ClickCoordinate.Name, a.clickCoordinate, func(r *events.ClickResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.TypeText, Name, bind(a, s, events.TypeText.Name, a.typeText, func(r *events.TypeResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.Scroll, Name, bind(a, s, events.Scroll.Name, a.scroll, func(r *events.ScrollResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.ScrollToText, Name, bind(a, s, events.ScrollToText.Name, a.scrollToText, func(r *events.ScrollResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.SendKeys, Name, bind(a, s, events.SendKeys.Name, a.sendKeys, func(r *events.SendKeysResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.UploadFile, Name, bind(a, s, events.UploadFile.Name, a.upload, func(r *events.UploadResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.SelectDropdownOption, Name, bind(a, s, events.SelectDropdownOption.Name, a.selectOption, func(r *events.SelectDropdownResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.Hover, Name, bind(a, s, events.Hover.Name, a.hover, func(r *events.HoverResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.Evaluate, Name, bind(a, s, events.Evaluate.Name, a.evaluate, func(r *events.EvaluateResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.Drag, Name, bind(a, s, events.Drag.Name, a.drag, func(r *events.DragResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.ScrollCoordinate, Name, bind(a, s, events.ScrollCoordinate.Name, a.scrollCoordinate, func(r *events.ScrollResult) *events.ActionOutcome { return &r.Outcome })),
		session.Handle(s, events.GetDropdownOptions, Name, func(ctx context.Context, ev events.GetDropdownOptionsEvent) (events.DropdownOptionsResult, error) {
			return a.dropdownOptions(ctx, s, ev)
		}),
		session.Handle(s, events.ReadValue, Name, func(ctx context.Context, ev events.ReadValueEvent) (events.ReadValueResult, error) {
			return a.readValue(ctx, s, ev)
		}),
		session.Handle(s, events.Wait, Name, func(ctx context.Context, ev events.WaitEvent) (events.None, error) {
			return events.None{}, a.wait(ctx, ev)
		}),
	)
}

// bind adapts an action handler that needs the session to the bus's
// shape, makes an outcome that a failed write request made failed an
// error (*events.RequestError, wrapping events.ErrRequestFailed), and
// makes every failure an *events.ActionError carrying the
// outcome that the result holds too: Verdict failed, Detail the error, and
// the page evidence. An action that failed before it touched the page has
// no evidence of its own yet; its Before and After are then the page as it
// is now (one read), so that every failure says where it happened.
func bind[E, R any](a *Watchdog, s *session.Session, kind string, h func(context.Context, *session.Session, E) (R, error), outcome func(*R) *events.ActionOutcome) func(context.Context, E) (R, error) {
	return func(ctx context.Context, ev E) (R, error) {
		r, err := h(ctx, s, ev)
		o := outcome(&r)
		// A write request the action sent that failed makes it fail,
		// whatever the page shows (Session.Outcome decided the verdict).
		err = session.RequestError(*o, err)
		if err == nil {
			return r, nil
		}
		o.Verdict = events.VerdictFailed
		if o.Detail == "" {
			o.Detail = err.Error()
		}
		if o.Before.URL == "" && o.After.URL == "" {
			// The handler's context may be the reason it failed (timeout):
			// read the evidence on a short one of its own.
			ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), evidenceTimeout)
			o.Before = s.Evidence(ectx)
			cancel()
			o.After = o.Before
		}
		var ae *events.ActionError
		if errors.As(err, &ae) {
			return r, err
		}
		return r, &events.ActionError{Action: kind, Outcome: *o, Err: err}
	}
}

// evidenceTimeout bounds the evidence read for an action that failed.
const evidenceTimeout = 3 * time.Second

// logger is the configured logger, else the session's (nil s: none).
func (a *Watchdog) logger(s *session.Session) *zap.Logger {
	switch {
	case a.cfg.Logger != nil:
		return a.cfg.Logger
	case s != nil:
		return s.Logger().Named(Name)
	}
	return zap.NewNop()
}

func (a *Watchdog) wait(ctx context.Context, ev events.WaitEvent) error {
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

// element is a resolved, attached element on its own CDP session.
type element struct {
	sess    *cdp.Session
	backend cdpproto.BackendNodeID
	obj     runtime.RemoteObjectID
	info    elementInfo
}

// elementInfo is what one page call learns about an element.
type elementInfo struct {
	Connected bool   `json:"connected"`
	Tag       string `json:"tag"`
	Type      string `json:"type"`
	Role      string `json:"role"`
	Checked   *bool  `json:"checked"` // of a label: its checkbox or radio control's
	Control   string `json:"control"` // of a label: its control's type, checkbox or radio
	// HiddenControl: a checkbox or radio input a person cannot see
	// (display:none, opacity 0, 1px, clipped) but whose label they can.
	HiddenControl bool   `json:"hiddenControl"`
	Desc          string `json:"desc"`
	Link          bool   `json:"link"`
	Editable      bool   `json:"editable"`
}

// descJS describes an element briefly for messages: <tag id=x>.
//
//go:embed js/desc.js
var descJS string

// withDescribe puts desc.js where a script says DESCRIBE, so that the
// scripts that name elements in messages share one description function.
func withDescribe(src string) string {
	return strings.ReplaceAll(src, "DESCRIBE", strings.TrimSpace(descJS))
}

// infoJS reads what an action needs to know about an element.
//
//go:embed js/info.js
var infoJSSrc string

var infoJS = strings.ReplaceAll(withDescribe(infoJSSrc), "VISIBLE_LABEL", strings.TrimSpace(visibleLabelJSSrc))

// gone wraps session.ErrElementNotFound for a node that is no longer
// in the page.
func gone(what string, cause error) error {
	if cause != nil {
		return fmt.Errorf("%w: %s is no longer in the page; request a new browser state (%v)", session.ErrElementNotFound, what, cause)
	}
	return fmt.Errorf("%w: %s is no longer in the page (detached); request a new browser state", session.ErrElementNotFound, what)
}

// resolve resolves an event's target to a live element on the CDP
// session that owns it.
func (a *Watchdog) resolve(ctx context.Context, s *session.Session, t events.Target) (*element, error) {
	defer session.Phase(ctx, "resolve", time.Now())
	ref, cs, err := s.Resolve(t)
	if err != nil {
		return nil, err
	}
	return resolveNode(ctx, cs, cdpproto.BackendNodeID(ref.BackendNodeID), targetName(t))
}

func targetName(t events.Target) string {
	if t.Element != nil {
		return fmt.Sprintf("node %d", t.Element.BackendNodeID)
	}
	return fmt.Sprintf("element %d", t.Index)
}

// resolveNode resolves a backend node id and reads its info.
func resolveNode(ctx context.Context, cs *cdp.Session, id cdpproto.BackendNodeID, name string) (*element, error) {
	res, err := cdpproto.Call(ctx, cs, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: objectGroup})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, gone(name, err)
	}
	if res.Object == nil || res.Object.ObjectID == "" {
		return nil, gone(name, errors.New("no object"))
	}
	el := &element{sess: cs, backend: id, obj: res.Object.ObjectID}
	if err := pagejs.CallOn(ctx, cs, el.obj, infoJS, &el.info); err != nil {
		return nil, err
	}
	if !el.info.Connected {
		return nil, gone(name, nil)
	}
	return el, nil
}

// objectNode returns the backend id of the element a function called
// on obj returns (nil result: ok false).
func objectNode(ctx context.Context, cs *cdp.Session, obj runtime.RemoteObjectID, decl string, args ...any) (cdpproto.BackendNodeID, bool, error) {
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
		return 0, false, fmt.Errorf("page script failed: %s", pagejs.ExceptionText(res.ExceptionDetails))
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

// point is a visible point of an element: viewport coordinates for
// Input.dispatchMouseEvent and document coordinates for DOM.getNodeForLocation
// (both in the element's session's local root frame).
type point struct {
	X, Y       float64 // viewport CSS px
	DocX, DocY float64 // document CSS px
}

// errNoGeometry is returned when an element has no visible box.
var errNoGeometry = errors.New("element has no visible box")

// visiblePoint scrolls the element into view and returns the centre
// of its largest quad clipped to the viewport. The three reads are
// pipelined: the renderer answers them in order.
func visiblePoint(ctx context.Context, el *element) (point, error) {
	var p point
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
	if errScroll != nil && isDetached(errScroll) {
		return p, gone("the element", errScroll)
	}
	if errQuads != nil || len(quads.Quads) == 0 {
		return p, errNoGeometry
	}
	vw, vh, sx, sy := 0.0, 0.0, 0.0, 0.0
	if errMetrics == nil && lm.CSSVisualViewport != nil && lm.CSSLayoutViewport != nil {
		vw, vh = lm.CSSVisualViewport.ClientWidth, lm.CSSVisualViewport.ClientHeight
		sx, sy = float64(lm.CSSLayoutViewport.PageX), float64(lm.CSSLayoutViewport.PageY)
	} else {
		// A frame target without Page metrics: ask its window.
		var m struct{ W, H, SX, SY float64 }
		if err := pagejs.Evaluate(ctx, el.sess, `({W: document.documentElement.clientWidth || innerWidth, H: document.documentElement.clientHeight || innerHeight, SX: scrollX, SY: scrollY})`, &m); err != nil {
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
		return p, errNoGeometry
	}
	p.DocX, p.DocY = p.X+sx, p.Y+sy
	return p, nil
}

// pageLeft reports an error of a call on an element of a document that
// is no longer there: the page navigated, or the node was detached.
func pageLeft(err error) bool {
	var pe *cdp.ProtocolError
	if errors.As(err, &pe) {
		m := strings.ToLower(pe.Message)
		if strings.Contains(m, "inspected target navigated") || strings.Contains(m, "execution context was destroyed") ||
			strings.Contains(m, "cannot find context with specified id") {
			return true
		}
	}
	return isDetached(err)
}

func isDetached(err error) bool {
	var pe *cdp.ProtocolError
	if errors.As(err, &pe) {
		m := strings.ToLower(pe.Message)
		return strings.Contains(m, "detached") || strings.Contains(m, "no node with given id")
	}
	return false
}

// containsJS reports whether hit is the element or inside it,
// crossing shadow roots (open, closed and user-agent) and same-process
// frames; it also describes hit for messages.
//
//go:embed js/contains.js
var containsJSSrc string

var containsJS = withDescribe(containsJSSrc)

// hitTest reports whether a real pointer at p reaches the element,
// and otherwise names what covers it.
func hitTest(ctx context.Context, el *element, p point) (bool, string, error) {
	hit, err := cdpproto.Call(ctx, el.sess, dom.GetNodeForLocation, dom.GetNodeForLocationParams{
		X: int64(math.Round(p.DocX)), Y: int64(math.Round(p.DocY)), IncludeUserAgentShadowDOM: pagejs.Ptr(true),
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
	ho, err := cdpproto.Call(ctx, el.sess, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: hit.BackendNodeID, ObjectGroup: objectGroup})
	if err != nil || ho.Object == nil {
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		return false, "an unknown node", nil
	}
	res, err := cdpproto.Call(ctx, el.sess, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: containsJS,
		ObjectID:            el.obj,
		Arguments:           []*runtime.CallArgument{{ObjectID: ho.Object.ObjectID}},
		ReturnByValue:       pagejs.Ptr(true),
	})
	if err != nil {
		return false, "", err
	}
	if res.ExceptionDetails != nil {
		return false, "", fmt.Errorf("page script failed: %s", pagejs.ExceptionText(res.ExceptionDetails))
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

// mouseButton maps the event's button to CDP's.
func mouseButton(b events.MouseButton) (input.MouseButton, int64) {
	switch b {
	case events.ButtonRight:
		return input.MouseButtonRight, 2
	case events.ButtonMiddle:
		return input.MouseButtonMiddle, 4
	default:
		return input.MouseButtonLeft, 1
	}
}

// mouseClick moves to (x, y) and clicks once, on cs.
func mouseClick(ctx context.Context, cs *cdp.Session, x, y float64, b events.MouseButton) error {
	btn, mask := mouseButton(b)
	if _, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y}); err != nil {
		return err
	}
	if _, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: btn, Buttons: mask, ClickCount: 1}); err != nil {
		return err
	}
	_, err := cdpproto.Call(ctx, cs, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: btn, ClickCount: 1})
	return err
}

// watch observes, during one action, what the action may have set
// off: a JavaScript dialog (answered by whoever handles dialogs; we only
// look), a download, a new tab.
type watch struct {
	subs []*cdp.Subscription
	s    *session.Session
	// bctx is the session's own browser context (Profile.IsolatedContext),
	// "" for the default one. Browser.downloadWillBegin and
	// Target.targetCreated reach every client of the browser: with
	// several sessions on one browser, the others' are not this action's.
	bctx string
}

func startWatch(s *session.Session, sessions ...*cdp.Session) *watch {
	w := &watch{s: s, bctx: s.BrowserContextID()}
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

// seenDuring is what a watch saw.
type seenDuring struct {
	dialog     string // "alert: message"
	download   string // guid
	newTargets []string
}

// drain collects what arrived so far without blocking (but for telling,
// in a context of the session's own, whose frame a download began in).
func (w *watch) drain(ctx context.Context, into *seenDuring) {
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
						into.dialog = fmt.Sprintf("%s dialog: %q", d.Type, clip(d.Message, 200))
					}
				case "Page.downloadWillBegin", "Browser.downloadWillBegin":
					var d struct {
						GUID    string `json:"guid"`
						FrameID string `json:"frameId"`
					}
					if e.Decode(&d) == nil && into.download == "" && w.ours(ctx, e.Method, d.FrameID) {
						into.download = d.GUID
					}
				case "Target.targetCreated":
					var d struct {
						TargetInfo struct {
							TargetID  string `json:"targetId"`
							Type      string `json:"type"`
							ContextID string `json:"browserContextId"`
						} `json:"targetInfo"`
					}
					if e.Decode(&d) == nil && d.TargetInfo.Type == "page" && (w.bctx == "" || d.TargetInfo.ContextID == w.bctx) {
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

// ours reports whether a download event is the session's: a page
// session's own always; a browser-wide one, in a context of the session's
// own, when it began in one of the session's frames.
func (w *watch) ours(ctx context.Context, method, frame string) bool {
	if w.bctx == "" || method == "Page.downloadWillBegin" {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return w.s.HasFrame(ctx, frame)
}

func (w *watch) stop() {
	for _, sub := range w.subs {
		sub.Cancel()
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// tabSet returns the ids of the session's own tabs (foreign tabs of a
// connected browser are not listed by Session.Tabs).
func tabSet(s *session.Session) map[string]bool {
	m := map[string]bool{}
	for _, t := range s.Tabs() {
		m[t.TargetID] = true
	}
	return m
}

// actionRun is the frame of every page-affecting action: evidence before,
// watching for dialogs/downloads/tabs during, verdict after.
type actionRun struct {
	a        *Watchdog
	s        *session.Session
	before   events.Evidence
	tabs     map[string]bool
	watch    *watch
	mayBeDL  bool // the action clicked a link: wait briefly for a download
	detail   string
	verdict  events.Verdict // override when set and no error
	override bool
	sessions []*cdp.Session // where the action resolved objects
	acting   time.Time      // when the evidence before was read
}

func (a *Watchdog) begin(ctx context.Context, s *session.Session, sessions ...*cdp.Session) *actionRun {
	t0 := time.Now()
	err := s.Front(ctx)
	session.Phase(ctx, "front", t0)
	if err != nil {
		// The action still runs; late input is slow, not wrong.
		a.logger(s).Debug("bringing the tab to the front", zap.Error(err))
	}
	r := &actionRun{a: a, s: s, tabs: tabSet(s)}
	if ps, err := s.PageSession(""); err == nil {
		sessions = append(sessions, ps)
	}
	r.sessions = sessions
	r.watch = startWatch(s, sessions...)
	r.before = s.Evidence(ctx)
	r.acting = time.Now()
	return r
}

// end stops watching and computes the outcome.
func (r *actionRun) end(ctx context.Context, err error) (o events.ActionOutcome) {
	session.Phase(ctx, "act", r.acting)
	defer r.watch.stop()
	defer r.release(ctx)
	var seen seenDuring
	r.watch.drain(ctx, &seen)
	// A tab the browser created during the action: let the session attach
	// it, which decides whether it is the session's (one of its tabs
	// opened it), so that the verdict and NewTabs name it. A tab the user
	// or another session opened meanwhile attaches as foreign: the session
	// does not list it, and it is not this action's.
	if err == nil && len(seen.newTargets) > 0 {
		t0 := time.Now()
		deadline := time.Now().Add(r.a.cfg.NewTabWait)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			all := true
			for _, id := range seen.newTargets {
				if _, err := r.s.PageSession(id); err != nil {
					all = false
				}
			}
			if all {
				break
			}
			sleep(ctx, 20*time.Millisecond)
		}
		session.Phase(ctx, "newtab", t0)
	}
	if err == nil {
		r.awaitTransitions(ctx)
	}
	o = r.s.Outcome(ctx, r.before, err)
	if err == nil && o.Verdict == events.VerdictNoChange && r.mayBeDL && r.a.cfg.DownloadStartWait > 0 && seen.download == "" {
		t0 := time.Now()
		deadline := time.Now().Add(r.a.cfg.DownloadStartWait)
		for time.Now().Before(deadline) && ctx.Err() == nil && seen.download == "" {
			sleep(ctx, 25*time.Millisecond)
			r.watch.drain(ctx, &seen)
		}
		session.Phase(ctx, "download", t0)
	}
	r.watch.drain(ctx, &seen)
	for _, t := range r.s.Tabs() {
		if !r.tabs[t.TargetID] {
			o.NewTabs = append(o.NewTabs, t.TargetID)
		}
	}
	if err != nil {
		return o
	}
	// Failed with no error of the action's own: a write request failed.
	// The dialog, download or tab it set off are named, the verdict stays.
	requestFailed := o.Verdict == events.VerdictFailed
	defer func() {
		if requestFailed {
			o.Verdict = events.VerdictFailed
		}
	}()
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

// transitionsJS awaits the animations an action set off; see
// js/transitions.js.
//
//go:embed js/transitions.js
var transitionsJS string

// awaitTransitions waits, at most Config.TransitionWait, for the CSS
// transitions and finite animations started since the action began in
// each document it touched. A page that does not answer in time is not
// waited for further: the verdict is read regardless.
func (r *actionRun) awaitTransitions(ctx context.Context) {
	bound := r.a.cfg.TransitionWait
	if bound <= 0 {
		return
	}
	t0 := time.Now()
	defer session.Phase(ctx, "transitions", t0)
	// The evidence before was read just before acting; a small margin
	// covers the clock of the page against ours.
	since := time.Since(r.acting) + 50*time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, bound+500*time.Millisecond)
	defer cancel()
	expr := fmt.Sprintf("(%s)(%d, %d)", strings.TrimSpace(transitionsJS), since.Milliseconds(), bound.Milliseconds())
	seen := map[*cdp.Session]bool{}
	for _, cs := range r.sessions {
		if cs == nil || seen[cs] {
			continue
		}
		seen[cs] = true
		if err := pagejs.Evaluate(ctx, cs, expr, nil); err != nil {
			r.a.logger(r.s).Debug("awaiting transitions", zap.Error(err))
		}
	}
}

func (r *actionRun) addDetail(d string) {
	if r.detail == "" {
		r.detail = d
	} else {
		r.detail += "; " + d
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// objectGroup holds the page objects an action resolves, released
// when the action ends so that a long session on one page does not pile up
// remote objects.
const objectGroup = "browseragent-actions"

// release frees the action's remote objects on every session it used. The
// replies are not awaited: nothing depends on them.
func (r *actionRun) release(ctx context.Context) {
	for _, cs := range r.sessions {
		if cs != nil {
			cs.Send(ctx, runtime.CommandReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup})
		}
	}
}
