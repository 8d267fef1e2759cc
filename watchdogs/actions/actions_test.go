package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// harness is one test's running session on a fixture page.
type harness struct {
	t   testing.TB
	ctx context.Context
	s   *session.Session
	env *testbrowser.Env
}

func start(t testing.TB, path string, cfg Config) *harness {
	t.Helper()
	env := testbrowser.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew}, session.WithWatchdogs(New(cfg)))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("session start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("session stop: %v", err)
		}
	})
	at := &harness{t: t, ctx: ctx, s: s, env: env}
	at.navigate(path)
	return at
}

func (at *harness) navigate(path string) {
	at.t.Helper()
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: at.env.URL(path)}); err != nil {
		at.t.Fatalf("navigate %s: %v", path, err)
	}
}

func (at *harness) page() *cdp.Session {
	at.t.Helper()
	ps, err := at.s.PageSession("")
	if err != nil {
		at.t.Fatal(err)
	}
	return ps
}

// node returns a Target naming the element selector finds in sess.
func (at *harness) node(sess *cdp.Session, selector string) events.Target {
	at.t.Helper()
	res, err := cdpproto.Call(at.ctx, sess, runtime.Evaluate, runtime.EvaluateParams{Expression: fmt.Sprintf("document.querySelector(%q)", selector)})
	if err != nil || res.Result == nil || res.Result.ObjectID == "" {
		at.t.Fatalf("querySelector(%s): %v", selector, err)
	}
	d, err := cdpproto.Call(at.ctx, sess, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		at.t.Fatalf("describeNode(%s): %v", selector, err)
	}
	return events.Target{Element: &events.ElementRef{BackendNodeID: int64(d.Node.BackendNodeID), TargetID: string(sess.TargetID()), SessionID: string(sess.ID())}}
}

func (at *harness) el(selector string) events.Target { return at.node(at.page(), selector) }

// nodeExpr returns a Target naming the element expr evaluates to in sess.
func (at *harness) nodeExpr(sess *cdp.Session, expr string) events.Target {
	at.t.Helper()
	res, err := cdpproto.Call(at.ctx, sess, runtime.Evaluate, runtime.EvaluateParams{Expression: expr})
	if err != nil || res.Result == nil || res.Result.ObjectID == "" {
		at.t.Fatalf("evaluate %s: %v", expr, err)
	}
	d, err := cdpproto.Call(at.ctx, sess, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: res.Result.ObjectID})
	if err != nil {
		at.t.Fatalf("describeNode(%s): %v", expr, err)
	}
	return events.Target{Element: &events.ElementRef{BackendNodeID: int64(d.Node.BackendNodeID), TargetID: string(sess.TargetID()), SessionID: string(sess.ID())}}
}

// eval evaluates expr in sess and decodes its value into out.
func (at *harness) eval(sess *cdp.Session, expr string, out any) {
	at.t.Helper()
	if err := pagejs.Evaluate(at.ctx, sess, expr, out); err != nil {
		at.t.Fatalf("evaluate %s: %v", expr, err)
	}
}

func (at *harness) str(expr string) string {
	at.t.Helper()
	var s string
	at.eval(at.page(), expr, &s)
	return s
}

// frame returns the session of the cross-site iframe whose URL contains
// part, waiting for it to attach and load.
func (at *harness) frame(part string) *cdp.Session {
	at.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, f := range at.s.FrameTargets(at.s.FocusedTab()) {
			var ready bool
			if err := pagejs.Evaluate(at.ctx, f.Session, `document.readyState === 'complete' && location.href.includes(`+fmt.Sprintf("%q", part)+`)`, &ready); err == nil && ready {
				return f.Session
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	at.t.Fatalf("no cross-site frame %s attached", part)
	return nil
}

func TestActionsClickButton(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#btn")})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Method != "mouse" {
		t.Fatalf("method = %q (%s), want mouse", res.Method, res.Outcome.Detail)
	}
	var clicks []struct {
		Trusted bool    `json:"trusted"`
		X       float64 `json:"x"`
	}
	at.eval(at.page(), "window.clicks.btn || []", &clicks)
	if len(clicks) != 1 || !clicks[0].Trusted {
		t.Fatalf("page saw clicks %+v, want one trusted click", clicks)
	}
	if res.X < 20 || res.X > 140 || res.Y < 20 || res.Y > 60 {
		t.Fatalf("clicked at (%v, %v), outside the button", res.X, res.Y)
	}
	if res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("verdict = %s (%s), want changed (the page logs the click)", res.Outcome.Verdict, res.Outcome.Detail)
	}
}

func TestActionsClickFarBelowAndShadow(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#far")})
	if err != nil || res.Method != "mouse" {
		t.Fatalf("click far: %v, method %q (%s)", err, res.Method, res.Outcome.Detail)
	}
	var n int
	at.eval(at.page(), "(window.clicks.far || []).filter(c => c.trusted).length", &n)
	if n != 1 {
		t.Fatalf("far button saw %d trusted clicks, want 1", n)
	}
	// The host of a shadow tree: the hit node is the button inside it.
	res, err = bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#host")})
	if err != nil || res.Method != "mouse" {
		t.Fatalf("click shadow host: %v, method %q (%s)", err, res.Method, res.Outcome.Detail)
	}
	var trusted bool
	at.eval(at.page(), "window.shadowClicked === true", &trusted)
	if !trusted {
		t.Fatal("the shadow button did not get a trusted click")
	}
}

