package liveview

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/internal/wdtest"
	"github.com/browseragent/browseragent/session"
)

func TestMain(m *testing.M) { testbrowser.Main(m) }

// The fixture's secret and field centres (liveview-login.html).
const (
	password = "correct horse 42"
	userX    = 140
	userY    = 75
	passX    = 140
	passY    = 125
	goX      = 100
	goY      = 175
)

// rig is a session on the shared browser with every log line captured,
// and a live view of it.
type rig struct {
	s    *session.Session
	v    *Server
	logs *observer.ObservedLogs
	ctx  context.Context
}

func newRig(t *testing.T, page string, ws ...session.Watchdog) *rig {
	t.Helper()
	env := testbrowser.Start(t)
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew},
		session.WithLogger(log), session.WithWatchdogs(ws...))
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		if err := s.Stop(sctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	wdtest.Navigate(t, ctx, s, env.URL(page))
	v, err := New(s, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		if err := v.Close(cctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &rig{s: s, v: v, logs: logs, ctx: ctx}
}

// post POSTs body as JSON to the live view's path and returns the status
// and the answer.
func post(t *testing.T, ctx context.Context, u, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req)
}

func get(t *testing.T, ctx context.Context, u string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustPost(t *testing.T, ctx context.Context, u, body string) {
	t.Helper()
	if code, msg := post(t, ctx, u, body); code != http.StatusOK {
		t.Fatalf("POST %s %s: %d %s", u, body, code, msg)
	}
}

func status(t *testing.T, ctx context.Context, v *Server) Status {
	t.Helper()
	code, body := get(t, ctx, v.URL()+"status")
	if code != http.StatusOK {
		t.Fatalf("status: %d %s", code, body)
	}
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("status %q: %v", body, err)
	}
	return st
}

// frames opens the frame stream and sends each JPEG it reads on the
// returned channel until ctx ends.
func frames(t *testing.T, ctx context.Context, v *Server) <-chan []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.URL()+"frames", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/x-mixed-replace" {
		resp.Body.Close()
		t.Fatalf("frames: content type %q (%v)", resp.Header.Get("Content-Type"), err)
	}
	out := make(chan []byte, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait) // after ctx's cancel (cleanups run last first)
	go func() {
		defer wg.Done()
		defer resp.Body.Close()
		defer close(out)
		mr := multipart.NewReader(resp.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				return
			}
			b, err := io.ReadAll(p)
			if err != nil {
				return
			}
			select {
			case out <- b:
			default: // the test reads only what it needs
			}
		}
	}()
	return out
}

