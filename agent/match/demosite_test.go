package match_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/match"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/demosite"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs/actions"
	"github.com/browseragent/browseragent/watchdogs/dom"
)

// observer observes pages of the demo site in real Chromium.
type observer struct {
	t   *testing.T
	ctx context.Context
	d   *agent.Driver
}

func newObserver(t *testing.T, ctx context.Context) *observer {
	t.Helper()
	env := testbrowser.Start(t)
	s := session.New(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew},
		session.WithWatchdogs(actions.New(actions.Config{}), dom.New(dom.Config{})))
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	d, err := agent.NewDriver(s, agent.Settings{RunDir: t.TempDir(), Vision: agent.VisionOff})
	if err != nil {
		t.Fatal(err)
	}
	return &observer{t: t, ctx: ctx, d: d}
}

// open loads url and returns its observation's elements.
func (o *observer) open(url string) map[int]events.ElementInfo {
	o.t.Helper()
	b, _ := json.Marshal(map[string]string{"url": url})
	if _, err := o.d.Do(o.ctx, "navigate", b); err != nil {
		o.t.Fatalf("navigate %s: %v", url, err)
	}
	return o.state()
}

func (o *observer) state() map[int]events.ElementInfo {
	o.t.Helper()
	obs, err := o.d.State(o.ctx, agent.StateOptions{})
	if err != nil {
		o.t.Fatal(err)
	}
	return obs.State.Elements
}

// click clicks the element named name and returns the new observation.
func (o *observer) click(elems map[int]events.ElementInfo, name string) map[int]events.ElementInfo {
	o.t.Helper()
	b, _ := json.Marshal(map[string]int{"index": byName(o.t, elems, "", name)})
	if _, err := o.d.Do(o.ctx, "click", b); err != nil {
		o.t.Fatalf("click %q: %v", name, err)
	}
	return o.state()
}

// byName is the index of the one element with tag (any when "") whose
// accessible name is name.
func byName(t *testing.T, elems map[int]events.ElementInfo, tag, name string) int {
	t.Helper()
	found := 0
	for i, e := range elems {
		if e.Name == name && (tag == "" || strings.EqualFold(e.Tag, tag)) {
			if found != 0 {
				t.Fatalf("two elements named %q", name)
			}
			found = i
		}
	}
	if found == 0 {
		var names []string
		for _, e := range elems {
			names = append(names, e.Tag+" "+e.Name)
		}
		t.Fatalf("no element named %q among %q", name, names)
	}
	return found
}

