package testbrowser

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed testdata
var testdata embed.FS

// Site selects one of the fixture server's two listeners.
type Site int

const (
	// Site1 is served at http://127.0.0.1:PORT1.
	Site1 Site = 1
	// Site2 is served at http://localhost:PORT2, a different site from Site1, so
	// a Site2 iframe in a Site1 page is an out-of-process iframe.
	Site2 Site = 2
)

// MaxGenerated bounds /generated?n=.
const MaxGenerated = 200_000

// Server is the fixture web site, served on two loopback listeners.
//
// Routes (on both sites):
//   - /<file>.html: testdata files; "{{CROSS_ORIGIN}}" is replaced by the other
//     site's base URL and "{{SAME_ORIGIN}}" by this site's.
//   - /generated?n=N: N mixed elements (divs, buttons, links, inputs, text).
//   - /redirect?to=URL: 302 to URL (status overridable with &status=301|303|307|308).
//   - /download?name=NAME: an attachment named NAME (text/plain).
//   - /slow?ms=N: answers after N milliseconds (max 60000).
//
// Every request is recorded in a per-site log (Requests).
type Server struct {
	// URL1 is Site1's base URL, http://127.0.0.1:PORT1 (no trailing slash).
	URL1 string
	// URL2 is Site2's base URL, http://localhost:PORT2.
	URL2 string

	srv1, srv2 *http.Server
	wg         sync.WaitGroup

	mu  sync.Mutex
	log map[Site][]string
}

// NewServer starts the fixture server. Close stops it.
func NewServer() (*Server, error) {
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testbrowser: listen: %w", err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l1.Close()
		return nil, fmt.Errorf("testbrowser: listen: %w", err)
	}
	s := &Server{
		URL1: fmt.Sprintf("http://127.0.0.1:%d", l1.Addr().(*net.TCPAddr).Port),
		URL2: fmt.Sprintf("http://localhost:%d", l2.Addr().(*net.TCPAddr).Port),
		log:  map[Site][]string{},
	}
	s.srv1 = &http.Server{Handler: s.handler(Site1), ReadHeaderTimeout: 10 * time.Second}
	s.srv2 = &http.Server{Handler: s.handler(Site2), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); _ = s.srv1.Serve(l1) }()
	go func() { defer s.wg.Done(); _ = s.srv2.Serve(l2) }()
	return s, nil
}

// Close stops both listeners and closes every connection.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := errors.Join(s.srv1.Shutdown(ctx), s.srv2.Shutdown(ctx))
	if err != nil {
		err = errors.Join(s.srv1.Close(), s.srv2.Close())
	}
	s.wg.Wait()
	return err
}

// URL returns the base URL of site.
func (s *Server) URL(site Site) string {
	if site == Site2 {
		return s.URL2
	}
	return s.URL1
}

// Requests returns the request URIs (path?query) that reached site, in order.
func (s *Server) Requests(site Site) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log[site]...)
}

// Hits counts the requests to site whose path equals p.
func (s *Server) Hits(site Site, p string) int {
	n := 0
	for _, r := range s.Requests(site) {
		if before, _, _ := strings.Cut(r, "?"); before == p {
			n++
		}
	}
	return n
}

// ResetRequests clears the request logs.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = map[Site][]string{}
}

func (s *Server) handler(site Site) http.Handler {
	self, other := s.URL1, s.URL2
	if site == Site2 {
		self, other = s.URL2, s.URL1
	}
	files, _ := fs.Sub(testdata, "testdata")
	static := http.FileServer(http.FS(files))
	mux := http.NewServeMux()
	mux.HandleFunc("/generated", handleGenerated)
	mux.HandleFunc("/redirect", handleRedirect)
	mux.HandleFunc("/download", handleDownload)
	mux.HandleFunc("/slow", handleSlow)
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/" {
			p = "/index.html"
		}
		if strings.HasSuffix(p, ".html") {
			data, err := fs.ReadFile(files, strings.TrimPrefix(path.Clean(p), "/"))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			data = bytes.ReplaceAll(data, []byte("{{CROSS_ORIGIN}}"), []byte(other))
			data = bytes.ReplaceAll(data, []byte("{{SAME_ORIGIN}}"), []byte(self))
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(data)
			return
		}
		static.ServeHTTP(w, r)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log[site] = append(s.log[site], r.URL.RequestURI())
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

func handleGenerated(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 || n > MaxGenerated {
		http.Error(w, fmt.Sprintf("n must be an integer in [0, %d]", MaxGenerated), http.StatusBadRequest)
		return
	}
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=\"utf-8\"><title>Generated ")
	b.WriteString(strconv.Itoa(n))
	b.WriteString("</title></head><body>\n")
	for i := 0; i < n; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "<div id=\"e%d\" class=\"box\">Box %d</div>\n", i, i)
		case 1:
			fmt.Fprintf(&b, "<button id=\"e%d\" onclick=\"window.last=%d\">Button %d</button>\n", i, i, i)
		case 2:
			fmt.Fprintf(&b, "<a id=\"e%d\" href=\"/other.html?i=%d\">Link %d</a>\n", i, i, i)
		case 3:
			fmt.Fprintf(&b, "<input id=\"e%d\" name=\"f%d\" placeholder=\"Input %d\">\n", i, i, i)
		case 4:
			fmt.Fprintf(&b, "<span id=\"e%d\">Text %d</span>\n", i, i)
		}
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

func handleRedirect(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if to == "" {
		http.Error(w, "missing to parameter", http.StatusBadRequest)
		return
	}
	code := http.StatusFound
	if st := r.URL.Query().Get("status"); st != "" {
		c, err := strconv.Atoi(st)
		if err != nil || c < 300 || c > 399 {
			http.Error(w, "status must be a 3xx code", http.StatusBadRequest)
			return
		}
		code = c
	}
	http.Redirect(w, r, to, code)
}

func handleDownload(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" || strings.ContainsAny(name, "/\\\"\r\n") {
		http.Error(w, "name must be a plain file name", http.StatusBadRequest)
		return
	}
	body := "browseragent download fixture: " + html.EscapeString(name) + "\n"
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write([]byte(body))
}

func handleSlow(w http.ResponseWriter, r *http.Request) {
	ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
	if err != nil || ms < 0 || ms > 60000 {
		http.Error(w, "ms must be an integer in [0, 60000]", http.StatusBadRequest)
		return
	}
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte("<!doctype html><title>Slow</title><p>slow done</p>"))
}