// TestLoginWallThroughLiveView is the must-show: a person, played by the
// test only through the live view's HTTP endpoints, signs in on a login
// wall during a hand-off; the handler returns their note and the page is
// logged in. The password appears in no log line and no bus record.
func TestLoginWallThroughLiveView(t *testing.T) {
	r := newRig(t, "/liveview-login.html")
	ctx, cancel := context.WithTimeout(r.ctx, 90*time.Second)
	defer cancel()

	announced := make(chan Announcement, 1)
	h := &Handler{Server: r.v, Announce: func(a Announcement) { announced <- a }}
	type result struct {
		resp agent.HumanResponse
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := h.Handoff(ctx, agent.HumanRequest{Reason: "sign in as ada", By: "model"})
		res <- result{resp, err}
	}()
	var a Announcement
	select {
	case a = <-announced:
	case rr := <-res:
		t.Fatalf("Handoff returned before the person acted: %+v", rr)
	case <-ctx.Done():
		t.Fatal("no announcement")
	}
	if a.URL != r.v.URL() || a.Request.Reason != "sign in as ada" || a.Headful {
		t.Fatalf("announcement %+v (URL %s)", a, r.v.URL())
	}
	base := a.URL

	st := status(t, ctx, r.v)
	if !st.Active || st.Reason != "sign in as ada" || !strings.Contains(st.URL, "liveview-login.html") {
		t.Fatalf("status %+v", st)
	}
	if st.Width <= goX || st.Height <= goY {
		t.Fatalf("viewport %dx%d too small for the fixture", st.Width, st.Height)
	}
	code, page := get(t, ctx, base)
	if code != http.StatusOK || !strings.Contains(page, `id="screen"`) {
		t.Fatalf("page: %d %.200s", code, page)
	}

	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	fr := frames(t, fctx, r.v)

	mustPost(t, ctx, base+"input", fmt.Sprintf(`{"type":"click","x":%d,"y":%d}`, userX, userY))
	mustPost(t, ctx, base+"input", `{"type":"text","text":"ada"}`)
	mustPost(t, ctx, base+"input", fmt.Sprintf(`{"type":"click","x":%d,"y":%d}`, passX, passY))
	mustPost(t, ctx, base+"input", fmt.Sprintf(`{"type":"text","text":%q}`, password))

	// At least one frame, a real JPEG of the viewport (typing repaints).
	select {
	case b, ok := <-fr:
		if !ok {
			t.Fatal("frame stream ended without a frame")
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width < 100 || cfg.Height < 100 {
			t.Fatalf("frame: %v, %dx%d", err, cfg.Width, cfg.Height)
		}
	case <-ctx.Done():
		t.Fatal("no frame on the stream")
	}

	start := time.Now()
	mustPost(t, ctx, base+"input", fmt.Sprintf(`{"type":"click","x":%d,"y":%d}`, goX, goY))
	t.Logf("one click through the input endpoint took %s", time.Since(start)) // a measure, not asserted
	mustPost(t, ctx, base+"done", `{"note":"signed in as ada"}`)

	var rr result
	select {
	case rr = <-res:
	case <-ctx.Done():
		t.Fatal("Handoff did not return after done")
	}
	if rr.err != nil || rr.resp.Via != ViaLiveView || rr.resp.Note != "signed in as ada" || rr.resp.Declined {
		t.Fatalf("Handoff = %+v, %v", rr.resp, rr.err)
	}
	var text string
	wdtest.Eval(t, ctx, r.s, `document.body.innerText`, &text)
	if !strings.Contains(text, "Welcome, ada") {
		t.Fatalf("page after the hand-off: %q", text)
	}
	if st := status(t, ctx, r.v); st.Active || st.Frames < 1 {
		t.Fatalf("status after: %+v", st)
	} else {
		t.Logf("%d frames from the browser during the hand-off", st.Frames)
	}
	// Input is refused once the agent has the page back.
	if code, _ := post(t, ctx, base+"input", `{"type":"text","text":"x"}`); code != http.StatusConflict {
		t.Fatalf("input after the hand-off: %d, want 409", code)
	}

	// What the person typed is nowhere in the logs or the bus's records.
	if r.logs.Len() == 0 {
		t.Fatal("no log lines captured: the check below would prove nothing")
	}
	for _, e := range r.logs.All() {
		line := fmt.Sprintf("%s %v", e.Message, e.ContextMap())
		if strings.Contains(line, password) {
			t.Fatalf("the password is in a log line: %s", line)
		}
	}
	hist, _ := json.Marshal(r.s.Bus().History())
	if len(hist) < 10 || bytes.Contains(hist, []byte(password)) {
		t.Fatalf("bus history (%d bytes) holds the password or is empty", len(hist))
	}
}

// TestBadRequests: malformed or impossible input is a 400 naming the
// problem; a wrong token 404; a foreign Host or Origin 403; input or done
// without a hand-off 409.
func TestBadRequests(t *testing.T) {
	r := newRig(t, "/liveview-login.html")
	ctx := r.ctx
	base := r.v.URL()
	for _, c := range []struct{ body, want string }{
		{`{"type":"click",`, "bad JSON"},
		{`{"type":"hover","x":1,"y":1}`, `unknown input type "hover"`},
		{`{}`, "missing type"},
		{`{"type":"click","x":5000,"y":10}`, "outside the viewport"},
		{`{"type":"click","x":-1,"y":10}`, "outside the viewport"},
		{`{"type":"click","x":10}`, "needs x and y"},
		{`{"type":"scroll","x":10,"y":10}`, "needs dx or dy"},
		{`{"type":"key","key":"NoSuchKey"}`, `unknown key "NoSuchKey"`},
		{`{"type":"text","text":""}`, "non-empty text"},
		{`{"type":"text","text":"a","extra":1}`, "unknown field"},
		{`{"type":"click","x":1,"y":1,"button":"fourth"}`, `unknown button "fourth"`},
		{`{"type":"text","text":"a"} {"type":"text","text":"b"}`, "data after the JSON value"},
	} {
		code, msg := post(t, ctx, base+"input", c.body)
		if code != http.StatusBadRequest || !strings.Contains(msg, c.want) {
			t.Errorf("input %s: %d %q, want 400 with %q", c.body, code, msg, c.want)
		}
	}
	// Not JSON by its type (a form another page posts blind): 415.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"input", strings.NewReader(`{"type":"text","text":"a"}`))
	req.Header.Set("Content-Type", "text/plain")
	if code, _ := do(t, req); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain input: %d, want 415", code)
	}
	// Valid input, no hand-off: the agent has the page.
	if code, msg := post(t, ctx, base+"input", `{"type":"click","x":10,"y":10}`); code != http.StatusConflict || !strings.Contains(msg, "no hand-off") {
		t.Errorf("input without a hand-off: %d %q", code, msg)
	}
	if code, _ := post(t, ctx, base+"done", `{}`); code != http.StatusConflict {
		t.Errorf("done without a hand-off: %d", code)
	}
	// Wrong or missing token.
	root := strings.TrimSuffix(base, "/")
	root = root[:strings.LastIndex(root, "/")+1]
	for _, u := range []string{root, root + "status", root + strings.Repeat("0", 32) + "/status", base + "nope"} {
		if code, _ := get(t, ctx, u); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", u, code)
		}
	}
	// DNS rebinding: a foreign Host header.
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"status", nil)
	req.Host = "attacker.example:80"
	if code, _ := do(t, req); code != http.StatusForbidden {
		t.Errorf("foreign Host: %d, want 403", code)
	}
	// Another site's page posting blind.
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"done", strings.NewReader(`{}`))
	req.Header.Set("Origin", "http://attacker.example")
	if code, _ := do(t, req); code != http.StatusForbidden {
		t.Errorf("foreign Origin: %d, want 403", code)
	}
	// No CORS: nothing invites another origin to read.
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"status", nil)
	req.Header.Set("Origin", "http://attacker.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Errorf("Access-Control-Allow-Origin %q", v)
	}
}

