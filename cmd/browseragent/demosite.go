package main

import (
	"crypto/sha256"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

//go:embed demosite
var demoFiles embed.FS

// Application is one submitted job application, as the demo site received it.
type Application struct {
	Job, Name, Email, Experience string
	CVName                       string
	CVSize                       int64
	Consent                      bool
	Reference                    string
}

// demoSite is the bundled careers site the demo agent applies on. It runs
// on a loopback port and needs no network.
type demoSite struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu   sync.Mutex
	apps []Application
}

var confirmation = template.Must(template.New("ok").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Application received — Gopher Works</title><link rel="stylesheet" href="/style.css"></head>
<body><header><h1>Gopher Works</h1><nav><a href="/">Careers</a></nav></header>
<main><div class="ok"><h2>Application received</h2>
<p>Thank you, {{.Name}}. Your reference is <strong id="reference">{{.Reference}}</strong>.</p>
<ul><li>Email: {{.Email}}</li><li>Experience: {{.Experience}} years</li><li>CV: {{.CVName}} ({{.CVSize}} bytes)</li></ul>
</div></main></body></html>`))

func startDemoSite() (*demoSite, error) {
	root, err := fs.Sub(demoFiles, "demosite")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo site: %w", err)
	}
	d := &demoSite{ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.FS(root)))
	mux.HandleFunc("POST /submit", d.submit)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(d.done)
		_ = d.srv.Serve(ln)
	}()
	return d, nil
}

// URL is the site's base URL (no trailing slash).
func (d *demoSite) URL() string { return "http://" + d.ln.Addr().String() }

// Applications returns what the site received.
func (d *demoSite) Applications() []Application {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Application(nil), d.apps...)
}

// Close stops the server and waits for it.
func (d *demoSite) Close() error {
	err := d.srv.Close()
	<-d.done
	return err
}

func (d *demoSite) submit(w http.ResponseWriter, r *http.Request) {
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
	d.mu.Lock()
	d.apps = append(d.apps, app)
	d.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = confirmation.Execute(w, app)
}
