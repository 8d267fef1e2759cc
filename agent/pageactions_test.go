package agent_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/agenttest"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// queriesPage opens agent-queries.html in a Driver with set and takes a
// state (with a screenshot when shot).
func queriesPage(t *testing.T, set agent.Settings, shot bool) (context.Context, *session.Session, *agent.Driver, *agent.Observation) {
	t.Helper()
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(ctx) })
	if _, err := d.Do(ctx, "navigate", params(t, map[string]any{"url": env.URL("/agent-queries.html")})); err != nil {
		t.Fatal(err)
	}
	o, err := d.State(ctx, agent.StateOptions{Screenshot: shot})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, s, d, o
}

// search_page, find_elements and save_as_pdf on a fixture page, through a
// Driver: each is a step of the session, and what it found is what the
// page holds.
func TestPageQueryActions(t *testing.T) {
	ctx, s, d, o := queriesPage(t, settings(t), false)

	t.Run("plain search with context, below the viewport too", func(t *testing.T) {
		rec, err := d.Do(ctx, "search_page", params(t, map[string]any{"pattern": "WARRANTY"}))
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		if !strings.Contains(rec.Result.Text, "Found 1 match") || !strings.Contains(rec.Result.ReadOnce, "«warranty»") || !strings.Contains(rec.Result.ReadOnce, "covers plush") {
			t.Fatalf("case-insensitive search: %q / %q", rec.Result.Text, rec.Result.ReadOnce)
		}
		rec, err = d.Do(ctx, "search_page", params(t, map[string]any{"pattern": "WARRANTY", "case_sensitive": true}))
		if err != nil || !strings.Contains(rec.Result.Text, "No match") {
			t.Fatalf("case-sensitive search: %q %v", rec.Result.Text, err)
		}
	})

	t.Run("regex scoped by CSS", func(t *testing.T) {
		rec, err := d.Do(ctx, "search_page", params(t, map[string]any{"pattern": `\$\d+\.\d\d`, "regex": true, "css_scope": "#prices"}))
		if err != nil {
			t.Fatalf("search: %v", err)
		}
		// Three prices in the table; "$50" in the notes is outside the scope
		// and has no cents.
		if !strings.Contains(rec.Result.Text, "Found 3 match") {
			t.Fatalf("regex in #prices: %q\n%s", rec.Result.Text, rec.Result.ReadOnce)
		}
		for _, p := range []string{"«$12.50»", "«$8.00»", "«$3.25»"} {
			if !strings.Contains(rec.Result.ReadOnce, p) {
				t.Errorf("missing %s in\n%s", p, rec.Result.ReadOnce)
			}
		}
		if _, err := d.Do(ctx, "search_page", params(t, map[string]any{"pattern": "(", "regex": true})); err == nil || !strings.Contains(err.Error(), "invalid regular expression") {
			t.Errorf("a bad regex: %v", err)
		}
		if _, err := d.Do(ctx, "search_page", params(t, map[string]any{"pattern": "x", "css_scope": "#nothing-here"})); err == nil || !strings.Contains(err.Error(), "no element matches") {
			t.Errorf("an empty scope: %v", err)
		}
	})

	t.Run("catastrophic regex is stopped, the page lives", func(t *testing.T) {
		evalPage(t, s, `(() => { const p = document.createElement('p'); p.id = 'long'; p.textContent = 'a'.repeat(40) + '!'; document.body.append(p); return true; })()`, new(bool))
		_, err := d.Do(ctx, "search_page", params(t, map[string]any{"pattern": `(a+)+$`, "regex": true, "css_scope": "#long"}))
		if err == nil || !strings.Contains(err.Error(), "was stopped") {
			t.Fatalf("a backtracking regex: %v", err)
		}
		var title string
		evalPage(t, s, `document.title`, &title)
		if title == "" {
			t.Fatal("the page does not answer after the stopped search")
		}
	})

	t.Run("find_elements shows indexes", func(t *testing.T) {
		rec, err := d.Do(ctx, "find_elements", params(t, map[string]any{"selector": "td.price"}))
		if err != nil {
			t.Fatalf("find: %v", err)
		}
		if !strings.Contains(rec.Result.Text, "3 element(s)") || strings.Count(rec.Result.ReadOnce, "<td class=\"price\">") != 3 || !strings.Contains(rec.Result.ReadOnce, "$8.00") {
			t.Fatalf("td.price: %q\n%s", rec.Result.Text, rec.Result.ReadOnce)
		}
		buy := indexWhere(t, o.State, "id", "buy")
		rec, err = d.Do(ctx, "find_elements", params(t, map[string]any{"selector": "#buy, #more", "attributes": []string{"id", "href"}}))
		if err != nil {
			t.Fatalf("find: %v", err)
		}
		if !strings.Contains(rec.Result.ReadOnce, "["+strconv.Itoa(buy)+"]<button id=\"buy\"> Buy now") || !strings.Contains(rec.Result.ReadOnce, `href="/other.html"`) {
			t.Fatalf("#buy, #more (buy is %d):\n%s", buy, rec.Result.ReadOnce)
		}
		if _, err := d.Do(ctx, "find_elements", params(t, map[string]any{"selector": "td[["})); err == nil || !strings.Contains(err.Error(), "invalid CSS selector") {
			t.Errorf("a bad selector: %v", err)
		}
	})

	t.Run("save_as_pdf writes a readable PDF", func(t *testing.T) {
		rec, err := d.Do(ctx, "save_as_pdf", params(t, map[string]any{"paper_format": "A4"}))
		if err != nil {
			t.Fatalf("save_as_pdf: %v", err)
		}
		if len(rec.Result.Files) != 1 || filepath.Base(rec.Result.Files[0]) != "Gopher-Shop-Price-list.pdf" {
			t.Fatalf("files %v (%q)", rec.Result.Files, rec.Result.Text)
		}
		b, err := os.ReadFile(rec.Result.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.Contains(b[len(b)-64:], []byte("%%EOF")) {
			t.Fatalf("not a complete PDF: %d bytes, starts %q", len(b), b[:min(16, len(b))])
		}
		if _, err := d.Do(ctx, "save_as_pdf", params(t, map[string]any{"file_name": "../out.pdf"})); !errors.Is(err, agent.ErrFileName) {
			t.Errorf("a path as file name: %v", err)
		}
		if _, err := d.Do(ctx, "save_as_pdf", params(t, map[string]any{"file_name": "nul.pdf"})); !errors.Is(err, agent.ErrFileName) || !strings.Contains(err.Error(), "device name") {
			t.Errorf("a Windows device name: %v", err)
		}
		if _, err := d.Do(ctx, "save_as_pdf", params(t, map[string]any{"file_name": "a.pdf", "paper_format": "B7"})); err == nil || !strings.Contains(err.Error(), "unknown paper format") {
			t.Errorf("an unknown paper: %v", err)
		}
	})
}

// With coordinate clicks on, click takes a point of the screenshot and it
// lands on the canvas there; index and coordinates together are refused.
func TestCoordinateClickOnCanvas(t *testing.T) {
	set := settings(t)
	on := true
	set.CoordinateClicks = &on
	ctx, s, d, o := queriesPage(t, set, true)
	buy := indexWhere(t, o.State, "id", "buy")
	var r struct{ X, Y float64 }
	evalPage(t, s, `(() => { const r = document.getElementById('pad').getBoundingClientRect(); return {X: r.left, Y: r.top}; })()`, &r)
	rec, err := d.Do(ctx, "click", params(t, map[string]any{"coordinate_x": r.X + 50, "coordinate_y": r.Y + 40}))
	if err != nil {
		t.Fatalf("coordinate click: %+v %v", rec, err)
	}
	var hits [][]int
	evalPage(t, s, `window.hits`, &hits)
	if len(hits) != 1 || hits[0][0] < 49 || hits[0][0] > 51 || hits[0][1] < 39 || hits[0][1] > 41 {
		t.Fatalf("canvas hits %v, want one at (50, 40); result %q", hits, rec.Text())
	}
	if _, err := d.Do(ctx, "click", params(t, map[string]any{"index": buy, "coordinate_x": 5, "coordinate_y": 5})); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("index and coordinates: %v", err)
	}
}