func TestActionsClickCovered(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#covered")})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Method != "js_fallback" {
		t.Fatalf("method = %q, want js_fallback", res.Method)
	}
	if !strings.Contains(res.Outcome.Detail, "covered by <div id=overlay>") {
		t.Fatalf("detail = %q, want it to name the overlay", res.Outcome.Detail)
	}
	var n, over int
	at.eval(at.page(), "(window.clicks.covered || []).length", &n)
	at.eval(at.page(), "(window.clicks.overlay || []).length", &over)
	if n != 1 || over != 0 {
		t.Fatalf("covered button clicks %d, overlay clicks %d; want 1 and 0", n, over)
	}
}

func TestActionsClickNewTab(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	before := len(at.s.Tabs())
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#newtab")})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictNewTab {
		t.Fatalf("verdict = %s (%s), want new_tab", res.Outcome.Verdict, res.Outcome.Detail)
	}
	if len(res.Outcome.NewTabs) != 1 || len(at.s.Tabs()) != before+1 {
		t.Fatalf("NewTabs = %v (tabs %d → %d), want one new tab", res.Outcome.NewTabs, before, len(at.s.Tabs()))
	}
	found := false
	for _, tab := range at.s.Tabs() {
		if tab.TargetID == res.Outcome.NewTabs[0] {
			found = true
		}
	}
	if !found {
		t.Fatalf("NewTabs[0] %s is not one of the session's tabs", res.Outcome.NewTabs[0])
	}
}

func TestActionsClickCheckboxRadio(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	for i, want := range []bool{true, false} {
		res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#cb")})
		if err != nil {
			t.Fatalf("click %d: %v", i, err)
		}
		if res.Checked == nil || *res.Checked != want {
			t.Fatalf("click %d: Checked = %v, want %v", i, res.Checked, want)
		}
		if res.Outcome.Verdict != events.VerdictChanged {
			t.Fatalf("click %d: verdict %q, want changed (the checked state toggled)", i, res.Outcome.Verdict)
		}
		var dom bool
		at.eval(at.page(), "document.getElementById('cb').checked", &dom)
		if dom != want {
			t.Fatalf("click %d: page checkbox = %v, want %v", i, dom, want)
		}
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#r2")})
	if err != nil || res.Checked == nil || !*res.Checked {
		t.Fatalf("radio: %v, Checked %v", err, res.Checked)
	}
	var r1 bool
	at.eval(at.page(), "document.getElementById('r1').checked", &r1)
	if r1 {
		t.Fatal("radio r1 still checked after clicking r2")
	}
	if res.Method != "mouse" {
		t.Fatalf("radio method %q, want mouse", res.Method)
	}
}

func TestActionsClickStaleAndDetached(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	btn := at.el("#btn")
	at.s.SetSelectorMap(&session.SelectorMap{TargetID: at.s.FocusedTab(), Elements: map[int]events.ElementInfo{
		1: {Index: 1, ElementRef: *btn.Element},
	}})
	_, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: 7}})
	var nf *session.ElementNotFoundError
	if !errors.As(err, &nf) || nf.Index != 7 {
		t.Fatalf("stale index: err = %v, want *session.ElementNotFoundError for 7", err)
	}
	// By index, through the selector map, it works.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Index: 1}}); err != nil {
		t.Fatalf("click index 1: %v", err)
	}
	// Removed from the DOM after it was resolved: an error, not a success,
	// and the result that comes with the error through the bus says failed,
	// with the page evidence.
	gone := at.el("#gone")
	at.eval(at.page(), "document.getElementById('gone').remove(), true", nil)
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: gone})
	if !errors.Is(err, session.ErrElementNotFound) {
		t.Fatalf("detached element: err = %v, want ErrElementNotFound", err)
	}
	assertFailedWithEvidence(t, "detached element", res.Outcome, err, at.env.URL("/actions-click.html"))
	// A node id that never existed.
	_, err = bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: events.Target{Element: &events.ElementRef{BackendNodeID: 987654, TargetID: at.s.FocusedTab()}}})
	if !errors.Is(err, session.ErrElementNotFound) {
		t.Fatalf("unknown node: err = %v, want ErrElementNotFound", err)
	}
}

