package session

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/follow"
)

// Defaults of the request evidence (Profile.RequestWait, RequestQuiet).
const (
	DefaultRequestWait  = 3 * time.Second
	DefaultRequestQuiet = 100 * time.Millisecond
	DefaultReadWait     = time.Second
	// requestLogSize is how many requests a session remembers at least
	// (at most twice as many); an action's outcome reads only the ones
	// sent since its start.
	requestLogSize = 1024
	// maxURL clips a recorded URL (data: URLs can be megabytes).
	maxURL = 2048
)

// networkEvents are the Network domain events the session records, and
// the Page events that say a tab's main frame is about to navigate (see
// netLog.navigationSince): a renderer-initiated navigation is requested
// (a form submit, a script setting location), any navigation starts.
var networkEvents = []string{
	"Network.requestWillBeSent", "Network.responseReceived",
	"Network.loadingFinished", "Network.loadingFailed",
	"Page.frameRequestedNavigation", "Page.frameStartedNavigating", "Page.frameStartedLoading",
}

// netEntry is one request hop as recorded: a redirect makes a new entry
// with the same request id.
type netEntry struct {
	seq  uint64
	page target.ID // the tab the request belongs to
	key  netKey
	req  events.Request
	done bool // answered (status or error), or given up on
	// loaded: the body is read (loadingFinished) or the request failed;
	// only then has a page's script seen the answer.
	loaded bool
}

type netKey struct {
	sess target.SessionID
	id   string
}

// netLog is the session's bounded record of its own tabs' requests, fed
// by one connection-wide subscription (see recordNetwork). Entries are
// numbered by a sequence that only grows, across restarts too, so that a
// mark taken before an action selects the requests sent after it. The
// sequence starts at 1: a zero mark (an Evidence not read by the session)
// selects nothing.
type netLog struct {
	mu      sync.Mutex
	seq     uint64
	entries []*netEntry          // oldest first, requestLogSize to 2× that
	current map[netKey]*netEntry // the latest hop of each request
	// navAt is, per tab, the sequence number its main frame's latest
	// navigation signal took (a number of its own, no entry: marks stay
	// comparable). One number per tab ever seen: not trimmed, so that a
	// mark older than the trimmed log still compares right.
	navAt   map[target.ID]uint64
	last    time.Time     // when the last event was recorded
	changed chan struct{} // closed and replaced on every record
	// sub is the subscription being consumed and handled how many of its
	// events were handled (recorded or dropped): caughtUp compares it
	// with sub.Delivered. progress is closed and replaced on each.
	sub      *cdp.Subscription
	handled  uint64
	progress chan struct{}
}

func newNetLog() *netLog {
	return &netLog{seq: 1, current: map[netKey]*netEntry{}, navAt: map[target.ID]uint64{}, changed: make(chan struct{}), progress: make(chan struct{})}
}

// mark returns the sequence number of the last recorded request.
func (l *netLog) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// wire structs decode only what is kept: no headers, no bodies.
type wireRequest struct {
	RequestID   string `json:"requestId"`
	LoaderID    string `json:"loaderId"`
	FrameID     string `json:"frameId"`
	DocumentURL string `json:"documentURL"`
	Type        string `json:"type"`
	Request     struct {
		URL    string `json:"url"`
		Method string `json:"method"`
	} `json:"request"`
	RedirectResponse *struct {
		Status int `json:"status"`
	} `json:"redirectResponse"`
}

type wireResponse struct {
	RequestID string `json:"requestId"`
	Type      string `json:"type"`
	Response  struct {
		Status int `json:"status"`
	} `json:"response"`
}

type wireFailed struct {
	RequestID     string `json:"requestId"`
	ErrorText     string `json:"errorText"`
	Canceled      bool   `json:"canceled"`
	BlockedReason string `json:"blockedReason"`
}

type wireFinished struct {
	RequestID string `json:"requestId"`
}

type wireFrame struct {
	FrameID string `json:"frameId"`
}