// page_info names the sideways extent only when the page scrolls sideways.
func TestBrowserStateTextPageInfoSideways(t *testing.T) {
	st := &events.BrowserState{URL: "http://127.0.0.1/", Page: events.PageInfo{ViewportWidth: 1000, ViewportHeight: 800, PixelsBelow: 1600}}
	if got := agent.BrowserStateText(st, 0); !strings.Contains(got, "<page_info>0.0 pages above, 2.0 pages below</page_info>") {
		t.Errorf("vertical page:\n%s", got)
	}
	st.Page.PixelsRight = 500
	if got := agent.BrowserStateText(st, 0); !strings.Contains(got, "<page_info>0.0 pages above, 2.0 pages below, 0.0 pages left, 0.5 pages right</page_info>") {
		t.Errorf("wide page:\n%s", got)
	}
}

// The click offered to the model takes coordinates for the model families
// that point well (with vision), through agent.New and through a Driver's
// RunTask alike, and not for others.
func TestCoordinateClicksReachTheModel(t *testing.T) {
	done := []scripted.Step{{Action: "done", Params: map[string]any{"text": "ok", "success": true}}}
	offersPoint := func(m *scripted.Model) bool {
		reqs := m.Requests()
		if len(reqs) == 0 || reqs[0].Schema == nil {
			t.Fatal("no request with a schema")
		}
		// Compact: the action list is in the system prompt.
		return strings.Contains(reqs[0].Messages[0].TextContent(), "click{index?: int, coordinate_x?: number, coordinate_y?: number}")
	}
	for name, want := range map[string]bool{"anthropic:claude-sonnet-4-5": true, "openai:gpt-4.1": false} {
		model := scripted.New(done, scripted.WithName(name))
		set := settings(t)
		set.Vision = agent.VisionOn
		run(t, newAgent(t, "Say ok", model, agenttest.New(t, formSite()...), set), model)
		if got := offersPoint(model); got != want {
			t.Errorf("agent.New with %s: coordinates offered %v, want %v", name, got, want)
		}
	}

	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	set := settings(t)
	set.Vision = agent.VisionOn
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if _, err := d.Do(ctx, "navigate", params(t, map[string]any{"url": env.URL("/agent-queries.html")})); err != nil {
		t.Fatal(err)
	}
	model := scripted.New(done, scripted.WithName("anthropic:claude-sonnet-4-5"))
	if _, err := d.RunTask(ctx, model, "Say ok", agent.TaskOptions{MaxSteps: 2}); err != nil {
		t.Fatal(err)
	}
	if !offersPoint(model) {
		t.Error("Driver.RunTask with claude-sonnet-4-5: coordinates not offered")
	}
	if _, err := d.Do(ctx, "click", params(t, map[string]any{"coordinate_x": 5, "coordinate_y": 5})); !errors.Is(err, agent.ErrBadParams) {
		t.Errorf("after the task, the driver's own click takes coordinates again: %v", err)
	}
}