func TestActionsClickInertSelectFile(t *testing.T) {
	at := start(t, "/actions-click.html", Config{DownloadStartWait: -1})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#inert")})
	if err != nil {
		t.Fatalf("click inert: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictNoChange || res.Method != "mouse" {
		t.Fatalf("inert text: verdict %s method %s, want no_change by mouse", res.Outcome.Verdict, res.Method)
	}
	// display:none: no person could click it, so nothing is clicked.
	res, err = bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#hidden")})
	if !errors.Is(err, ErrNotVisible) || res.Method != "" || !strings.Contains(res.Outcome.Detail, "no visible box") {
		t.Fatalf("hidden button: %v, method %q, detail %q; want ErrNotVisible", err, res.Method, res.Outcome.Detail)
	}
	var hiddenClicks int
	at.eval(at.page(), "(window.clicks.hidden || []).length", &hiddenClicks)
	if hiddenClicks != 0 {
		t.Fatalf("the hidden button's handler ran %d times, want 0", hiddenClicks)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#sel")})
	if err == nil || !strings.Contains(err.Error(), "select_dropdown") {
		t.Fatalf("click <select>: %v, want an error naming select_dropdown", err)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#file")})
	if err == nil || !strings.Contains(err.Error(), "upload_file") {
		t.Fatalf("click file input: %v, want an error naming upload_file", err)
	}
}

func TestActionsClickDialog(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	ps := at.page()
	// Stand in for the popups watchdog: answer the dialog from outside the bus.
	sub := ps.SubscribeEvents("Page.javascriptDialogOpening")
	done := make(chan error, 1)
	go func() {
		for range sub.C() {
			_, err := cdpproto.Call(at.ctx, ps, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			done <- err
			return
		}
		done <- errors.New("subscription closed")
	}()
	defer sub.Cancel()
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#alert")})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("answer dialog: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictDialog || !strings.Contains(res.Outcome.Detail, "hello from the page") {
		t.Fatalf("verdict %s (%s), want dialog naming the message", res.Outcome.Verdict, res.Outcome.Detail)
	}
}

func TestActionsClickCrossSiteIframe(t *testing.T) {
	at := start(t, "/actions-iframe.html", Config{})
	fs := at.frame("actions-frame.html")
	if fs.ID() == at.page().ID() {
		t.Fatal("the frame shares the page's session: not an OOPIF")
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.node(fs, "#fbtn")})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Method != "mouse" {
		t.Fatalf("method %q (%s), want mouse", res.Method, res.Outcome.Detail)
	}
	var out struct {
		Clicked int  `json:"clicked"`
		Trusted bool `json:"trusted"`
	}
	at.eval(fs, "({clicked: window.clicked || 0, trusted: !!window.trusted})", &out)
	if out.Clicked != 1 || !out.Trusted {
		t.Fatalf("frame button saw %+v, want one trusted click", out)
	}
	// Typing into the frame's input.
	tr, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.node(fs, "#finput"), Text: "über frame", Clear: true})
	if err != nil {
		t.Fatalf("type: %v", err)
	}
	var v string
	at.eval(fs, "document.getElementById('finput').value", &v)
	if v != "über frame" || tr.ActualValue != "über frame" {
		t.Fatalf("frame input = %q (ActualValue %q)", v, tr.ActualValue)
	}
	// Keys and focused typing reach the focused input inside the frame.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SendKeys, events.SendKeysEvent{Keys: "Backspace"}); err != nil {
		t.Fatalf("send keys: %v", err)
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SendKeys, events.SendKeysEvent{Keys: "ok!"}); err != nil {
		t.Fatalf("send keys: %v", err)
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Text: "+"}); err != nil {
		t.Fatalf("type into focus: %v", err)
	}
	at.eval(fs, "document.getElementById('finput').value", &v)
	if v != "über framok!+" { // Backspace ate the "e"
		t.Fatalf("frame input after keys = %q", v)
	}
}

func TestActionsType(t *testing.T) {
	at := start(t, "/actions-type.html", Config{})
	typ := func(sel, text string, clear bool) events.TypeResult {
		t.Helper()
		res, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el(sel), Text: text, Clear: clear})
		if err != nil {
			t.Fatalf("type into %s: %v", sel, err)
		}
		return res
	}
	val := func(sel string) string {
		return at.str(fmt.Sprintf("document.querySelector(%q).value", sel))
	}
	t.Run("text clear", func(t *testing.T) {
		res := typ("#text", "héllo ✓ 世界", true)
		if got := val("#text"); got != "héllo ✓ 世界" || res.ActualValue != got {
			t.Fatalf("value %q, ActualValue %q", got, res.ActualValue)
		}
		if res.Outcome.Verdict != events.VerdictChanged {
			t.Fatalf("verdict %q, want changed (the value changed)", res.Outcome.Verdict)
		}
		if again := typ("#text", "héllo ✓ 世界", true); again.Outcome.Verdict != events.VerdictNoChange {
			t.Fatalf("retyping the same value: verdict %q, want no_change", again.Outcome.Verdict)
		}
	})
	t.Run("text append", func(t *testing.T) {
		typ("#text", "!", false)
		if got := val("#text"); got != "héllo ✓ 世界!" {
			t.Fatalf("value %q, want appended", got)
		}
	})
	t.Run("textarea", func(t *testing.T) {
		typ("#area", "line one\nline two", true)
		if got := val("#area"); got != "line one\nline two" {
			t.Fatalf("value %q", got)
		}
	})
	t.Run("react controlled", func(t *testing.T) {
		res := typ("#react", "new react", true)
		var state string
		at.eval(at.page(), "window.reactState", &state)
		if state != "new react" || val("#react") != "new react" || res.ActualValue != "new react" {
			t.Fatalf("react state %q, DOM %q, ActualValue %q; want all \"new react\"", state, val("#react"), res.ActualValue)
		}
	})
	t.Run("special inputs", func(t *testing.T) {
		for _, c := range []struct{ sel, text string }{{"#date", "2026-11-30"}, {"#color", "#ff8800"}, {"#range", "42"}} {
			res := typ(c.sel, c.text, true)
			if got := val(c.sel); got != c.text || res.ActualValue != c.text {
				t.Fatalf("%s = %q (ActualValue %q), want %q", c.sel, got, res.ActualValue, c.text)
			}
		}
		var evs []string
		at.eval(at.page(), "window.events", &evs)
		want := []string{"date:input", "date:change", "color:input", "color:change", "range:input", "range:change"}
		if !reflect.DeepEqual(evs, want) {
			t.Fatalf("events %v, want %v", evs, want)
		}
		_, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el("#date"), Text: "next tuesday", Clear: true})
		if err == nil || !strings.Contains(err.Error(), "YYYY-MM-DD") {
			t.Fatalf("bad date: %v, want an error giving the format", err)
		}
	})
	t.Run("contenteditable", func(t *testing.T) {
		res := typ("#editable", "fresh content", true)
		got := at.str("document.getElementById('editable').innerText")
		if strings.TrimSpace(got) != "fresh content" || res.ActualValue != "fresh content" {
			t.Fatalf("editable %q, ActualValue %q", got, res.ActualValue)
		}
	})
	t.Run("wrapper finds its input", func(t *testing.T) {
		typ("#wrapper", "inside", true)
		if got := val("#inner"); got != "inside" {
			t.Fatalf("inner = %q", got)
		}
	})
	t.Run("password masked", func(t *testing.T) {
		res := typ("#password", "hunter2", true)
		if val("#password") != "hunter2" {
			t.Fatal("password not typed")
		}
		if res.ActualValue != "•••••••" || strings.Contains(res.Outcome.Summary(), "hunter2") {
			t.Fatalf("ActualValue %q / outcome %q reveal or lose the password", res.ActualValue, res.Outcome.Summary())
		}
	})
	t.Run("maxlength noticed", func(t *testing.T) {
		res := typ("#short", "abcdef", true)
		if res.ActualValue != "abc" || !strings.Contains(res.Outcome.Detail, "differs") {
			t.Fatalf("ActualValue %q detail %q", res.ActualValue, res.Outcome.Detail)
		}
	})
	t.Run("sensitive text never in errors", func(t *testing.T) {
		const secret = "s3cr3t-T0ken"
		for _, sel := range []string{"#cb", "#date"} {
			res, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el(sel), Text: secret, Clear: true, Sensitive: true, SensitiveKey: "token"})
			if err == nil {
				t.Fatalf("%s: no error", sel)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(res.Outcome.Detail, secret) {
				t.Fatalf("%s: the secret leaked: %v", sel, err)
			}
		}
		res, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el("#text"), Text: secret, Clear: true, Sensitive: true, SensitiveKey: "token"})
		if err != nil || strings.Contains(res.ActualValue, secret) || strings.Contains(res.Outcome.Detail, secret) {
			t.Fatalf("sensitive typing: %v, ActualValue %q", err, res.ActualValue)
		}
		if val("#text") != secret {
			t.Fatal("sensitive text was not typed")
		}
	})
	t.Run("focused element", func(t *testing.T) {
		at.eval(at.page(), "document.getElementById('text').value = ''; document.getElementById('text').focus(), true", nil)
		res, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Text: "to the focus"})
		if err != nil || val("#text") != "to the focus" || res.ActualValue != "to the focus" {
			t.Fatalf("focused: %v, value %q, ActualValue %q", err, val("#text"), res.ActualValue)
		}
	})
	t.Run("not a text field", func(t *testing.T) {
		_, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el("#cb"), Text: "x"})
		if err == nil || !strings.Contains(err.Error(), "checkbox") {
			t.Fatalf("checkbox: %v", err)
		}
	})
}