// TestConfigAndErrors: a non-loopback address is refused; a second
// hand-off is busy; ctx's deadline is ErrHumanTimeout; Signal says done.
func TestConfigAndErrors(t *testing.T) {
	r := newRig(t, "/liveview-login.html")
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		if _, err := New(r.s, Config{Addr: addr}); !errors.Is(err, ErrConfig) {
			t.Errorf("New(Addr %q) = %v, want ErrConfig", addr, err)
		}
	}
	if _, err := New(r.s, Config{Quality: 101}); !errors.Is(err, ErrConfig) {
		t.Errorf("Quality 101: %v", err)
	}

	// Deadline.
	dctx, cancel := context.WithTimeout(r.ctx, 50*time.Millisecond)
	_, err := (&Handler{Server: r.v}).Handoff(dctx, agent.HumanRequest{Reason: "r"})
	cancel()
	if !errors.Is(err, agent.ErrHumanTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	// Cancel is not a timeout.
	cctx, cancel := context.WithCancel(r.ctx)
	cancel()
	_, err = (&Handler{Server: r.v}).Handoff(cctx, agent.HumanRequest{Reason: "r"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, agent.ErrHumanTimeout) {
		t.Fatalf("cancel: %v", err)
	}

	// Signal (the CLI's Enter): a value sent before the hand-off is stale.
	sig := make(chan string, 1)
	sig <- "stale"
	h := &Handler{Server: r.v, Signal: sig}
	started := make(chan struct{})
	h.Announce = func(Announcement) { close(started) }
	res := make(chan agent.HumanResponse, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := h.Handoff(r.ctx, agent.HumanRequest{Reason: "first"})
		res <- resp
		errc <- err
	}()
	<-started
	// A second hand-off while one is active.
	if _, err := (&Handler{Server: r.v}).Handoff(r.ctx, agent.HumanRequest{Reason: "second"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second hand-off: %v, want ErrBusy", err)
	}
	sig <- "done from the terminal"
	if resp := <-res; resp.Via != ViaSignal || resp.Note != "done from the terminal" {
		t.Fatalf("signal: %+v", resp)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if _, err := (&Handler{}).Handoff(r.ctx, agent.HumanRequest{}); !errors.Is(err, agent.ErrNoHuman) {
		t.Fatalf("no server: %v", err)
	}
}

func jsonDecode(resp *http.Response, v any) error {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %d %s", resp.Request.URL.Path, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func postOK(ctx context.Context, u, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s %s: %d %s", req.URL.Path, body, resp.StatusCode, b)
	}
	return nil
}
