// Package demosite is the bundled careers site the demo agent applies on,
// in several versions of the same site so that a run recorded on one can be
// replayed on the others (docs/replay.md). It serves on a loopback port and
// needs no network. The scripted model's steps for the demo (Script) and
// for healing a replay on the menu version (HealScript) live here too, so
// the CLI, the agent's tests and the replay measurement share them.
package demosite

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	texttemplate "text/template"
	"time"
)

//go:embed site
var files embed.FS

// Version is one version of the site. Every version serves the same pages
// at the same paths with the same visible texts, except where its doc says.
type Version string

// The site's versions.
const (
	// Original is the site the demo was written against.
	Original Version = "original"
	// Renamed renames every id and class (as a new build of a CSS-modules
	// front end does); labels, texts and form field names are unchanged.
	Renamed Version = "renamed"
	// Banner inserts an announcement banner, with its own link and button,
	// at the top of every page: every later element's position and XPath
	// shift, and the page has interactive elements the recording never saw.
	Banner Version = "banner"
	// Reordered lists the job rows on the index page in another order (the
	// Senior Go Engineer row moves from second to last).
	Reordered Version = "reordered"
	// Menu moves the job page's "Apply for this job" link into a closed
	// "More" menu (<details><summary>More</summary>…): the link is not
	// visible until the menu is opened, so a replay must heal (click "More",
	// see HealScript) or stop.
	Menu Version = "menu"
	// Closed closes the posting: the job page has no "Apply for this job"
	// control, and the form and submissions answer 410 Gone. Applying is
	// impossible; a replay must fail naming the step.
	Closed Version = "closed"
)

// Versions lists every version, Original first.
func Versions() []Version { return []Version{Original, Renamed, Banner, Reordered, Menu, Closed} }

// ErrUnknownVersion is returned by ParseVersion for a name that is not a
// version.
var ErrUnknownVersion = errors.New("demosite: unknown site version")

// ParseVersion returns the version named s ("" is Original).
func ParseVersion(s string) (Version, error) {
	if s == "" {
		return Original, nil
	}
	for _, v := range Versions() {
		if string(v) == s {
			return v, nil
		}
	}
	names := make([]string, 0, len(Versions()))
	for _, v := range Versions() {
		names = append(names, string(v))
	}
	return "", fmt.Errorf("%w %q (one of %s)", ErrUnknownVersion, s, strings.Join(names, ", "))
}

// Application is one submitted job application, as the site received it.
type Application struct {
	Job, Name, Email, Experience string
	CVName                       string
	CVSize                       int64
	Consent                      bool
	Reference                    string
}

type job struct{ Slug, Title, Where string }

var jobs = []job{
	{"frontend", "Frontend Developer", "Remote"},
	{"go-engineer", "Senior Go Engineer", "Berlin or remote"},
	{"sre", "Site Reliability Engineer", "Lisbon"},
}

// pageData is what a page template sees.
type pageData struct {
	Title              string
	Home, Banner, Menu bool
	Closed             bool
	Jobs               []job
	App                Application
}

// route is one page: its template and title.
type route struct{ tmpl, title string }

var routes = map[string]route{
	"/":                      {"index.html", "Gopher Works — Careers"},
	"/index.html":            {"index.html", "Gopher Works — Careers"},
	"/about.html":            {"about.html", "About — Gopher Works"},
	"/jobs/frontend.html":    {"frontend.html", "Frontend Developer — Gopher Works"},
	"/jobs/go-engineer.html": {"go-engineer.html", "Senior Go Engineer — Gopher Works"},
	"/jobs/sre.html":         {"sre.html", "Site Reliability Engineer — Gopher Works"},
	"/apply.html":            {"apply.html", "Apply — Gopher Works"},
}

// Site is a running version of the careers site.
type Site struct {
	v     Version
	pages *template.Template
	css   []byte
	srv   *http.Server
	ln    net.Listener
	done  chan struct{}

	mu   sync.Mutex
	apps []Application
}