func TestActionsScroll(t *testing.T) {
	at := start(t, "/actions-scroll.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Direction: events.ScrollDown, Amount: 500})
	if err != nil {
		t.Fatalf("scroll: %v", err)
	}
	var y float64
	at.eval(at.page(), "scrollY", &y)
	if y != 500 || res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("scrollY %v verdict %s (%s), want 500 changed", y, res.Outcome.Verdict, res.Outcome.Detail)
	}
	// One screen by default.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Direction: events.ScrollDown}); err != nil {
		t.Fatal(err)
	}
	var y2, h float64
	at.eval(at.page(), "scrollY", &y2)
	at.eval(at.page(), "innerHeight", &h)
	if y2-y < h*0.8 {
		t.Fatalf("default scroll moved %v px, want about one screen (%v)", y2-y, h)
	}
	// To the bottom, then once more: no_change, and the detail says why.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Direction: events.ScrollDown, Amount: 100000}); err != nil {
		t.Fatal(err)
	}
	res, err = bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Direction: events.ScrollDown, Amount: 300})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome.Verdict != events.VerdictNoChange || !strings.Contains(res.Outcome.Detail, "bottom") {
		t.Fatalf("at the bottom: verdict %s detail %q", res.Outcome.Verdict, res.Outcome.Detail)
	}
	// Up again.
	res, err = bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Direction: events.ScrollUp, Amount: 200})
	if err != nil || res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("scroll up: %v %s", err, res.Outcome.Verdict)
	}
	// A container, named by an element inside it.
	at.eval(at.page(), "scrollTo(0, 0), true", nil)
	res, err = bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Target: at.el("#item1"), Direction: events.ScrollDown, Amount: 100})
	if err != nil {
		t.Fatalf("container: %v", err)
	}
	var top, py float64
	at.eval(at.page(), "document.getElementById('box').scrollTop", &top)
	at.eval(at.page(), "scrollY", &py)
	if top != 100 || py != 0 || !strings.Contains(res.Outcome.Detail, "<div id=box>") {
		t.Fatalf("box scrollTop %v page %v detail %q; want 100, 0, naming the box", top, py, res.Outcome.Detail)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Direction: "sideways"})
	if err == nil {
		t.Fatal("unknown direction accepted")
	}
}

