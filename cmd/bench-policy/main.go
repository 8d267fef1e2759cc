// Command bench-policy measures what the URL policy's scopes cost on page
// loads: a page with 200 sub-resources served on loopback (cache off, so
// every load hits the network) is loaded by one launched browser per
// configuration, the configurations interleaved round by round so that the
// machine's load drifts over all of them alike.
//
//	go run ./cmd/bench-policy [-n 20] [-warmup 3] [-configs none,navigations,requests]
//
// Configurations (-configs, comma-separated; the first is the reference the
// ratios are taken against):
//
//	none         default watchdogs, a profile without domain lists
//	navigations  AllowedDomains = the two page origins, PolicyScope "navigations"
//	requests     AllowedDomains = the two page origins, default scope (requests):
//	             every request intercepted, the browser behind the network guard
//
// and, to find where the time goes:
//
//	off              default watchdogs without the security watchdog: no interception at all
//	requests-noguard requests scope with --no-proxy-server: interception, no guard
//	proxy-only       none, with the browser behind a plain loopback proxy set up
//	                 as the guard's forwarding (no policy in the proxy)
//	fetch-nomatch    off, plus Fetch.enable on every tab with a pattern no
//	                 request matches: interception on, nothing ever paused
//	fetch-docs       off, plus Fetch.enable for Document requests, each paused
//	                 one continued at once (the navigations scope's interception
//	                 without a policy or the watchdog's other work)
//
// One load is timed from the NavigateToURL dispatch (awaited to commit) until
// the page reports, by a flag polled with Runtime.evaluate, that its load
// event fired and its 20 fetch() calls resolved ("wall"); "page" is the
// page's own performance.now() at that moment (time since navigation start,
// free of the poll). CPU columns: the median per load of this process's CPU
// time (page servers, guard, interception, CDP client) and of the browser's
// process tree. Every load also asks for one image on a third loopback
// origin the policy does not allow: the requests scope must refuse it
// (RequestBlocked, layer "interception") and the other configurations load
// it; the run fails otherwise, so no number is of a disabled feature.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
	"github.com/browseragent/browseragent/watchdogs/security"
)

// Page composition: 200 sub-resources, a tenth on the second origin.
const (
	nImages  = 100
	nScripts = 50
	nStyles  = 30
	nFetches = 20
	// Every tenth resource of each kind comes from the second origin.
	secondEvery = 10
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-policy:", err)
		os.Exit(1)
	}
}

type options struct {
	n, warmup int
	poll      time.Duration
	timeout   time.Duration
	configs   []string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench-policy", flag.ContinueOnError)
	var o options
	var configs string
	fs.IntVar(&o.n, "n", 20, "measured loads per configuration")
	fs.IntVar(&o.warmup, "warmup", 3, "warm-up loads per configuration (not measured)")
	fs.DurationVar(&o.poll, "poll", 5*time.Millisecond, "interval of the page-flag poll")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound of one load")
	fs.StringVar(&configs, "configs", "none,navigations,requests",
		"configurations, the first being the reference: "+strings.Join(configNames, ", "))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.n < 1 || o.warmup < 0 {
		return errors.New("-n must be at least 1 and -warmup not negative")
	}
	for c := range strings.SplitSeq(configs, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !slices.Contains(configNames, c) {
			return fmt.Errorf("unknown configuration %q (want one of %s)", c, strings.Join(configNames, ", "))
		}
		if slices.Contains(o.configs, c) {
			return fmt.Errorf("configuration %q named twice", c)
		}
		o.configs = append(o.configs, c)
	}
	if len(o.configs) == 0 {
		return errors.New("no configuration")
	}
	return bench(ctx, o, out)
}

var configNames = []string{"none", "navigations", "requests", "off", "requests-noguard", "proxy-only", "fetch-nomatch", "fetch-docs"}

// refuses reports whether the configuration must refuse the third origin.
func refuses(config string) bool { return config == "requests" || config == "requests-noguard" }

// origin is one loopback HTTP server; it counts requests per configuration
// (the "r" query parameter is config-round).
type origin struct {
	base string // http://127.0.0.1:port
	host string // 127.0.0.1:port
	ln   net.Listener
	srv  *http.Server

	mu    sync.Mutex
	count map[string]int
}

// newOrigin listens on a loopback port; serve starts answering.
func newOrigin() (*origin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	o := &origin{ln: ln, host: ln.Addr().String(), count: map[string]int{}}
	o.base = "http://" + o.host
	return o, nil
}