// record applies one Network event of the tab page (a frame target's
// events name the tab it is in).
func (l *netLog) record(page target.ID, ev cdp.Event) {
	var sid target.SessionID
	if ev.Session != nil {
		sid = ev.Session.ID()
	}
	switch ev.Method {
	case "Page.frameRequestedNavigation", "Page.frameStartedNavigating", "Page.frameStartedLoading":
		var e wireFrame
		if ev.Decode(&e) != nil || e.FrameID != string(page) {
			return // an iframe's: the tab's URL does not change
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.seq++
		l.navAt[page] = l.seq
		l.touchLocked()
	case "Network.requestWillBeSent":
		var e wireRequest
		if ev.Decode(&e) != nil {
			return
		}
		if e.Type == "Other" && e.Request.Method == "GET" && strings.HasSuffix(pathOf(e.Request.URL), "/favicon.ico") {
			// The browser's own fetch of the tab's icon, never an
			// action's, and sent whenever the browser likes.
			return
		}
		k := netKey{sid, e.RequestID}
		req := events.Request{Method: e.Request.Method, URL: recordedURL(e.Request.URL), Type: e.Type, Pending: true}
		req.Own = e.Type == "Document" || siteOf(e.Request.URL) == siteOf(e.DocumentURL)
		// A navigation's request id is its loader's; the main frame's id
		// is the tab's target id.
		req.Navigation = e.Type == "Document" && e.FrameID != "" && e.FrameID == string(page) && e.LoaderID == e.RequestID
		l.mu.Lock()
		defer l.mu.Unlock()
		if prev := l.current[k]; prev != nil && e.RedirectResponse != nil {
			// The previous hop answered with a redirect: a success of
			// its own (a POST answered 302), the next hop is a new entry.
			prev.req.Status, prev.req.Pending, prev.done, prev.loaded = e.RedirectResponse.Status, false, true, true
		}
		l.seq++
		ent := &netEntry{seq: l.seq, page: page, key: k, req: req}
		l.current[k] = ent
		l.entries = append(l.entries, ent)
		if len(l.entries) > 2*requestLogSize {
			// Trimmed in halves, not on every request once full.
			n := len(l.entries) - requestLogSize
			for _, old := range l.entries[:n] {
				if l.current[old.key] == old {
					delete(l.current, old.key)
				}
			}
			l.entries = append(l.entries[:0:0], l.entries[n:]...)
		}
		l.touchLocked()
	case "Network.responseReceived":
		var e wireResponse
		if ev.Decode(&e) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if ent := l.current[netKey{sid, e.RequestID}]; ent != nil {
			ent.req.Status, ent.req.Pending, ent.done = e.Response.Status, false, true
			if ent.req.Type == "" {
				ent.req.Type = e.Type
			}
		}
		l.touchLocked()
	case "Network.loadingFinished":
		var e wireFinished
		if ev.Decode(&e) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if ent := l.current[netKey{sid, e.RequestID}]; ent != nil {
			ent.req.Pending, ent.done, ent.loaded = false, true, true
			delete(l.current, ent.key)
		}
		l.touchLocked()
	case "Network.loadingFailed":
		var e wireFailed
		if ev.Decode(&e) != nil {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if ent := l.current[netKey{sid, e.RequestID}]; ent != nil {
			ent.req.Pending, ent.done, ent.loaded = false, true, true
			if ent.req.Status == 0 {
				// A failure after the response (a body cut short) keeps
				// the status the server gave.
				ent.req.Error = e.ErrorText
				if e.ErrorText == "" {
					ent.req.Error = "failed"
				}
				ent.req.Canceled = e.Canceled
				ent.req.Blocked = e.BlockedReason != "" || strings.Contains(e.ErrorText, "ERR_BLOCKED_BY")
				switch e.BlockedReason {
				case "":
				case "inspector":
					// Failed through Fetch: by a watchdog of the session,
					// the security watchdog's URL policy.
					ent.req.Error = "blocked by policy"
				default:
					ent.req.Error += " (" + e.BlockedReason + ")"
				}
			}
			delete(l.current, ent.key)
		}
		l.touchLocked()
	}
}

func (l *netLog) touchLocked() {
	l.last = time.Now()
	close(l.changed)
	l.changed = make(chan struct{})
}

// forget gives up on every request not yet answered: their events were
// lost (the subscription overflowed or the connection changed). They stay
// listed as pending.
func (l *netLog) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ent := range l.current {
		ent.done, ent.loaded = true, true
		delete(l.current, k)
	}
	l.touchLocked()
}

// navigationPending reports whether the latest navigation recorded in tab
// page has not been answered yet (no response, no failure).
func (l *netLog) navigationPending(page target.ID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.entries) - 1; i >= 0; i-- {
		if ent := l.entries[i]; ent.page == page && ent.req.Navigation {
			return !ent.done
		}
	}
	return false
}