func TestActionsScrollToText(t *testing.T) {
	at := start(t, "/actions-scroll.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ScrollToText, events.ScrollToTextEvent{Text: `It's "here"`})
	if err != nil {
		t.Fatalf("scroll to text: %v", err)
	}
	var inView bool
	at.eval(at.page(), "(() => { const r = document.getElementById('target').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()", &inView)
	if !inView || res.Outcome.Verdict != events.VerdictChanged || !strings.Contains(res.Outcome.Detail, "<p id=target>") {
		t.Fatalf("in view %v, verdict %s, detail %q", inView, res.Outcome.Verdict, res.Outcome.Detail)
	}
	// Script-looking text is data, not code.
	_, err = bus.Call(at.ctx, at.s.Bus(), events.ScrollToText, events.ScrollToTextEvent{Text: `"); window.pwned = 1; ("`})
	if err == nil {
		t.Fatal("absent text: no error")
	}
	var pwned bool
	at.eval(at.page(), "window.pwned === 1", &pwned)
	if pwned {
		t.Fatal("the text ran as code")
	}
}

func TestActionsSendKeys(t *testing.T) {
	at := start(t, "/actions-keys.html", Config{TypingDelay: -1})
	type key struct {
		Key     string `json:"key"`
		Code    string `json:"code"`
		KeyCode int    `json:"keyCode"`
		Ctrl    bool   `json:"ctrl"`
		Shift   bool   `json:"shift"`
		Alt     bool   `json:"alt"`
		Meta    bool   `json:"meta"`
		Trusted bool   `json:"trusted"`
	}
	send := func(keys string) []key {
		t.Helper()
		at.eval(at.page(), "window.keys = [], document.getElementById('field').focus(), true", nil)
		if _, err := bus.Call(at.ctx, at.s.Bus(), events.SendKeys, events.SendKeysEvent{Keys: keys}); err != nil {
			t.Fatalf("send %q: %v", keys, err)
		}
		var ks []key
		at.eval(at.page(), "window.keys", &ks)
		return ks
	}
	for _, c := range []struct {
		keys string
		want key
	}{
		{"Enter", key{Key: "Enter", Code: "Enter", KeyCode: 13}},
		{"Escape", key{Key: "Escape", Code: "Escape", KeyCode: 27}},
		{"esc", key{Key: "Escape", Code: "Escape", KeyCode: 27}},
		{"Tab", key{Key: "Tab", Code: "Tab", KeyCode: 9}},
		{"ArrowDown", key{Key: "ArrowDown", Code: "ArrowDown", KeyCode: 40}},
		{"down", key{Key: "ArrowDown", Code: "ArrowDown", KeyCode: 40}},
		{"return", key{Key: "Enter", Code: "Enter", KeyCode: 13}},
		{"pagedown", key{Key: "PageDown", Code: "PageDown", KeyCode: 34}},
		{"Control+a", key{Key: "a", Code: "KeyA", KeyCode: 65, Ctrl: true}},
		{"Shift+Tab", key{Key: "Tab", Code: "Tab", KeyCode: 9, Shift: true}},
		{"ctrl+shift+k", key{Key: "K", Code: "KeyK", KeyCode: 75, Ctrl: true, Shift: true}},
		{"cmd+k", key{Key: "k", Code: "KeyK", KeyCode: 75, Meta: true}},
		{"option+x", key{Key: "x", Code: "KeyX", KeyCode: 88, Alt: true}},
	} {
		ks := send(c.keys)
		if len(ks) == 0 {
			t.Fatalf("%q: no keydown", c.keys)
		}
		got := ks[len(ks)-1]
		c.want.Trusted = true
		if got != c.want {
			t.Fatalf("%q: last keydown %+v, want %+v (all %+v)", c.keys, got, c.want, ks)
		}
	}
	// Control+a selects all; Backspace then deletes it.
	at.eval(at.page(), "document.getElementById('field').value = 'select me', true", nil)
	send("Control+a")
	send("Backspace")
	if v := at.str("document.getElementById('field').value"); v != "" {
		t.Fatalf("after Control+a Backspace: %q, want empty", v)
	}
	// Text is typed key by key.
	ks := send("Hi there!")
	if v := at.str("document.getElementById('field').value"); v != "Hi there!" {
		t.Fatalf("typed %q", v)
	}
	if len(ks) != len("Hi there!") || ks[0].Key != "H" || ks[0].Code != "KeyH" {
		t.Fatalf("keydowns %+v", ks)
	}
	// A sequence of keys.
	ks = send("Tab Tab Enter")
	if len(ks) != 3 || ks[2].Key != "Enter" {
		t.Fatalf("sequence: %+v", ks)
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SendKeys, events.SendKeysEvent{}); err == nil {
		t.Fatal("empty keys accepted")
	}
}

func TestActionsSelect(t *testing.T) {
	at := start(t, "/actions-select.html", Config{})
	opts, err := bus.Call(at.ctx, at.s.Bus(), events.GetDropdownOptions, events.GetDropdownOptionsEvent{Target: at.el("#single")})
	if err != nil || len(opts.Options) != 4 || opts.Options[2].Text != "Germany" || opts.Options[2].Value != "de" || !opts.Options[0].Selected {
		t.Fatalf("options: %v %+v", err, opts.Options)
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#single"), Text: " germany "})
	if err != nil || res.Selected.Value != "de" || at.str("document.getElementById('single').value") != "de" {
		t.Fatalf("select germany: %v %+v", err, res.Selected)
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#single"), Text: "it"}); err != nil || at.str("document.getElementById('single').value") != "it" {
		t.Fatalf("select by value: %v", err)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#single"), Text: "Spain"})
	if err == nil || !strings.Contains(err.Error(), `"France"`) || !strings.Contains(err.Error(), `"Italy"`) {
		t.Fatalf("missing option: %v, want the available options listed", err)
	}
	// Multiple: adds to the selection.
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#multi"), Text: "Blue"}); err != nil {
		t.Fatal(err)
	}
	var sel []string
	at.eval(at.page(), "Array.from(document.getElementById('multi').selectedOptions).map(o => o.value)", &sel)
	if !reflect.DeepEqual(sel, []string{"r", "b"}) {
		t.Fatalf("multi selection %v, want [r b]", sel)
	}
	var changes []string
	at.eval(at.page(), "window.changes", &changes)
	if !reflect.DeepEqual(changes, []string{"single", "single", "multi"}) {
		t.Fatalf("change events %v", changes)
	}
	// ARIA combobox: options come from the listbox it controls.
	opts, err = bus.Call(at.ctx, at.s.Bus(), events.GetDropdownOptions, events.GetDropdownOptionsEvent{Target: at.el("#combo")})
	if err != nil || len(opts.Options) != 3 || opts.Options[1].Text != "Banana" {
		t.Fatalf("aria options: %v %+v", err, opts.Options)
	}
	at.eval(at.page(), "document.getElementById('combo').setAttribute('aria-expanded','false'), document.getElementById('lb').hidden = true, true", nil)
	res, err = bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#combo"), Text: "cherry"})
	if err != nil {
		t.Fatalf("aria select: %v", err)
	}
	var fruit struct {
		Fruit   string `json:"fruit"`
		Trusted bool   `json:"trusted"`
	}
	at.eval(at.page(), "({fruit: window.fruit, trusted: window.fruitTrusted})", &fruit)
	if fruit.Fruit != "Cherry" || !fruit.Trusted || res.Selected.Text != "Cherry" {
		t.Fatalf("aria: page %+v, result %+v", fruit, res.Selected)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.SelectDropdownOption, events.SelectDropdownOptionEvent{Target: at.el("#combo"), Text: "Durian"})
	if err == nil || !strings.Contains(err.Error(), `"Banana"`) {
		t.Fatalf("aria missing option: %v", err)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.GetDropdownOptions, events.GetDropdownOptionsEvent{Target: at.el("#plain")})
	if err == nil || !strings.Contains(err.Error(), "not a dropdown") {
		t.Fatalf("plain div: %v", err)
	}
}

func TestActionsHover(t *testing.T) {
	at := start(t, "/actions-hover.html", Config{})
	var shown bool
	at.eval(at.page(), "document.getElementById('item').getClientRects().length > 0", &shown)
	if shown {
		t.Fatal("menu visible before hover")
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Hover, events.HoverEvent{Target: at.el("#trigger")}); err != nil {
		t.Fatalf("hover: %v", err)
	}
	at.eval(at.page(), "document.getElementById('item').getClientRects().length > 0", &shown)
	if !shown {
		t.Fatal("the :hover menu did not open")
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Hover, events.HoverEvent{Target: at.el("#js-menu")})
	if err != nil {
		t.Fatal(err)
	}
	var opened bool
	at.eval(at.page(), "!!document.getElementById('js-items')", &opened)
	if !opened || res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("mouseenter menu opened %v, verdict %s", opened, res.Outcome.Verdict)
	}
}

func TestActionsUpload(t *testing.T) {
	dir := t.TempDir()
	f1 := filepath.Join(dir, "report.txt")
	f2 := filepath.Join(dir, "photo.png")
	for _, f := range []string{f1, f2} {
		if err := os.WriteFile(f, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	at := start(t, "/actions-upload.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#one"), Paths: []string{f1}})
	if err != nil || !reflect.DeepEqual(res.Files, []string{"report.txt"}) {
		t.Fatalf("upload: %v, files %v", err, res.Files)
	}
	var changes int
	at.eval(at.page(), "window.changes", &changes)
	if changes != 1 {
		t.Fatalf("change events %d, want 1", changes)
	}
	res, err = bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#many"), Paths: []string{f1, f2}})
	if err != nil || !reflect.DeepEqual(res.Files, []string{"report.txt", "photo.png"}) {
		t.Fatalf("upload many: %v, files %v", err, res.Files)
	}
	for _, sel := range []string{"#lbl", "#styled"} {
		res, err = bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el(sel), Paths: []string{f2}})
		if err != nil || !reflect.DeepEqual(res.Files, []string{"photo.png"}) {
			t.Fatalf("upload via %s: %v, files %v", sel, err, res.Files)
		}
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#one"), Paths: []string{filepath.Join(dir, "missing.txt")}})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing file: %v", err)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#one"), Paths: []string{dir}})
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#one"), Paths: []string{f1, f2}})
	if err == nil || !strings.Contains(err.Error(), "takes one file") {
		t.Fatalf("two files into a single input: %v", err)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#nothing"), Paths: []string{f1}})
	if err == nil || !strings.Contains(err.Error(), "not a file input") {
		t.Fatalf("no input: %v", err)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#one")})
	if err == nil {
		t.Fatal("no paths accepted")
	}
}

func TestActionsUploadPolicy(t *testing.T) {
	allowed, other := t.TempDir(), t.TempDir()
	in, out := filepath.Join(allowed, "ok.txt"), filepath.Join(other, "secret.txt")
	for _, f := range []string{in, out} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink inside the directory pointing out of it is outside.
	link := filepath.Join(allowed, "link.txt")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	p := UploadDirPolicy{Dir: allowed}
	ctx := context.Background()
	if err := p.AllowUpload(ctx, in); err != nil {
		t.Fatalf("inside: %v", err)
	}
	for _, f := range []string{out, link, filepath.Join(allowed, "..", filepath.Base(other), "secret.txt")} {
		if err := p.AllowUpload(ctx, f); !errors.Is(err, ErrUploadNotAllowed) {
			t.Fatalf("%s: %v, want ErrUploadNotAllowed", f, err)
		}
	}
	at := start(t, "/actions-upload.html", Config{UploadPolicy: p})
	_, err := bus.Call(at.ctx, at.s.Bus(), events.UploadFile, events.UploadFileEvent{Target: at.el("#one"), Paths: []string{out}})
	if !errors.Is(err, ErrUploadNotAllowed) {
		t.Fatalf("upload outside the directory: %v", err)
	}
	var n int
	at.eval(at.page(), "document.getElementById('one').files.length", &n)
	if n != 0 {
		t.Fatal("a refused file reached the input")
	}
}

func TestActionsClickCoordinate(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickCoordinate, events.ClickCoordinateEvent{X: 80, Y: 40})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	var n int
	at.eval(at.page(), "(window.clicks.btn || []).filter(c => c.trusted && c.x === 80 && c.y === 40).length", &n)
	if n != 1 || !strings.Contains(res.Outcome.Detail, "<button id=btn>") {
		t.Fatalf("page saw %d clicks at (80,40); detail %q", n, res.Outcome.Detail)
	}
	_, err = bus.Call(at.ctx, at.s.Bus(), events.ClickCoordinate, events.ClickCoordinateEvent{X: 5000, Y: 40})
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("outside the viewport: %v", err)
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.ClickCoordinate, events.ClickCoordinateEvent{X: 80, Y: 40, Force: true}); err != nil {
		t.Fatalf("forced: %v", err)
	}
	at.eval(at.page(), "(window.clicks.btn || []).length", &n)
	if n != 2 {
		t.Fatalf("after the forced click: %d clicks", n)
	}
}

