package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/trace"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
	"github.com/browseragent/browseragent/watchdogs/pdf"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
)

// longLines is how many lines the PDF's last chapter has: enough that
// every page of the document is over read_pdf's 20,000-character cut.
const longLines = 700

// pdfDocHTML is a document in chapters, each from a new printed page: a
// short first and second chapter, then a long one over several pages.
func pdfDocHTML() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>Quarterly report</title>
<style>section { break-after: page; } p { margin: 0; font: 11px sans-serif; }</style></head><body>
<section><h1>Alpha chapter</h1><p>The year began slowly.</p></section>
<section><h1>Beta chapter</h1><p>Revenue grew 42 percent in the second quarter.</p></section>
<section><h1>Gamma chapter</h1>`)
	for i := 1; i <= longLines; i++ {
		fmt.Fprintf(&b, "<p>Line %d of the gamma chapter lists ordinary words.</p>\n", i)
	}
	b.WriteString("</section></body></html>")
	return b.String()
}

// pdfSite serves /doc.html and, once set, its printed /doc.pdf on loopback.
type pdfSite struct {
	base string
	mu   sync.Mutex
	pdf  []byte
}

func newPDFSite(t *testing.T) *pdfSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st := &pdfSite{base: "http://" + ln.Addr().String()}
	doc := pdfDocHTML()
	mux := http.NewServeMux()
	mux.HandleFunc("/doc.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(doc))
	})
	mux.HandleFunc("/doc.pdf", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		b := st.pdf
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(b)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return st
}

// Issue 13 at the agent's level: a scripted model drags a kanban card to
// the other column (by an offset, with real mouse input and the HTML5
// drag the page starts), opens a PDF, reads its page 2, then every page
// (over the 20,000-character cut: the rest is in a file it names); the
// observations, read_state, the file and the trace's step records show it.
func TestAgentDragAndReadPDF(t *testing.T) {
	env := testbrowser.Start(t)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew},
		session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{}), screenshot.New(screenshot.Config{}), pdf.New(pdf.Config{})))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
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
	site := newPDFSite(t)
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: site.base + "/doc.html"}); err != nil {
		t.Fatal(err)
	}
	printed, err := bus.Call(ctx, s.Bus(), events.PrintPDF, events.PrintPDFEvent{})
	if err != nil {
		t.Fatalf("print: %v", err)
	}
	site.mu.Lock()
	site.pdf = printed.PDF
	site.mu.Unlock()

	var parent string
	model := dynModel(
		func(txt string) string {
			// The card's center is in the first column; one column over
			// (160 px wide, 8 padding, 2 border, 20 margin) is 190 px right.
			return act("drag", map[string]any{"index": indexOf(t, txt, "Write report", ""), "dx": 190, "dy": 0})
		},
		func(txt string) string {
			evalPage(t, s, "document.getElementById('card1').parentElement.id", &parent)
			return act("navigate", map[string]any{"url": site.base + "/doc.pdf"})
		},
		func(txt string) string { return act("read_pdf", map[string]any{"page": 2}) },
		func(txt string) string { return act("read_pdf", map[string]any{}) },
		func(txt string) string { return act("done", map[string]any{"text": "ok", "success": true}) },
	)
	set := settings(t)
	tw, err := trace.Create(filepath.Join(set.RunDir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	obs := trace.NewAgentObserver(tw, set.RunDir)
	set.Observers = append(set.Observers, obs)
	a, err := agent.New("Open "+env.URL("/actions-drag.html")+", move 'Write report' to Done, then read the report at "+site.base+"/doc.pdf", model, s, set)
	if err != nil {
		t.Fatal(err)
	}
	res := runAgent(t, a)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := obs.Err(); err != nil {
		t.Fatal(err)
	}
	if !res.Done || !res.Success {
		t.Fatalf("result %+v", res)
	}
	model.mu.Lock()
	reqs := model.reqs
	model.mu.Unlock()
	if len(reqs) < 5 {
		t.Fatalf("%d model calls, want 5", len(reqs))
	}

	// The drag: the card was in the Done column after it.
	if parent != "done" {
		t.Errorf("after the drag the card was in %q, want done", parent)
	}
	// The PDF tab's observation offers read_pdf and says the page count.
	pagesRE := regexp.MustCompile(`This tab shows a PDF of (\d+) pages`)
	m := pagesRE.FindStringSubmatch(userText(reqs[2]))
	if m == nil {
		t.Fatalf("the PDF tab's observation does not give its page count:\n%s", userText(reqs[2]))
	}
	if strings.Contains(userText(reqs[0]), "read_pdf") {
		t.Errorf("read_pdf offered on an HTML page")
	}
	// Page 2 in read_state.
	p2 := userText(reqs[3])
	if !strings.Contains(p2, "--- page 2 of "+m[1]+" ---") || !strings.Contains(p2, "Revenue grew 42 percent in the second quarter.") {
		t.Errorf("page 2 is not in read_state:\n%s", p2)
	}
	if strings.Contains(p2, "The year began slowly") || strings.Contains(p2, "Line 1 of the gamma") {
		t.Errorf("read_state of page 2 holds another page's text")
	}
	// Every page: cut at 20,000 characters, the whole in a file it names.
	all := userText(reqs[4])
	name := "pdf_pages_1-" + m[1] + ".md"
	if !strings.Contains(all, fmt.Sprintf("[cut at %d characters; the whole text is in the file %s", agent.DefaultReadPDFChars, name)) {
		t.Errorf("read_state of every page does not say it was cut into %s:\n%.2000s", name, all)
	}
	last := fmt.Sprintf("Line %d of the gamma chapter", longLines)
	if strings.Contains(all, last) {
		t.Errorf("read_state holds the last line: not cut")
	}
	whole, err := os.ReadFile(filepath.Join(set.RunDir, "files", name))
	if err != nil {
		t.Fatalf("the whole text's file: %v", err)
	}
	if !strings.Contains(string(whole), last) || !strings.Contains(string(whole), "Beta chapter") || len(whole) <= agent.DefaultReadPDFChars {
		t.Errorf("the file %s (%d bytes) does not hold the whole text", name, len(whole))
	}

	// The trace records the drag (changed, on the card) and both reads
	// (after the task's own navigation).
	recs, err := trace.ReadFile(filepath.Join(set.RunDir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs {
		if r.Type != trace.TypeStep {
			continue
		}
		var st trace.Step
		if err := json.Unmarshal(r.Data, &st); err != nil {
			t.Fatal(err)
		}
		for _, ac := range st.Actions {
			names = append(names, ac.Name)
			if ac.Error != "" {
				t.Errorf("step %d %s: %s", st.Step, ac.Name, ac.Error)
			}
			if ac.Name == "drag" && ac.Verdict != string(events.VerdictChanged) {
				t.Errorf("the drag's verdict %q (%s), want changed", ac.Verdict, ac.Detail)
			}
			if ac.Name == "drag" && (ac.Element == nil || ac.Element.Attrs["id"] != "card1") {
				t.Errorf("the drag's element %+v is not the card", ac.Element)
			}
		}
	}
	if got := strings.Join(names, " "); got != "navigate drag navigate read_pdf read_pdf done" {
		t.Errorf("trace actions %q", got)
	}
}

// A recorded drag by an offset replays without the model on the element it
// was recorded on (the card moves to the other column again on a fresh
// page); a recorded drag onto an element stops the replay for a heal
// (its drop element is not recorded), before the page is touched.
func TestReplayDrag(t *testing.T) {
	env, s := newSession(t)
	record := func(params func(txt string) map[string]any) *agent.History {
		model := dynModel(
			func(txt string) string { return act("drag", params(txt)) },
			func(txt string) string { return act("done", map[string]any{"text": "ok", "success": true}) },
		)
		a, err := agent.New("Open "+env.URL("/actions-drag.html")+" and move 'Write report' to Done", model, s, settings(t))
		if err != nil {
			t.Fatal(err)
		}
		if res := runAgent(t, a); !res.Done || !res.Success {
			t.Fatalf("recording: %+v", res)
		}
		return a.History()
	}
	parent := func() string {
		var id string
		evalPage(t, s, "document.getElementById('card1').parentElement.id", &id)
		return id
	}
	byOffset := record(func(txt string) map[string]any {
		return map[string]any{"index": indexOf(t, txt, "Write report", ""), "dx": 190, "dy": 0}
	})
	if p := parent(); p != "done" {
		t.Fatalf("recording: the card is in %q", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Away from the page: the replay's own navigation loads it afresh
	// (the card in To do), so only the replayed drag can move it.
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: "about:blank"}); err != nil {
		t.Fatal(err)
	}
	rr, err := agent.Replay(ctx, s, byOffset, agent.ReplayOptions{Settings: agent.Settings{RunDir: t.TempDir()}})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if rr.ModelCalls != 0 || !rr.Result.Success {
		t.Fatalf("replay: %d model calls, result %+v", rr.ModelCalls, rr.Result)
	}
	if p := parent(); p != "done" {
		t.Fatalf("replayed: the card is in %q, want done", p)
	}

	onto := record(func(txt string) map[string]any {
		return map[string]any{"index": indexOf(t, txt, "Write report", ""), "to_index": indexOf(t, txt, "Call Bob", "")}
	})
	_, err = agent.Replay(ctx, s, onto, agent.ReplayOptions{Settings: agent.Settings{RunDir: t.TempDir()}})
	var re *agent.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, agent.ErrReplayPrecondition) {
		t.Fatalf("replay of a drag onto an element: %v, want a ReplayError wrapping ErrReplayPrecondition", err)
	}
	if p := parent(); p != "todo" {
		t.Errorf("the stopped replay moved the card to %q", p)
	}
}