// navigationSince reports whether tab page's main frame signalled a
// navigation (requested, started navigating or loading) after mark.
func (l *netLog) navigationSince(page target.ID, mark uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.navAt[page] > mark
}

// documentSince reports whether a navigation request of tab page was
// recorded after mark.
func (l *netLog) documentSince(page target.ID, mark uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.entries) - 1; i >= 0 && l.entries[i].seq > mark; i-- {
		if ent := l.entries[i]; ent.page == page && ent.req.Navigation {
			return true
		}
	}
	return false
}

// quiet reports whether tab page's requests recorded after mark were all
// answered and read and no event was recorded for d, nor since from; if
// not, the channel closed at the next record and how long, with none,
// until quiet.
func (l *netLog) quiet(page target.ID, mark uint64, from time.Time, d time.Duration) (bool, <-chan struct{}, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.entries) - 1; i >= 0 && l.entries[i].seq > mark; i-- {
		if ent := l.entries[i]; ent.page == page && !ent.loaded {
			return false, l.changed, d
		}
	}
	last := l.last
	if from.After(last) {
		last = from
	}
	if since := time.Since(last); since < d {
		return false, l.changed, d - since
	}
	return true, nil, 0
}

// changes returns the channel closed at the next record.
func (l *netLog) changes() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// caughtUp waits, at most bound, until the events already delivered to
// the subscription are handled, so that a look right after a CDP round
// trip sees the requests announced before its reply.
func (l *netLog) caughtUp(ctx context.Context, bound time.Duration) {
	l.mu.Lock()
	sub := l.sub
	l.mu.Unlock()
	if sub == nil {
		return
	}
	want := sub.Delivered()
	t := time.NewTimer(bound)
	defer t.Stop()
	for {
		l.mu.Lock()
		done := l.sub != sub || l.handled >= want
		ch := l.progress
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// handledOne counts an event of sub as handled.
func (l *netLog) handledOne(sub *cdp.Subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sub != sub {
		return // a reconnect's recorder consumes another one now
	}
	l.handled++
	close(l.progress)
	l.progress = make(chan struct{})
}

// pathOf is the path of the URL u, "" when u does not parse.
func pathOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Path
}

// siteOf is the site of the URL u: its scheme and registrable domain
// (example.com for api.example.com), or its host when it has none (an IP
// address, localhost). Ports do not count, as for the browser's same-site.
func siteOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	host := p.Hostname()
	if host == "" || net.ParseIP(host) != nil {
		return p.Scheme + "://" + host
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		host = d
	}
	return p.Scheme + "://" + host
}