func TestActionsWait(t *testing.T) {
	a := New(Config{})
	began := time.Now()
	if err := a.wait(context.Background(), events.WaitEvent{Duration: time.Hour, Max: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if time.Since(began) > 30*time.Second {
		t.Fatal("Max did not cap the wait")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.wait(ctx, events.WaitEvent{Duration: time.Hour, Max: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	at := start(t, "/actions-click.html", Config{})
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Wait, events.WaitEvent{Duration: time.Millisecond}); err != nil {
		t.Fatalf("wait via the bus: %v", err)
	}
}

func TestActionsClickDownload(t *testing.T) {
	at := start(t, "/actions-click.html", Config{DownloadStartWait: 10 * time.Second})
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#dl")})
	if err != nil {
		t.Fatalf("click: %v", err)
	}
	if res.Outcome.Verdict != events.VerdictDownload || res.Outcome.Download == "" {
		t.Fatalf("verdict %s (%s) download %q, want download with its guid", res.Outcome.Verdict, res.Outcome.Detail, res.Outcome.Download)
	}
}

func TestActionsClickInputAndSameSiteFrame(t *testing.T) {
	at := start(t, "/iframes.html", Config{})
	at.eval(at.page(), `new Promise((ok) => { const f = document.getElementById('same-site'); if (f.contentDocument && f.contentDocument.readyState === 'complete' && f.contentDocument.getElementById('frame-button')) ok(true); else f.addEventListener('load', () => ok(true)); })`, nil)
	// A same-site iframe shares the page's session; its quads are in the
	// page's viewport and the hit test reaches into the frame.
	btn := at.nodeExpr(at.page(), "document.getElementById('same-site').contentDocument.getElementById('frame-button')")
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: btn})
	if err != nil || res.Method != "mouse" {
		t.Fatalf("click in same-site frame: %v, method %q (%s)", err, res.Method, res.Outcome.Detail)
	}
	var n int
	at.eval(at.page(), "document.getElementById('same-site').contentWindow.clicked || 0", &n)
	if n != 1 {
		t.Fatalf("frame button clicked %d times", n)
	}
	// An input: the hit node is inside its user-agent shadow tree.
	in := at.nodeExpr(at.page(), "document.getElementById('same-site').contentDocument.getElementById('frame-input')")
	res, err = bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: in})
	if err != nil || res.Method != "mouse" {
		t.Fatalf("click input: %v, method %q (%s)", err, res.Method, res.Outcome.Detail)
	}
	var focused bool
	at.eval(at.page(), "document.getElementById('same-site').contentDocument.activeElement.id === 'frame-input'", &focused)
	if !focused {
		t.Fatal("the clicked input has no focus")
	}
}

