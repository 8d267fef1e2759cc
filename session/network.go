package session

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

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
	// requestLogSize bounds the requests a session remembers; an action's
	// outcome reads only the ones sent since its start.
	requestLogSize = 1024
	// maxURL clips a recorded URL (data: URLs can be megabytes).
	maxURL = 2048
)

// networkEvents are the Network domain events the session records.
var networkEvents = []string{
	"Network.requestWillBeSent", "Network.responseReceived",
	"Network.loadingFinished", "Network.loadingFailed",
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

// netLog is the session's bounded record of its page targets' requests,
// fed by one connection-wide subscription (see recordNetwork). Entries are
// numbered by a sequence that only grows, across restarts too, so that a
// mark taken before an action selects the requests sent after it.
type netLog struct {
	mu      sync.Mutex
	seq     uint64
	entries []*netEntry          // oldest first, at most requestLogSize
	current map[netKey]*netEntry // the latest hop of each request
	last    time.Time            // when the last event was recorded
	sub     *cdp.Subscription    // the subscription being consumed
	busy    bool                 // an event is being recorded
	changed chan struct{}        // closed and replaced on every record
}

func newNetLog() *netLog {
	return &netLog{current: map[netKey]*netEntry{}, changed: make(chan struct{})}
}

// mark returns the sequence number of the last recorded request.
func (l *netLog) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// wire structs decode only what is kept: no headers, no bodies.
type wireRequest struct {
	RequestID string `json:"requestId"`
	Type      string `json:"type"`
	Request   struct {
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

// record applies one Network event.
func (l *netLog) record(ev cdp.Event) {
	var sid target.SessionID
	if ev.Session != nil {
		sid = ev.Session.ID()
	}
	switch ev.Method {
	case "Network.requestWillBeSent":
		var e wireRequest
		if ev.Decode(&e) != nil {
			return
		}
		k := netKey{sid, e.RequestID}
		page := pageOf(ev.Session)
		l.mu.Lock()
		defer l.mu.Unlock()
		if prev := l.current[k]; prev != nil && e.RedirectResponse != nil {
			// The previous hop answered with a redirect: a success of
			// its own (a POST answered 302), the next hop is a new entry.
			prev.req.Status, prev.req.Pending, prev.done, prev.loaded = e.RedirectResponse.Status, false, true, true
		}
		u := e.Request.URL
		if len(u) > maxURL {
			u = u[:maxURL] + "…"
		}
		l.seq++
		ent := &netEntry{seq: l.seq, page: page, key: k, req: events.Request{Method: e.Request.Method, URL: u, Type: e.Type, Pending: true}}
		l.current[k] = ent
		l.entries = append(l.entries, ent)
		if n := len(l.entries) - requestLogSize; n > 0 {
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

// caughtUp waits, at most bound, until the events already delivered to
// the subscription are recorded, so that a look right after a CDP round
// trip sees the requests announced before its reply.
func (l *netLog) caughtUp(ctx context.Context, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for {
		l.mu.Lock()
		idle := !l.busy && (l.sub == nil || len(l.sub.C()) == 0)
		l.mu.Unlock()
		if idle || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// recordNetwork consumes the connection's Network events until stop. It
// subscribes before any target is attached, so a tab's first requests are
// seen. Network.enable is sent per target (see networkSetup).
func (s *Session) recordNetwork(stop <-chan struct{}, conn *cdp.Conn) {
	defer s.wg.Done()
	l := s.net
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var mine *cdp.Subscription // the last one this goroutine opened
	open := func() *cdp.Subscription {
		sub := conn.SubscribeEvents(networkEvents...)
		l.mu.Lock()
		l.sub, mine = sub, sub
		l.mu.Unlock()
		return sub
	}
	handle := func(ev cdp.Event) {
		l.mu.Lock()
		l.busy = true
		l.mu.Unlock()
		l.record(ev)
		l.mu.Lock()
		l.busy = false
		l.mu.Unlock()
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
// frames) sent after mark: at most events.MaxOutcomeRequests, and how many
// more there were.
func (s *Session) requestsSince(mark uint64) (list []events.Request, omitted int) {
	if s.profile.NoRequestEvidence {
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
		if ent.seq <= mark || !own[ent.page] {
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
// waiting, waited time into the wait: a write or a document (they decide
// the verdict) for all of Profile.RequestWait; an XHR or fetch that reads
// (a search's results) for readWait at most, so that a page's long poll
// does not hold every action; images, scripts and beacons not at all.
func holds(r events.Request, waited time.Duration) bool {
	switch {
	case !r.Verdictable():
		return false
	case r.Write() || r.Type == "Document":
		return true
	}
	return waited < readWait
}

// readWait bounds the wait for an action's reading XHRs and fetches.
const readWait = time.Second

// awaitRequests waits until the requests sent after mark are settled:
// every write and document answered (and read, so that the page's scripts
// saw the answer), reading XHRs and fetches too for up to readWait, and
// the others answered or the network quiet for Profile.RequestQuiet; at
// most Profile.RequestWait. It returns at once
// when no request was sent, and reports whether there was any.
func (s *Session) awaitRequests(ctx context.Context, mark uint64) bool {
	if s.profile.NoRequestEvidence {
		return false
	}
	l := s.net
	l.caughtUp(ctx, 50*time.Millisecond)
	start := time.Now()
	deadline := start.Add(s.profile.RequestWait)
	s.mu.Lock()
	own := make(map[target.ID]bool, len(s.own))
	for id, ok := range s.own {
		own[id] = ok
	}
	s.mu.Unlock()
	sent := false
	for {
		l.mu.Lock()
		waitHeld, waitOther := false, false
		for _, ent := range l.entries {
			if ent.seq <= mark || !own[ent.page] {
				continue
			}
			sent = true
			switch {
			case !ent.loaded && holds(ent.req, time.Since(start)):
				waitHeld = true
			case !ent.done:
				waitOther = true
			}
		}
		quiet := time.Since(l.last) >= s.profile.RequestQuiet
		ch := l.changed
		l.mu.Unlock()
		if !waitHeld && (!waitOther || quiet) {
			return sent
		}
		left := time.Until(deadline)
		if left <= 0 {
			return sent
		}
		t := time.NewTimer(min(left, s.profile.RequestQuiet))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return sent
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
		case !r.Verdictable():
		case r.Write() && r.Unconfirmed():
			notes = append(notes, r.Describe()+": check the page for the result")
		case !r.Write() && r.Type == "Document" && r.Failed():
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

// requestError is the error of an outcome that networkVerdict made
// failed, nil otherwise.
func requestError(o events.ActionOutcome, err error) error {
	if err != nil || o.Verdict != events.VerdictFailed {
		return err
	}
	if r, ok := o.FailedWrite(); ok {
		return &events.RequestError{Request: r}
	}
	return nil
}

// RequestError returns the error an action must return for an outcome
// that Outcome made failed because a write request it caused failed
// (an *events.RequestError wrapping events.ErrRequestFailed), and err
// unchanged otherwise. Action watchdogs call it with their own error.
func RequestError(o events.ActionOutcome, err error) error { return requestError(o, err) }