// recordedURL is the URL as the log keeps it: scheme, host, path and the
// names of the query's parameters, their values replaced by "…" (an
// autocomplete's query holds what was typed, a link may hold a token),
// no fragment; clipped to maxURL. A data: URL keeps its media type only.
func recordedURL(u string) string {
	if strings.HasPrefix(u, "data:") {
		if i := strings.IndexByte(u, ','); i >= 0 {
			u = u[:i+1] + "…"
		}
	} else if p, err := url.Parse(u); err != nil {
		u = withoutQuery(u)
	} else {
		p.Fragment, p.RawFragment = "", ""
		if p.RawQuery != "" {
			parts := strings.Split(p.RawQuery, "&")
			for i, kv := range parts {
				if k, _, ok := strings.Cut(kv, "="); ok {
					parts[i] = k + "=…"
				}
			}
			p.RawQuery = strings.Join(parts, "&")
		}
		p.User = nil
		u = p.String()
	}
	if len(u) > maxURL {
		u = u[:maxURL] + "…"
	}
	return u
}

// withoutQuery is u without its query and fragment.
func withoutQuery(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// recordNetwork consumes the connection's Network events until stop. It
// subscribes before any target is attached, so a tab's first requests are
// seen. Network.enable is sent per target (see networkSetup).
func (s *Session) recordNetwork(stop <-chan struct{}, conn *cdp.Conn) {
	defer s.wg.Done()
	l := s.net
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelOnStop(ctx, cancel, stop)
	var mine *cdp.Subscription // the last one this goroutine opened
	open := func() *cdp.Subscription {
		sub := conn.SubscribeEvents(networkEvents...)
		l.mu.Lock()
		l.sub, mine, l.handled = sub, sub, 0
		close(l.progress) // a caughtUp on the previous one returns
		l.progress = make(chan struct{})
		l.mu.Unlock()
		return sub
	}
	handle := func(ev cdp.Event) {
		// Only the session's own tabs are recorded: a connected browser's
		// other tabs would crowd the log out and keep it from going quiet.
		page := pageOf(ev.Session)
		s.mu.Lock()
		own := s.own[page]
		s.mu.Unlock()
		if own {
			l.record(page, ev)
		}
		l.handledOne(mine)
	}
	_ = follow.Run(ctx, open(), open, handle, follow.Options{
		Name: "session requests", Logger: s.log,
		Resync: func(context.Context) {
			s.log.Warn("session: network events were lost; requests in flight are reported as pending")
			l.forget()
		},
	})
	l.mu.Lock()
	replaced := l.sub != mine // by a reconnect's recorder
	if !replaced {
		l.sub = nil
	}
	l.mu.Unlock()
	if !replaced {
		// What was in flight will never be answered here. (After a
		// reconnect, those requests are older than any new mark.)
		l.forget()
	}
}

// networkSetup enables the Network domain on a page or frame target while
// it is paused: events only, no bodies kept (buffers of 0 bytes) and no
// POST data in the events.
func (s *Session) networkSetup(ctx context.Context, cs *cdp.Session) *cdp.Reply {
	if s.profile.NoRequestEvidence {
		return nil
	}
	zero := int64(0)
	return cs.Send(ctx, network.CommandEnable, network.EnableParams{MaxTotalBufferSize: &zero, MaxResourceBufferSize: &zero, MaxPostDataSize: &zero})
}

// requestsSince lists the requests of the session's own tabs (and their
// frames) sent after mark up to end included: at most
// events.MaxOutcomeRequests, and how many more there were.
func (s *Session) requestsSince(mark, end uint64) (list []events.Request, omitted int) {
	if s.profile.NoRequestEvidence || mark == 0 {
		return nil, 0
	}
	s.mu.Lock()
	own := make(map[target.ID]bool, len(s.own))
	for id, ok := range s.own {
		own[id] = ok
	}
	s.mu.Unlock()
	l := s.net
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ent := range l.entries {
		if ent.seq <= mark || ent.seq > end || !own[ent.page] {
			continue
		}
		if len(list) == events.MaxOutcomeRequests {
			omitted++
			continue
		}
		list = append(list, ent.req)
	}
	return list, omitted
}

// holds reports whether an unanswered request keeps an action's outcome
// waiting, waited time into the wait: a write or a document of the page's
// own (they decide the verdict) for all of Profile.RequestWait; an XHR or
// fetch of its own that reads (a search's results) for Profile.ReadWait
// at most, so that a page's long poll does not hold every action; images,
// scripts, beacons and third-party requests not at all.
func (s *Session) holds(r events.Request, waited time.Duration) bool {
	switch {
	case !r.Verdictable() || !r.Own:
		return false
	case r.Write() || r.Type == "Document":
		return true
	}
	return waited < s.profile.ReadWait
}

// awaitRequests waits until the requests sent after mark are settled:
// every write and document of the page's own answered (and read, so that
// the page's scripts saw the answer), its reading XHRs and fetches too for
// up to Profile.ReadWait, and the others answered or the network quiet
// for Profile.RequestQuiet; until deadline at most. Third-party requests
// are not waited for. It returns the sequence number of the last request
// sent when it stopped (the outcome lists the requests up to it: later
// ones belong to no action) and whether a request that holds the outcome
// (see holds) was among them, in which case the page may have changed
// since: it returns at once, with held false, when none was sent.
func (s *Session) awaitRequests(ctx context.Context, mark uint64, deadline time.Time) (end uint64, held bool) {
	l := s.net
	l.caughtUp(ctx, 50*time.Millisecond)
	if s.profile.NoRequestEvidence || mark == 0 {
		return l.mark(), false
	}
	start := time.Now()
	s.mu.Lock()
	own := make(map[target.ID]bool, len(s.own))
	for id, ok := range s.own {
		own[id] = ok
	}
	s.mu.Unlock()
	for {
		l.mu.Lock()
		waitHeld, waitOther := false, false
		for _, ent := range l.entries {
			if ent.seq <= mark || !own[ent.page] || !ent.req.Own {
				continue
			}
			if s.holds(ent.req, 0) {
				held = true
			}
			switch {
			case !ent.loaded && s.holds(ent.req, time.Since(start)):
				waitHeld = true
			case !ent.done:
				waitOther = true
			}
		}
		quiet := time.Since(l.last) >= s.profile.RequestQuiet
		ch := l.changed
		end = l.seq
		l.mu.Unlock()
		if !waitHeld && (!waitOther || quiet) {
			return end, held
		}
		left := time.Until(deadline)
		if left <= 0 {
			return end, held
		}
		t := time.NewTimer(min(left, s.profile.RequestQuiet))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return end, held
		}
		t.Stop()
	}
}