func TestActionsSensitiveNeverLogged(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	at := start(t, "/actions-type.html", Config{Logger: zap.New(core)})
	const secret = "pa55-W0rd-xyz"
	for _, sel := range []string{"#text", "#password", "#date", "#cb"} {
		res, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el(sel), Text: secret, Clear: true, Sensitive: true, SensitiveKey: "pw"})
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Fatalf("%s: error reveals the secret: %v", sel, err)
		}
		if strings.Contains(res.ActualValue, secret) || strings.Contains(res.Outcome.Detail, secret) {
			t.Fatalf("%s: result reveals the secret: %+v", sel, res)
		}
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el("#date"), Text: "2026-01-02", Clear: true, Sensitive: true, SensitiveKey: "dob"})
	if err != nil || strings.Contains(res.ActualValue, "2026") {
		t.Fatalf("sensitive date: %v, ActualValue %q", err, res.ActualValue)
	}
	if logs.Len() == 0 {
		t.Fatal("nothing was logged: the test would not see a leak")
	}
	for _, e := range logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, secret) {
			t.Fatalf("log entry reveals the secret: %s", line)
		}
	}
}

// An action releases the page objects it resolved, so a long session on one
// page does not accumulate them.
func TestActionsReleaseObjects(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	tg := at.el("#cb")
	el, err := resolveNode(at.ctx, at.page(), cdpproto.BackendNodeID(tg.Element.BackendNodeID), "the checkbox")
	if err != nil {
		t.Fatal(err)
	}
	if err := pagejs.CallOn(at.ctx, el.sess, el.obj, `function() { return 1 }`, nil); err != nil {
		t.Fatalf("object unusable before the action ended: %v", err)
	}
	run := New(Config{}).begin(at.ctx, at.s, el.sess)
	run.end(at.ctx, nil)
	// The release is sent without waiting; a later call on the session is
	// answered after it.
	err = pagejs.CallOn(at.ctx, el.sess, el.obj, `function() { return 1 }`, nil)
	if err == nil || !strings.Contains(err.Error(), "object") {
		t.Fatalf("object still alive after the action: %v", err)
	}
}