// The demo's targets, recorded on the original careers site as real
// Chromium observes it, are found on every version where they exist, by
// what identifies them, never by position; the control moved into a menu
// is found once the menu is open, and on the closed posting nothing is.
func TestFindOnDemoSiteVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := newObserver(t, ctx)
	type target struct{ page, tag, name string }
	targets := []target{
		{"/", "a", "Senior Go Engineer"},
		{"/jobs/go-engineer.html", "a", "Apply for this job"},
		{"/apply.html?job=go-engineer", "input", "Full name"},
		{"/apply.html?job=go-engineer", "input", "Email"},
		{"/apply.html?job=go-engineer", "select", "Years of Go experience"},
		{"/apply.html?job=go-engineer", "input", "CV (PDF or text)"},
		{"/apply.html?job=go-engineer", "input", "I agree to the processing of my data"},
		{"/apply.html?job=go-engineer", "button", "Submit application"},
	}
	orig, err := demosite.Start(demosite.Original)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orig.Close() })
	recs := map[target]match.Element{}
	pages := map[string]map[int]events.ElementInfo{}
	for _, tg := range targets {
		if pages[tg.page] == nil {
			pages[tg.page] = o.open(orig.URL() + tg.page)
		}
		rec, ok := match.Record(byName(t, pages[tg.page], tg.tag, tg.name), pages[tg.page])
		if !ok {
			t.Fatalf("record %v", tg)
		}
		recs[tg] = rec
	}
	for _, v := range []demosite.Version{demosite.Original, demosite.Renamed, demosite.Banner, demosite.Reordered, demosite.Menu, demosite.Closed} {
		t.Run(string(v), func(t *testing.T) {
			site, err := demosite.Start(v)
			if err != nil {
				t.Fatal(err)
			}
			defer site.Close()
			o.t = t
			pages := map[string]map[int]events.ElementInfo{}
			for _, tg := range targets {
				if (v == demosite.Menu || v == demosite.Closed) && tg.page == "/apply.html?job=go-engineer" {
					continue // reached through the job page's control, checked below
				}
				if pages[tg.page] == nil {
					pages[tg.page] = o.open(site.URL() + tg.page)
				}
				elems := pages[tg.page]
				r := match.Find(recs[tg], elems)
				moved := tg.name == "Apply for this job" && (v == demosite.Menu || v == demosite.Closed)
				if moved {
					if r.Found() || r.Unique {
						t.Fatalf("%q found on the %s version, where it is not visible: %+v", tg.name, v, r)
					}
					if v == demosite.Menu {
						open := o.click(elems, "More")
						r = match.Find(recs[tg], open)
						if !r.Unique || r.Strategy != match.ByRoleName || open[r.Index].Name != tg.name {
							t.Fatalf("after opening the menu: %+v, want %q by role_name", r, tg.name)
						}
					}
					continue
				}
				if !r.Unique || r.Ambiguous || elems[r.Index].Name != tg.name || !strings.EqualFold(elems[r.Index].Tag, tg.tag) {
					t.Fatalf("%v: %+v (chose %+v)", tg, r, elems[r.Index])
				}
				if v == demosite.Original && r.Strategy != match.ByHash {
					t.Errorf("%v on the original: strategy %s, want hash", tg, r.Strategy)
				}
				renamed := recs[tg].Attrs["id"] != "" || recs[tg].Attrs["class"] != ""
				if v == demosite.Renamed && renamed && (r.Strategy == match.ByHash || r.Strategy == match.ByStableHash) {
					t.Errorf("%v renamed: found by %s, though its id or class changed", tg, r.Strategy)
				}
				t.Logf("%s %q: %s, score %.2f", v, tg.name, r.Strategy, r.Score)
			}
		})
	}
}

// The DOM watchdog names an iframe's elements by their frame (real
// Chromium): a consent banner's "Accept" recorded in its iframe is not
// taken for the page's own "Accept" once the banner is gone.
func TestFrameOfElementsInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mux := http.NewServeMux()
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<!doctype html><html><body>" + body + "</body></html>"))
		}
	}
	mux.HandleFunc("/consent.html", html(`<p>Cookies?</p><button>Accept</button>`))
	mux.HandleFunc("/with", html(`<main><button>Accept</button></main><iframe src="/consent.html?lang=en" width="300" height="120"></iframe>`))
	mux.HandleFunc("/without", html(`<main><button>Accept</button></main>`))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	o := newObserver(t, ctx)

	// The iframe loads after the page: poll until it is observed.
	var with map[int]events.ElementInfo
	var framed, own int
	for {
		with = o.open(srv.URL + "/with")
		framed, own = 0, 0
		for i, e := range with {
			if e.Name != "Accept" {
				continue
			}
			if e.Frame == "" {
				own = i
			} else {
				framed = i
			}
		}
		if framed != 0 && own != 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the iframe's button never observed: %+v", with)
		}
	}
	if f := with[framed].Frame; f != "/consent.html" {
		t.Fatalf("iframe element's Frame = %q, want /consent.html (same origin: path, no query)", f)
	}
	rec, ok := match.Record(framed, with)
	if !ok || rec.Frame != "/consent.html" || rec.Similar != 1 {
		t.Fatalf("recorded %+v", rec)
	}
	r := match.Find(rec, with)
	if !r.Unique || r.Index != framed || r.Strategy != match.ByHash {
		t.Fatalf("on the same page: %+v, want %d by hash", r, framed)
	}
	without := o.open(srv.URL + "/without")
	r = match.Find(rec, without)
	if r.Found() || len(r.Candidates) != 1 || r.Candidates[0].Conflict != "frame" {
		t.Fatalf("banner gone: %+v, want nothing, the page's Accept ruled out by its frame", r)
	}
	top, _ := match.Record(own, with)
	r = match.Find(top, without)
	if !r.Unique || without[r.Index].Frame != "" {
		t.Fatalf("the page's own Accept: %+v", r)
	}
}