// networkVerdict makes the outcome failed when a write request it lists
// failed, and says in its Detail what became of a write still unconfirmed
// or of a document that answered an error. err is the action's own error.
func networkVerdict(o *events.ActionOutcome, err error) {
	var notes []string
	if r, ok := o.FailedWrite(); ok && err == nil {
		page := o.Verdict
		o.Verdict = events.VerdictFailed
		note := r.Describe()
		if page != events.VerdictNoChange {
			note += fmt.Sprintf(" (the page: %s)", page)
		}
		notes = append(notes, note)
	}
	for _, r := range o.Requests {
		switch {
		case !r.Verdictable() || !r.Own:
		case r.Write() && r.Unconfirmed():
			notes = append(notes, r.Describe()+": check the page for the result")
		case !r.Write() && r.Type == "Document" && r.Failed():
			notes = append(notes, r.Describe())
		case !r.Write() && r.Navigation && r.Pending:
			// The page the action led to had not answered yet.
			notes = append(notes, r.Describe())
		}
		if len(notes) >= 3 {
			break
		}
	}
	if len(notes) == 0 {
		return
	}
	d := strings.Join(notes, "; ")
	if o.Detail != "" {
		d = d + "; " + o.Detail
	}
	o.Detail = d
}

// RequestError returns the error an action must return for an outcome
// that Outcome made failed because a write request it caused failed
// (an *events.RequestError wrapping events.ErrRequestFailed), and err
// unchanged otherwise: events.ActionOutcome.RequestErr. The agent applies
// it too, so an action watchdog that forgets it still fails.
func RequestError(o events.ActionOutcome, err error) error { return o.RequestErr(err) }
