package liveview

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/internal/routine"
	"github.com/browseragent/browseragent/session"
)

// Defaults of Config.
const (
	DefaultAddr      = "127.0.0.1:0"
	DefaultQuality   = 60
	DefaultMaxWidth  = 1280
	DefaultMaxHeight = 800
)

// Errors.
var (
	// ErrConfig is wrapped by New for an invalid Config (a non-loopback
	// address among them).
	ErrConfig = errors.New("liveview: invalid config")
	// ErrBusy is returned by a hand-off while another one is active.
	ErrBusy = errors.New("liveview: another hand-off is active")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("liveview: server closed")
)

// cdpTimeout bounds each CDP call the live view makes.
const cdpTimeout = 10 * time.Second

//go:embed assets
var assets embed.FS

// Config configures a Server.
type Config struct {
	// Addr is the listen address; its host must be a loopback IP or
	// "localhost". Default DefaultAddr (a free port).
	Addr string
	// Quality is the screencast's JPEG quality, 1..100. Default
	// DefaultQuality.
	Quality int
	// MaxWidth and MaxHeight bound the frame size in pixels. Defaults
	// DefaultMaxWidth and DefaultMaxHeight.
	MaxWidth, MaxHeight int
	// Logger gets lifecycle and error messages (never what the person
	// types). Default: the session's logger, named "liveview".
	Logger *zap.Logger
}