// Start serves version v on 127.0.0.1 (a free port) until Close. An
// unknown v is an error wrapping ErrUnknownVersion.
func Start(v Version) (*Site, error) {
	if _, err := ParseVersion(string(v)); err != nil {
		return nil, err
	}
	s := &Site{v: v, done: make(chan struct{})}
	funcs := map[string]any{"id": s.rename, "cls": s.rename}
	pages, err := template.New("site").Funcs(funcs).ParseFS(files, "site/*.html", "site/jobs/*.html")
	if err != nil {
		return nil, fmt.Errorf("demosite: %w", err)
	}
	css, err := texttemplate.New("style.css").Funcs(funcs).ParseFS(files, "site/style.css")
	if err != nil {
		return nil, fmt.Errorf("demosite: %w", err)
	}
	var b bytes.Buffer
	if err := css.Execute(&b, nil); err != nil {
		return nil, fmt.Errorf("demosite: %w", err)
	}
	s.pages, s.css = pages, b.Bytes()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demosite: %w", err)
	}
	s.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", s.page)
	mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(s.css)
	})
	mux.HandleFunc("POST /submit", s.submit)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is the site's base URL (no trailing slash).
func (s *Site) URL() string { return "http://" + s.ln.Addr().String() }

// Version is the version served.
func (s *Site) Version() Version { return s.v }

// Applications returns what the site received, in order.
func (s *Site) Applications() []Application {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Application(nil), s.apps...)
}

// Close stops the server: it closes the listener and every connection and
// waits for the serving goroutine. A handler already running may still be
// finishing (they only render a page or record an application).
func (s *Site) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// rename is the templates' id and cls: the Renamed version gives every id
// and class a build-hash suffix, the others keep the name.
func (s *Site) rename(name string) string {
	if s.v == Renamed {
		return "gw" + name + "_k3x9"
	}
	return name
}

func (s *Site) data(title string) pageData {
	d := pageData{Title: title, Banner: s.v == Banner, Menu: s.v == Menu, Closed: s.v == Closed, Jobs: jobs}
	if s.v == Reordered {
		d.Jobs = []job{jobs[2], jobs[0], jobs[1]}
	}
	return d
}

func (s *Site) page(w http.ResponseWriter, r *http.Request) {
	rt, ok := routes[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	d := s.data(rt.title)
	d.Home = rt.tmpl == "index.html"
	status := http.StatusOK
	if rt.tmpl == "apply.html" && s.v == Closed {
		rt.tmpl, status = "closed.html", http.StatusGone
	}
	s.render(w, status, rt.tmpl, d)
}

func (s *Site) render(w http.ResponseWriter, status int, tmpl string, d pageData) {
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, tmpl, d); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (s *Site) submit(w http.ResponseWriter, r *http.Request) {
	if s.v == Closed {
		s.render(w, http.StatusGone, "closed.html", s.data("Apply — Gopher Works"))
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	app := Application{
		Job: r.FormValue("job"), Name: strings.TrimSpace(r.FormValue("name")), Email: r.FormValue("email"),
		Experience: r.FormValue("experience"), Consent: r.FormValue("consent") == "yes",
	}
	if f, h, err := r.FormFile("cv"); err == nil {
		n, _ := io.Copy(io.Discard, f)
		f.Close()
		app.CVName, app.CVSize = h.Filename, n
	}
	var missing []string
	for _, c := range []struct {
		ok   bool
		what string
	}{{app.Name != "", "name"}, {strings.Contains(app.Email, "@"), "email"}, {app.Experience != "", "experience"}, {app.CVName != "", "CV"}, {app.Consent, "consent"}} {
		if !c.ok {
			missing = append(missing, c.what)
		}
	}
	if len(missing) > 0 {
		http.Error(w, "Application incomplete: missing "+strings.Join(missing, ", "), http.StatusBadRequest)
		return
	}
	sum := sha256.Sum256([]byte(app.Name + "\x00" + app.Email))
	app.Reference = fmt.Sprintf("GW-%X", sum[:3])
	s.mu.Lock()
	s.apps = append(s.apps, app)
	s.mu.Unlock()
	d := s.data("Application received — Gopher Works")
	d.App = app
	s.render(w, http.StatusOK, "received.html", d)
}