// serve answers with h, after counting the request and setting the
// headers every answer has (no caching, readable from any origin).
func (o *origin) serve(h http.HandlerFunc) {
	o.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tag := r.URL.Query().Get("r"); strings.Contains(tag, "-") {
			o.mu.Lock()
			o.count[tag[:strings.LastIndex(tag, "-")]]++
			o.mu.Unlock()
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		h(w, r)
	})}
	go func() { _ = o.srv.Serve(o.ln) }()
}

func (o *origin) requests(config string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.count[config]
}

// gif is a 1×1 transparent GIF.
var gif = []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;")

// serveResource answers the sub-resources of both page origins.
func serveResource(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/img/"):
		w.Header().Set("Content-Type", "image/gif")
		_, _ = w.Write(gif)
	case strings.HasPrefix(p, "/js/"):
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, "window.__s = (window.__s || 0) + 1; // %s\n", p)
	case strings.HasPrefix(p, "/css/"):
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprintf(w, ".c%s { color: #123456; }\n", strings.TrimSuffix(strings.TrimPrefix(p, "/css/"), ".css"))
	case strings.HasPrefix(p, "/data/"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"path\": %q}\n", p)
	default:
		http.NotFound(w, r)
	}
}

// pageHTML is the measured page for one load (tag = config-round).
func pageHTML(first, second, third *origin, tag string) string {
	q := "?r=" + url.QueryEscape(tag)
	src := func(i int, path string) string {
		base := first.base
		if i%secondEvery == secondEvery-1 {
			base = second.base
		}
		return base + path + q
	}
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=utf-8><title>bench-policy</title>\n")
	b.WriteString("<link rel=icon href=\"data:,\">\n")
	// The fetches start first, from a script no stylesheet blocks.
	b.WriteString("<script>\n(() => {\nconst urls = [\n")
	for i := range nFetches {
		fmt.Fprintf(&b, "%q,\n", src(i, fmt.Sprintf("/data/%d.json", i)))
	}
	fmt.Fprintf(&b, `];
const tag = %q;
window.__bench = {done: false, r: tag};
const fetched = Promise.all(urls.map(u => fetch(u).then(r => r.text())));
const loaded = new Promise(res => addEventListener('load', res));
Promise.all([fetched, loaded]).then(() => {
  window.__bench = {done: true, r: tag, t: performance.now(),
    resources: performance.getEntriesByType('resource').length,
    scripts: window.__s || 0, refused: window.__ref || 'pending'};
}, (e) => { window.__bench = {done: true, r: tag, error: String(e)}; });
})();
</script>
`, tag)
	for i := range nStyles {
		fmt.Fprintf(&b, "<link rel=stylesheet href=%q>\n", src(i, fmt.Sprintf("/css/%d.css", i)))
	}
	b.WriteString("</head><body>\n")
	for i := range nImages {
		fmt.Fprintf(&b, "<img width=1 height=1 alt=\"\" src=%q>\n", src(i, fmt.Sprintf("/img/%d.gif", i)))
	}
	fmt.Fprintf(&b, "<img width=1 height=1 alt=\"\" src=%q onload=\"window.__ref='loaded'\" onerror=\"window.__ref='error'\">\n",
		third.base+"/img/refused.gif"+q)
	for i := range nScripts {
		fmt.Fprintf(&b, "<script src=%q></script>\n", src(i, fmt.Sprintf("/js/%d.js", i)))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// sample is one measured load.
type sample struct {
	wall, page time.Duration
	resources  int
	// CPU time spent during the load by this process (the page servers,
	// the guard, the interception, the CDP client) and by the browser's
	// processes; -1 when unknown.
	goCPU, browserCPU time.Duration
}

// result is a configuration's session and measurements.
type result struct {
	name    string
	s       *session.Session
	blocked *blockCounter
	proxy   *plainProxy
	samples []sample
	minRes  int
	loads   int
}

// blockCounter counts RequestBlocked records of the refused image.
type blockCounter struct {
	mu          sync.Mutex
	interceptor int // the refused image, refused by interception
	other       int // anything else refused (the browser's own requests, by the guard)
	examples    []string
}

func (c *blockCounter) Name() string { return "bench-block-counter" }

func (c *blockCounter) Attach(s *session.Session) error {
	return session.Handle(s, events.RequestBlocked, c.Name(), func(_ context.Context, ev events.RequestBlockedEvent) (events.None, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if ev.Layer == "interception" && strings.Contains(ev.URL, "/img/refused.gif") {
			c.interceptor++
		} else {
			c.other++
			if len(c.examples) < 5 {
				c.examples = append(c.examples, ev.Layer+" "+ev.ResourceType+" "+ev.URL)
			}
		}
		return events.None{}, nil
	})
}

func (c *blockCounter) counts() (int, int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interceptor, c.other, append([]string(nil), c.examples...)
}

// plainProxy is a loopback HTTP proxy set up as the network guard's
// forwarding (same transport settings), without a policy: the proxy-only
// configuration.
type plainProxy struct {
	ln    net.Listener
	srv   *http.Server
	proxy *httputil.ReverseProxy
}

func newPlainProxy() (*plainProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second}
	p := &plainProxy{ln: ln}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			u := *r.In.URL
			r.Out.URL = &u
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	p.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect || r.URL.Host == "" {
			http.Error(w, "plain http proxy requests only", http.StatusBadRequest)
			return
		}
		p.proxy.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *plainProxy) close() { _ = p.srv.Close() }

// fetchOnly is a watchdog that enables request interception on every tab
// and frame: for Document requests, each continued at once, when docs;
// otherwise with a URL pattern no request matches.
func fetchOnly(docs bool) session.Watchdog {
	return session.NewWatchdog("bench-fetch-only", func(s *session.Session) error {
		s.AddTargetHook(func(ctx context.Context, at session.AttachedTarget) error {
			if at.Kind == session.TargetOther {
				return nil
			}
			pattern := &fetch.RequestPattern{URLPattern: "bench-policy-matches-nothing:*"}
			var sub *cdp.Subscription
			if docs {
				pattern = &fetch.RequestPattern{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageRequest}
				sub = at.Session.SubscribeEvents(fetch.RequestPaused.Method)
				go func() {
					for ev := range sub.C() {
						var e fetch.EventRequestPaused
						if ev.Decode(&e) == nil {
							at.Session.Send(context.Background(), fetch.CommandContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
						}
					}
				}()
			}
			if _, err := cdpproto.Call(ctx, at.Session, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{pattern}}); err != nil {
				if sub != nil {
					sub.Cancel()
				}
				return err
			}
			return nil
		})
		return nil
	})
}

// start launches the configuration's session.
func start(ctx context.Context, name string, allowed []string) (*result, error) {
	r := &result{name: name, blocked: &blockCounter{}, minRes: -1}
	var prof session.Profile
	opts := []session.Option{session.WithWatchdogs(r.blocked)}
	switch name {
	case "none":
	case "off":
		opts = append(opts, session.WithoutWatchdogs(security.Name))
	case "navigations":
		prof.AllowedDomains = allowed
		prof.PolicyScope = string(security.ScopeNavigations)
	case "requests":
		prof.AllowedDomains = allowed
	case "requests-noguard":
		prof.AllowedDomains = allowed
		prof.ExtraFlags = []string{"--no-proxy-server"} // the guard steps aside for a proxy switch of the user's
	case "fetch-nomatch", "fetch-docs":
		opts = append(opts, session.WithoutWatchdogs(security.Name), session.WithWatchdogs(fetchOnly(name == "fetch-docs")))
	case "proxy-only":
		p, err := newPlainProxy()
		if err != nil {
			return nil, err
		}
		r.proxy = p
		prof.ExtraFlags = []string{"--proxy-server=http://" + p.ln.Addr().String(), "--proxy-bypass-list=<-loopback>"}
	}
	r.s = watchdogs.NewSession(prof, opts...)
	if err := r.s.Start(ctx); err != nil {
		if r.proxy != nil {
			r.proxy.close()
		}
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	return r, nil
}

func (r *result) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = r.s.Stop(ctx)
	if r.proxy != nil {
		r.proxy.close()
	}
}

// pageState is the page's flag.
type pageState struct {
	Done      bool    `json:"done"`
	R         string  `json:"r"`
	T         float64 `json:"t"`
	Resources int     `json:"resources"`
	Scripts   int     `json:"scripts"`
	Refused   string  `json:"refused"`
	Error     string  `json:"error"`
}

// load loads the page once and waits for its flag.
func (r *result) load(ctx context.Context, o options, pageBase, tag string) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	u := pageBase + "/page?r=" + url.QueryEscape(tag)
	pid := 0
	if b := r.s.Browser(); b != nil {
		pid = b.PID()
	}
	go0, br0 := selfCPU(), treeCPU(pid)
	t0 := time.Now()
	if _, err := bus.Call(ctx, r.s.Bus(), events.NavigateToURL,
		events.NavigateToURLEvent{URL: u, WaitUntil: events.WaitCommit}, bus.WithTimeout(o.timeout)); err != nil {
		return sample{}, fmt.Errorf("%s: navigate %s: %w", r.name, u, err)
	}
	cs, err := r.s.PageSession("")
	if err != nil {
		return sample{}, err
	}
	expr := fmt.Sprintf("(window.__bench && window.__bench.r === %q) ? window.__bench : null", tag)
	tick := time.NewTicker(o.poll)
	defer tick.Stop()
	for {
		var st *pageState
		if err := pagejs.Evaluate(ctx, cs, expr, &st); err != nil && ctx.Err() != nil {
			return sample{}, fmt.Errorf("%s: load %s: %w", r.name, tag, err)
		}
		if st != nil && st.Done {
			wall := time.Since(t0)
			goCPU, brCPU := selfCPU()-go0, treeCPU(pid)-br0
			if go0 < 0 {
				goCPU = -1
			}
			if br0 < 0 {
				brCPU = -1
			}
			switch {
			case st.Error != "":
				return sample{}, fmt.Errorf("%s: load %s: page: %s", r.name, tag, st.Error)
			case st.Scripts != nScripts:
				return sample{}, fmt.Errorf("%s: load %s: %d of %d scripts ran", r.name, tag, st.Scripts, nScripts)
			case refuses(r.name) && st.Refused != "error":
				return sample{}, fmt.Errorf("%s: load %s: the image on the refused origin %s, want refused", r.name, tag, st.Refused)
			case !refuses(r.name) && st.Refused != "loaded":
				return sample{}, fmt.Errorf("%s: load %s: the image on the third origin %s, want loaded", r.name, tag, st.Refused)
			}
			r.loads++
			if r.minRes < 0 || st.Resources < r.minRes {
				r.minRes = st.Resources
			}
			return sample{wall: wall, page: time.Duration(st.T * float64(time.Millisecond)), resources: st.Resources,
				goCPU: goCPU, browserCPU: brCPU}, nil
		}
		select {
		case <-ctx.Done():
			return sample{}, fmt.Errorf("%s: load %s: no completion flag within %s", r.name, tag, o.timeout)
		case <-tick.C:
		}
	}
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// treeCPU is the user + system CPU time of process pid and all its
// descendants, from /proc (-1 when unknown). A process that exited between
// two readings takes its time with it: the browser's renderer is kept
// across the page's same-site loads, so that loses little.
func treeCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	parent := map[int]int{}
	cpu := map[int]time.Duration{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command may hold spaces and parentheses: fields follow the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		parent[p] = pp
		cpu[p] = time.Duration(ut+st) * clockTick
	}
	if _, ok := cpu[pid]; !ok {
		return -1
	}
	var total time.Duration
	for p, c := range cpu {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				total += c
				break
			}
		}
	}
	return total
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func bench(ctx context.Context, o options, out io.Writer) error {
	var origins [3]*origin
	for i := range origins {
		o, err := newOrigin()
		if err != nil {
			return err
		}
		origins[i] = o
	}
	page, second, third := origins[0], origins[1], origins[2]
	page.serve(servePage(page, second, third))
	second.serve(serveResource)
	third.serve(serveResource)
	defer page.srv.Close()
	defer second.srv.Close()
	defer third.srv.Close()
	allowed := []string{page.host, second.host} // host:port patterns: that port only

	fmt.Fprintf(out, "load average at start: %s\n", loadavg())
	var results []*result
	defer func() {
		for _, r := range results {
			r.stop()
		}
	}()
	for _, name := range o.configs {
		r, err := start(ctx, name, allowed)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if v, err := cdpproto.Call(ctx, results[0].s.Conn().Browser(), browser.GetVersion, cdpproto.Empty{}); err == nil {
		fmt.Fprintf(out, "browser: %s\n", v.Product)
	}
	fmt.Fprintf(out, "page: 1 document + %d sub-resources (%d images, %d scripts, %d stylesheets, %d fetches; 1 in %d on a second origin) + 1 image on a refused origin\n",
		nImages+nScripts+nStyles+nFetches, nImages, nScripts, nStyles, nFetches, secondEvery)

	// Rounds: every configuration once per round, the order rotated by
	// one each round so that none always comes first.
	for round := range o.warmup + o.n {
		for k := range results {
			r := results[(round+k)%len(results)]
			tag := fmt.Sprintf("%s-%d", r.name, round)
			s, err := r.load(ctx, o, page.base, tag)
			if err != nil {
				return err
			}
			if round >= o.warmup {
				r.samples = append(r.samples, s)
			}
		}
	}
	fmt.Fprintf(out, "load average at end: %s\n", loadavg())

	// Verification: the requests scope refused the third origin's image
	// by interception on every load; the others loaded it.
	time.Sleep(200 * time.Millisecond) // RequestBlocked is emitted, not awaited
	var problems []string
	for _, r := range results {
		icpt, _, _ := r.blocked.counts()
		reached := third.requests(r.name)
		want := 0
		if refuses(r.name) {
			want = r.loads
			if reached != 0 {
				problems = append(problems, fmt.Sprintf("%s: the refused origin got %d requests", r.name, reached))
			}
		} else if reached != r.loads {
			problems = append(problems, fmt.Sprintf("%s: the third origin got %d requests for %d loads", r.name, reached, r.loads))
		}
		if icpt != want {
			problems = append(problems, fmt.Sprintf("%s: %d RequestBlocked (interception) of the refused image for %d loads, want %d", r.name, icpt, r.loads, want))
		}
		if n := page.requests(r.name) + second.requests(r.name); n < (1+nImages+nScripts+nStyles+nFetches)*r.loads {
			problems = append(problems, fmt.Sprintf("%s: the page origins got %d requests for %d loads", r.name, n, r.loads))
		}
	}

	ref := results[0]
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "config\twall median ms\twall p90 ms\twall min ms\tpage median ms\tpage p90 ms\twall ÷ %s\tpaired ÷ %s\tpage ÷ %s\tGo CPU ms\tbrowser CPU ms\trefused-image blocks\tother blocks\tresources\t\n",
		ref.name, ref.name, ref.name)
	for _, r := range results {
		wall, pg := durations(r.samples, func(s sample) time.Duration { return s.wall }), durations(r.samples, func(s sample) time.Duration { return s.page })
		icpt, other, _ := r.blocked.counts()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t%s\t%d/%d\t%d\t%d\t\n", r.name,
			ms(quantile(wall, 0.5)), ms(quantile(wall, 0.9)), ms(wall[0]), ms(quantile(pg, 0.5)), ms(quantile(pg, 0.9)),
			ratio(quantile(wall, 0.5), quantile(durations(ref.samples, func(s sample) time.Duration { return s.wall }), 0.5)),
			pairedRatio(r.samples, ref.samples),
			ratio(quantile(pg, 0.5), quantile(durations(ref.samples, func(s sample) time.Duration { return s.page }), 0.5)),
			ms(quantile(durations(r.samples, func(s sample) time.Duration { return s.goCPU }), 0.5)),
			ms(quantile(durations(r.samples, func(s sample) time.Duration { return s.browserCPU }), 0.5)),
			icpt, r.loads, other, r.minRes)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "(%d measured loads per configuration after %d warm-up loads; paired = median of the per-round ratios; CPU = median per load; resources = fewest resource-timing entries a load saw)\n", o.n, o.warmup)
	for _, r := range results {
		if _, other, ex := r.blocked.counts(); other > 0 {
			fmt.Fprintf(out, "%s: other refusals, e.g. %s\n", r.name, strings.Join(ex, "; "))
		}
	}
	if len(problems) > 0 {
		return errors.New("verification failed:\n  " + strings.Join(problems, "\n  "))
	}
	fmt.Fprintln(out, "verified: the refused origin's image was refused by interception on every requests-scope load and loaded on every other")
	return nil
}

// servePage serves the page on the first origin, and its sub-resources.
func servePage(first, second, third *origin) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, pageHTML(first, second, third, r.URL.Query().Get("r")))
			return
		}
		serveResource(w, r)
	}
}

func durations(ss []sample, f func(sample) time.Duration) []time.Duration {
	d := make([]time.Duration, len(ss))
	for i, s := range ss {
		d[i] = f(s)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d
}

// quantile is the nearest-rank quantile of sorted d.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.5) - 1
	if q == 0.5 && len(d)%2 == 0 {
		return (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	return d[max(0, min(i, len(d)-1))]
}

// pairedRatio is the median over rounds of r's wall time ÷ ref's in the
// same round.
func pairedRatio(r, ref []sample) float64 {
	var q []float64
	for i := range min(len(r), len(ref)) {
		q = append(q, float64(r[i].wall)/float64(ref[i].wall))
	}
	if len(q) == 0 {
		return 0
	}
	sort.Float64s(q)
	if len(q)%2 == 0 {
		return (q[len(q)/2-1] + q[len(q)/2]) / 2
	}
	return q[len(q)/2]
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}