// Status is what GET ./status answers.
type Status struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	TabID  string `json:"tab_id"`
	Width  int    `json:"width"`  // viewport, CSS px
	Height int    `json:"height"` // viewport, CSS px
	// Tabs are the session's tabs; the person may switch to one (POST
	// ./tab) during a hand-off.
	Tabs []Tab `json:"tabs"`
	// Active reports whether a hand-off is waiting for the person.
	Active bool `json:"active"`
	// By is who asked (HumanRequest.By: "model", "initial",
	// "policy:<name>"), Asker words it, Origin is the scheme and host of
	// the page the hand-off began on, and Reason the request's reason,
	// cleaned by CleanText: the model's words, which a page may have
	// inspired.
	By     string `json:"by,omitempty"`
	Asker  string `json:"asker,omitempty"`
	Origin string `json:"origin,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Since is when the active hand-off began.
	Since   time.Time `json:"since,omitzero"`
	Viewers int       `json:"viewers"`
	// Frames counts the frames received from the browser so far.
	Frames int `json:"frames"`
	// FrameTab is the tab the latest frame shows, and FrameWidth and
	// FrameHeight the size of the page area it shows (CSS px): the page
	// maps a click on the image with them.
	FrameTab    string  `json:"frame_tab,omitempty"`
	FrameWidth  float64 `json:"frame_width,omitempty"`
	FrameHeight float64 `json:"frame_height,omitempty"`
}

// Tab is one of the session's tabs in Status.
type Tab struct {
	ID      string `json:"id"`
	URL     string `json:"url"`
	Title   string `json:"title"`
	Focused bool   `json:"focused,omitempty"`
}

// Server is a live view of one session; see the package documentation.
// Close it when done; it does not stop the session.
type Server struct {
	s     *session.Session
	cfg   Config
	log   *zap.Logger
	token string
	ln    net.Listener
	http  *http.Server
	group *routine.Group // the caster and the HTTP server
	serve chan struct{}  // closed when Serve returned

	mu      sync.Mutex
	closed  bool
	viewers map[chan []byte]struct{}
	casting bool // the caster goroutine runs
	frames  int
	last    []byte  // the latest frame, for a viewer who arrives
	lastTab string  // the tab last was taken from
	lastW   float64 // the page area last shows, CSS px
	lastH   float64
	hand    *handoff // the active hand-off, or nil
}

// handoff is one active hand-off.
type handoff struct {
	req    agent.HumanRequest // Reason cleaned
	origin string
	since  time.Time
	done   chan string // receives the person's note once
	// inflight counts the person's inputs being dispatched: Add only under
	// Server.mu while this is the active hand-off, so that release, having
	// cleared it, waits for the last one.
	inflight sync.WaitGroup
	stop     chan struct{} // closed by release: ends the tab watcher
	watched  chan struct{} // closed when the tab watcher returned
}

// New validates cfg and starts serving a live view of s (started or not).
func New(s *session.Session, cfg Config) (*Server, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil session", ErrConfig)
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Quality == 0 {
		cfg.Quality = DefaultQuality
	}
	if cfg.MaxWidth == 0 {
		cfg.MaxWidth = DefaultMaxWidth
	}
	if cfg.MaxHeight == 0 {
		cfg.MaxHeight = DefaultMaxHeight
	}
	if cfg.Quality < 1 || cfg.Quality > 100 {
		return nil, fmt.Errorf("%w: Quality %d (want 1..100)", ErrConfig, cfg.Quality)
	}
	if cfg.MaxWidth < 1 || cfg.MaxHeight < 1 {
		return nil, fmt.Errorf("%w: MaxWidth/MaxHeight %dx%d (want positive)", ErrConfig, cfg.MaxWidth, cfg.MaxHeight)
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: Addr %q: %v", ErrConfig, cfg.Addr, err)
	}
	if !loopbackHost(host) {
		return nil, fmt.Errorf("%w: Addr %q is not a loopback address (the live view gives control of the browser)", ErrConfig, cfg.Addr)
	}
	log := cfg.Logger
	if log == nil {
		log = s.Logger().Named("liveview")
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("liveview: token: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("liveview: listen: %w", err)
	}
	v := &Server{
		s: s, cfg: cfg, log: log, token: hex.EncodeToString(b[:]), ln: ln,
		group:   routine.New(context.Background()),
		serve:   make(chan struct{}),
		viewers: map[chan []byte]struct{}{},
	}
	v.http = &http.Server{
		Handler:           v,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(log),
	}
	if err := v.group.Go("liveview http", func(context.Context) {
		defer close(v.serve)
		if err := v.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("live view server ended", zap.Error(err))
		}
	}); err != nil {
		ln.Close()
		return nil, err
	}
	return v, nil
}

// URL returns the live view's address, token included. Whoever has it can
// drive the browser during a hand-off: show it to the person only.
func (v *Server) URL() string {
	return "http://" + v.ln.Addr().String() + "/" + v.token + "/"
}

// Session returns the session the live view shows.
func (v *Server) Session() *session.Session { return v.s }

// Close stops serving: open frame streams end, the screencast stops and
// every goroutine of the server returns before Close does (or ctx ends). An
// active hand-off keeps waiting for its other channels.
func (v *Server) Close(ctx context.Context) error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	v.mu.Unlock()
	// Stop the group first: frame streams watch its context, so Shutdown
	// does not wait for them.
	stopped := make(chan error, 1)
	go func() { stopped <- v.group.Stop(ctx) }()
	err := v.http.Shutdown(ctx)
	if err != nil {
		v.http.Close()
	}
	return errors.Join(err, <-stopped)
}

// Status returns the live view's status (the focused tab's URL, title and
// viewport; the tabs; the hand-off).
func (v *Server) Status(ctx context.Context) Status {
	var st Status
	st.TabID = v.s.FocusedTab()
	st.Tabs = []Tab{}
	for _, t := range v.s.Tabs() {
		if t.TargetID == st.TabID {
			st.URL, st.Title = t.URL, t.Title
		}
		st.Tabs = append(st.Tabs, Tab{ID: t.TargetID, URL: t.URL, Title: t.Title, Focused: t.TargetID == st.TabID})
	}
	if w, h, err := v.viewport(ctx); err == nil {
		st.Width, st.Height = w, h
	}
	v.mu.Lock()
	if h := v.hand; h != nil {
		st.Active, st.By, st.Asker, st.Origin, st.Reason, st.Since = true, h.req.By, Asker(h.req.By), h.origin, h.req.Reason, h.since
	}
	st.Viewers, st.Frames = len(v.viewers), v.frames
	st.FrameTab, st.FrameWidth, st.FrameHeight = v.lastTab, v.lastW, v.lastH
	v.mu.Unlock()
	return st
}

// begin makes a hand-off of req active and starts its tab watcher;
// release ends it and returns once no input of the person is being
// dispatched and the watcher returned.
func (v *Server) begin(req agent.HumanRequest) (done <-chan string, release func(), err error) {
	req.Reason = CleanText(req.Reason, maxReason)
	h := &handoff{req: req, origin: Origin(req.URL), since: time.Now(), done: make(chan string, 1),
		stop: make(chan struct{}), watched: make(chan struct{})}
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil, nil, ErrClosed
	}
	if v.hand != nil {
		v.mu.Unlock()
		return nil, nil, ErrBusy
	}
	v.hand = h
	v.mu.Unlock()
	known := map[string]bool{}
	for _, t := range v.s.Tabs() {
		known[t.TargetID] = true
	}
	if err := v.group.Go("liveview tab watcher", func(ctx context.Context) {
		defer close(h.watched)
		v.watchTabs(ctx, h.stop, known)
	}); err != nil {
		close(h.watched)
	}
	return h.done, func() {
		v.mu.Lock()
		if v.hand == h {
			v.hand = nil
		}
		v.mu.Unlock()
		close(h.stop)
		<-h.watched
		h.inflight.Wait() // each bounded by cdpTimeout
	}, nil
}

// enter counts one input of the person in the active hand-off, or
// reports that none is active; leave ends it.
func (v *Server) enter() (leave func(), ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h := v.hand
	if h == nil {
		return nil, false
	}
	h.inflight.Add(1)
	return h.inflight.Done, true
}

// ServeHTTP implements http.Handler: the token, Host and Origin checks,
// then the endpoints.
func (v *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Cache-Control", "no-store")
	host := r.Host
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		host = h
	}
	if !loopbackHost(host) {
		http.Error(w, "forbidden: the live view answers loopback host names only", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && r.Method != http.MethodGet {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
			return
		}
	}
	tok, p, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(v.token)) != 1 {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodPost {
		if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
			http.Error(w, "want Content-Type: application/json", http.StatusUnsupportedMediaType)
			return
		}
	}
	switch p {
	case "", "live.js", "live.css":
		v.asset(w, r, p)
	case "frames":
		v.frameStream(w, r)
	case "status":
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), cdpTimeout)
		defer cancel()
		writeJSON(w, http.StatusOK, v.Status(ctx))
	case "input":
		v.input(w, r)
	case "tab":
		v.tab(w, r)
	case "done":
		v.done(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (v *Server) asset(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	ctype := map[string]string{"": "text/html; charset=utf-8", "live.js": "text/javascript; charset=utf-8", "live.css": "text/css; charset=utf-8"}[name]
	if name == "" {
		name = "index.html"
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	w.Write(b)
}

// done handles POST ./done.
func (v *Server) done(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body struct {
		Note string `json:"note"`
	}
	if err := decodeBody(r, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v.mu.Lock()
	h := v.hand
	v.mu.Unlock()
	if h == nil {
		http.Error(w, "no hand-off is active", http.StatusConflict)
		return
	}
	select {
	case h.done <- strings.TrimSpace(body.Note):
	default: // said done already
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// decodeBody decodes a small JSON body strictly; an empty body is {}.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("bad JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("bad JSON body: data after the JSON value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// loopbackHost reports whether host names this machine's loopback.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