// assertFailedWithEvidence checks what every failed action returns: the
// error is an *events.ActionError carrying the outcome, and the outcome
// (in the result and in the error) says failed, why, and where the page
// was before and after.
func assertFailedWithEvidence(t *testing.T, what string, o events.ActionOutcome, err error, wantURL string) {
	t.Helper()
	var ae *events.ActionError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: error %v is not an *events.ActionError", what, err)
	}
	for _, oc := range []events.ActionOutcome{o, ae.Outcome} {
		if oc.Verdict != events.VerdictFailed || oc.Detail == "" {
			t.Fatalf("%s: outcome %+v, want failed with a detail", what, oc)
		}
		if oc.Before.URL != wantURL || oc.After.URL != wantURL || oc.Before.Fingerprint == "" || oc.After.Fingerprint == "" {
			t.Fatalf("%s: evidence before %+v after %+v, want the page %s", what, oc.Before, oc.After, wantURL)
		}
	}
}

// Failures that happen after the action touched the page and failures
// refused before it did both carry the verdict and the evidence.
func TestActionsFailuresCarryEvidence(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	page := at.env.URL("/actions-click.html")
	// A right-click cannot fall back to JavaScript: a covered target fails.
	res, err := bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#covered"), Button: events.ButtonRight})
	if err == nil || !strings.Contains(err.Error(), "covered by") {
		t.Fatalf("right-click on a covered button: %v", err)
	}
	assertFailedWithEvidence(t, "covered right-click", res.Outcome, err, page)
	// A <select> is refused before anything is clicked.
	res, err = bus.Call(at.ctx, at.s.Bus(), events.ClickElement, events.ClickElementEvent{Target: at.el("#sel")})
	if err == nil {
		t.Fatal("clicking a <select> succeeded")
	}
	assertFailedWithEvidence(t, "select", res.Outcome, err, page)
	// Typing into a checkbox, scrolling by a negative amount, an evaluation
	// that throws: all the same shape.
	tr, err := bus.Call(at.ctx, at.s.Bus(), events.TypeText, events.TypeTextEvent{Target: at.el("#cb"), Text: "x"})
	assertFailedWithEvidence(t, "type into a checkbox", tr.Outcome, err, page)
	sr, err := bus.Call(at.ctx, at.s.Bus(), events.Scroll, events.ScrollEvent{Amount: -5})
	assertFailedWithEvidence(t, "negative scroll", sr.Outcome, err, page)
	er, err := bus.Call(at.ctx, at.s.Bus(), events.Evaluate, events.EvaluateEvent{Code: "(() => { throw new Error('nope') })()"})
	if !errors.Is(err, pagejs.ErrScript) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("evaluate that throws: %v", err)
	}
	assertFailedWithEvidence(t, "evaluate", er.Outcome, err, page)
}

// Evaluate returns the script's value as JSON text, awaits promises, caps
// the result, and reports what the script did to the page.
func TestActionsEvaluate(t *testing.T) {
	at := start(t, "/actions-click.html", Config{})
	for code, want := range map[string]string{
		"1 + 1":                          "2",
		"Promise.resolve({a: [1, 'x']})": `{"a":[1,"x"]}`,
		"undefined":                      "undefined",
		"null":                           "null",
		"document.title":                 `"Actions click"`,
	} {
		res, err := bus.Call(at.ctx, at.s.Bus(), events.Evaluate, events.EvaluateEvent{Code: code})
		if err != nil || res.Value != want || res.Truncated {
			t.Errorf("%s = %q (truncated %v), %v; want %q", code, res.Value, res.Truncated, err, want)
		}
	}
	res, err := bus.Call(at.ctx, at.s.Bus(), events.Evaluate, events.EvaluateEvent{Code: "'x'.repeat(100)", MaxResultBytes: 10})
	if err != nil || len(res.Value) != 10 || !res.Truncated {
		t.Fatalf("capped result %q truncated %v: %v", res.Value, res.Truncated, err)
	}
	res, err = bus.Call(at.ctx, at.s.Bus(), events.Evaluate, events.EvaluateEvent{Code: "document.body.appendChild(document.createElement('div')), 1"})
	if err != nil || res.Outcome.Verdict != events.VerdictChanged {
		t.Fatalf("a script that changed the page: verdict %q, %v", res.Outcome.Verdict, err)
	}
	if _, err := bus.Call(at.ctx, at.s.Bus(), events.Evaluate, events.EvaluateEvent{}); err == nil {
		t.Fatal("empty code accepted")
	}
}
