package temporal

import (
	"fmt"
	"html/template"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// site is the fixture: per task ID a three-page form (GET /t/ID/N) whose
// submissions (POST /t/ID/N, then 303 to the next page, then /t/ID/done)
// it counts per (task, page).
type site struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	form *template.Template
	end  *template.Template

	mu     sync.Mutex
	counts map[string]int // "ID/N" → submissions
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{
		done:   make(chan struct{}),
		counts: map[string]int{},
		form:   template.Must(template.ParseFiles(filepath.Join("testdata", "form.html"))),
		end:    template.Must(template.ParseFiles(filepath.Join("testdata", "done.html"))),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET /t/{id}/done", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = s.end.Execute(w, map[string]any{"ID": r.PathValue("id")})
	})
	mux.HandleFunc("GET /t/{id}/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 1 || n > 3 {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = s.form.Execute(w, map[string]any{"ID": r.PathValue("id"), "Page": n})
	})
	mux.HandleFunc("POST /t/{id}/{n}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 1 || n > 3 {
			http.NotFound(w, r)
			return
		}
		if r.FormValue("answer") == "" {
			http.Redirect(w, r, fmt.Sprintf("/t/%s/%d", id, n), http.StatusSeeOther)
			return
		}
		s.mu.Lock()
		s.counts[fmt.Sprintf("%s/%d", id, n)]++
		s.mu.Unlock()
		next := fmt.Sprintf("/t/%s/%d", id, n+1)
		if n == 3 {
			next = fmt.Sprintf("/t/%s/done", id)
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = s.srv.Close()
		<-s.done
	})
	return s
}

// URL is the first page of task id.
func (s *site) URL(id string) string { return fmt.Sprintf("http://%s/t/%s/1", s.ln.Addr(), id) }

// submissions is how many times page n of task id was submitted.
func (s *site) submissions(id string, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[fmt.Sprintf("%s/%d", id, n)]
}
