// Package agenttest provides a fake browser for tests of the agent loop: a
// Browser that implements agent.Browser over a real bus, with in-memory
// pages instead of Chromium, so that a Run takes milliseconds.
//
//	b := agenttest.New(t, agenttest.Page{
//		URL:   "https://shop.test/",
//		Title: "Shop",
//		Elements: []agenttest.Element{
//			{Index: 1, Tag: "input", Attrs: map[string]string{"placeholder": "Search"}},
//			{Index: 2, Text: "Next", Href: "https://shop.test/2"},
//		},
//	}, agenttest.Page{URL: "https://shop.test/2", Text: "Page two"})
//	a, err := agent.New("find shoes", model, b, agent.Settings{})
//	...
//	clicks := b.Events(events.ClickElement.Name)
//
// The fake handles the events the built-in actions dispatch, as the session
// and its watchdogs do: BrowserStateRequest, ClickElement, TypeText,
// Scroll, ScrollToText, SendKeys, UploadFile, GetDropdownOptions,
// SelectDropdownOption, Hover, Evaluate, PageText, Screenshot,
// NavigateToURL, GoBack, SwitchTab, CloseTab and Wait. An action's result
// carries an ActionOutcome whose verdict (navigated, new_tab, dialog,
// changed, no_change) is decided from the evidence before and after it, as
// the session decides it. A failed action returns its result with Verdict
// failed and the evidence, together with an *events.ActionError carrying
// the same outcome, as the actions watchdog does. TypeText with index 0
// types into the element last clicked or typed into. What the fake does not
// model: Wait returns at once, the page does not scroll (nothing is below
// the fold), and no element is marked new ("*[N]").
//
// Pages change through their elements (Element.Href, Rerender, ...) and
// through Rerender, Remove and Navigate, which act as the page itself
// would. Failures are injected with Fail, Block, SetDOMError and
// Element.Fail, and requests the URL policy refused with AddBlocked; After
// runs a function at a precise point between actions; Disconnect,
// Reconnect and Gone drive what Ready reports.
// Every event the fake handles is recorded (Events).
package agenttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// ErrNoElement is wrapped by the error of an action on an element index
// the current page does not have (never there, removed, or the page
// changed since it was observed).
var ErrNoElement = errors.New("agenttest: element index not in the current page state")

// ErrClosed is returned by a blocked handler released by Close, and by
// Fingerprint after Close.
var ErrClosed = errors.New("agenttest: browser closed")

// HandlerName is the name of the fake's handlers on its bus (for
// bus.Before and bus.After when a test adds handlers of its own).
const HandlerName = "agenttest"

// Event is one event the fake handled.
type Event struct {
	// Kind is the catalog name, e.g. events.ClickElement.Name.
	Kind string
	// Payload is the event value, e.g. an events.ClickElementEvent.
	Payload any
	// Err is the error the handler returned; nil while it runs.
	Err error
}

// Browser is a fake browser session. It implements agent.Browser. Create it
// with New; it is safe for concurrent use (the agent calls it from Run's
// goroutine, the bus from its worker, the test from its own).
type Browser struct {
	bus  *bus.Bus
	quit chan struct{} // closed by Close: releases blocked handlers

	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	closed  bool
	site    map[string]Page
	tabs    []*tab
	focus   string
	nextTab int
	focused int // index of the element last clicked or typed into
	domErr  string
	dialogs []events.DialogInfo      // handled since the last observation
	blocked []events.BlockedRequests // refused since the last observation
	faults  map[string][]fault
	after   map[string][]func()
	log     []Event
	// Connection health, for Ready: lost (Disconnect) until Reconnect, or
	// gone for good (Gone); health is closed and replaced on every change.
	lost   bool
	gone   string
	health chan struct{}
}

type tab struct {
	id   string
	doc  *doc
	back []string // URLs loaded before the current one, for GoBack
}

type fault struct {
	err   error
	block bool
}

// New returns a fake browser with one tab showing pages[0] (about:blank
// when there is none); the other pages are reachable by their URL. A page
// with a URL already given replaces it. With a non-nil tb, Close runs in
// tb's cleanup and its error fails the test; otherwise the caller must
// call Close.
func New(tb testing.TB, pages ...Page) *Browser {
	b := &Browser{
		bus:    bus.New(bus.WithName("agenttest")),
		quit:   make(chan struct{}),
		site:   map[string]Page{},
		faults: map[string][]fault{},
		after:  map[string][]func(){},
		health: make(chan struct{}),
	}
	for _, p := range pages {
		seen := map[int]bool{}
		for _, e := range p.Elements {
			if e.Index <= 0 || seen[e.Index] {
				panic(fmt.Sprintf("agenttest: page %s: element index %d is not positive or not unique", p.URL, e.Index))
			}
			seen[e.Index] = true
		}
		b.site[p.URL] = p
	}
	start := "about:blank"
	if len(pages) > 0 {
		start = pages[0].URL
	}
	b.focus = b.openTabLocked(start)
	b.register()
	if tb != nil {
		tb.Cleanup(func() {
			if err := b.Close(); err != nil {
				tb.Errorf("agenttest: close: %v", err)
			}
		})
	}
	return b
}

// Close releases blocked handlers and closes the bus; afterwards Bus
// returns nil (the agent then reports agent.ErrNotStarted). It returns the
// bus's close error; calling it again returns the same.
func (b *Browser) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		close(b.quit)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.closeErr = b.bus.Close(ctx)
	})
	return b.closeErr
}

// Bus returns the fake's bus, or nil after Close. Tests may add handlers of
// their own to it (bus.Handle with bus.First to run before the fake's).
func (b *Browser) Bus() *bus.Bus {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	return b.bus
}

// FocusedTab returns the id of the focused tab ("" when every tab is
// closed). Tab ids end in four digits, unique per Browser: "tab-0001".
func (b *Browser) FocusedTab() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.focus
}

// Tabs returns the open tabs in the order they were opened.
func (b *Browser) Tabs() []events.TabInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tabsLocked()
}

// ResolveTab returns the id of the tab whose id is ref or ends in ref.
func (b *Browser) ResolveTab(ref string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.resolveLocked(ref)
	if err != nil {
		return "", err
	}
	return t.id, nil
}

// Fingerprint returns a tab's fingerprint ("" = the focused tab): its URL,
// its re-render count and its element count, so it changes when the page
// navigates, re-renders or loses an element.
func (b *Browser) Fingerprint(_ context.Context, tabID string) (events.PageFingerprint, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return events.PageFingerprint{}, ErrClosed
	}
	t, err := b.tabLocked(tabID)
	if err != nil {
		return events.PageFingerprint{}, err
	}
	return t.doc.fingerprint(), nil
}

// Ready implements agent.Browser: nil while connected; after Disconnect it
// waits for Reconnect or Gone (or ctx); after Gone it returns an error
// wrapping events.ErrBrowserGone at once; after Close, ErrClosed.
func (b *Browser) Ready(ctx context.Context) error {
	for {
		b.mu.Lock()
		closed, lost, gone, ch := b.closed, b.lost, b.gone, b.health
		b.mu.Unlock()
		switch {
		case closed:
			return ErrClosed
		case gone != "":
			return fmt.Errorf("%w: %s", events.ErrBrowserGone, gone)
		case !lost:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Disconnect loses the connection, as a dropped websocket would: Ready
// waits until Reconnect or Gone. Events keep being answered (a test
// decides what a lost browser does with Fail).
func (b *Browser) Disconnect() { b.setHealth(func() { b.lost = true }) }

// Reconnect restores the connection after Disconnect.
func (b *Browser) Reconnect() { b.setHealth(func() { b.lost = false }) }

// Gone makes the browser gone for good (a killed process, a reconnect
// that failed): Ready reports reason wrapped in events.ErrBrowserGone.
func (b *Browser) Gone(reason string) { b.setHealth(func() { b.gone = reason }) }

func (b *Browser) setHealth(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f()
	close(b.health)
	b.health = make(chan struct{})
}

// Rerender re-renders the focused page in place, as a page's own script
// would: the fingerprint changes, the elements stay.
func (b *Browser) Rerender() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, err := b.tabLocked(""); err == nil {
		t.doc.mutations++
	}
}

// Remove takes the element with this index off the focused page (the
// fingerprint changes): an action on it then fails with ErrNoElement.
func (b *Browser) Remove(index int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabLocked("")
	if err != nil {
		return
	}
	t.doc.elems = slices.DeleteFunc(t.doc.elems, func(e Element) bool { return e.Index == index })
	t.doc.mutations++
}

// Navigate loads url in the focused tab as the page itself would (a script,
// a late form submit), without an event.
func (b *Browser) Navigate(url string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, err := b.tabLocked(""); err == nil {
		b.loadLocked(t, url)
	}
}

// SetDOMError makes every observation from now on report msg in
// BrowserState.Error, with no DOM text and no element (as the DOM watchdog
// does when its build fails); "" clears it.
func (b *Browser) SetDOMError(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.domErr = msg
}

// AddBlocked makes the next observation report these refused requests in
// BrowserState.Blocked, in the order given (the DOM watchdog sorts them by
// count, then host), as the DOM watchdog reports the RequestBlocked events
// of the URL policy; that observation clears them. Calls add up.
func (b *Browser) AddBlocked(reqs ...events.BlockedRequests) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range reqs {
		r.Types = slices.Clone(r.Types)
		b.blocked = append(b.blocked, r)
	}
}

// Fail makes the next event of kind (a catalog name, e.g.
// events.BrowserStateRequest.Name) fail with err without doing anything.
// An action's error is an *events.ActionError with Verdict failed and the
// page's evidence. Calls queue up: each fails one event. Fail panics for a
// kind the fake does not handle, as Block and After do.
func (b *Browser) Fail(kind string, err error) {
	if err == nil {
		panic("agenttest: Fail with a nil error")
	}
	b.addFault(kind, fault{err: err})
}

// Block makes the next event of kind block until its context ends (a step
// timeout, a cancelled run) or Close; it then fails with the context's
// error. Calls queue up: each blocks one event.
func (b *Browser) Block(kind string) { b.addFault(kind, fault{block: true}) }

// After runs f once, after the next event of kind was handled (its result
// and evidence are final) and before its dispatcher gets the result. f runs
// on the bus's worker; it may change the page (Rerender, Remove, Navigate)
// but must not dispatch on the bus. Calls queue up: each runs after one
// event.
func (b *Browser) After(kind string, f func()) {
	checkKind(kind)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.after[kind] = append(b.after[kind], f)
}

// Events returns the events handled so far, in the order they arrived;
// with kinds, only those of these kinds.
func (b *Browser) Events(kinds ...string) []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Event
	for _, e := range b.log {
		if len(kinds) == 0 || slices.Contains(kinds, e.Kind) {
			out = append(out, e)
		}
	}
	return out
}

func (b *Browser) addFault(kind string, f fault) {
	checkKind(kind)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults[kind] = append(b.faults[kind], f)
}

// kinds are the event kinds the fake handles (register handles each).
var kinds = map[string]bool{
	events.BrowserStateRequest.Name: true, events.ClickElement.Name: true, events.TypeText.Name: true,
	events.Scroll.Name: true, events.ScrollToText.Name: true, events.SendKeys.Name: true,
	events.UploadFile.Name: true, events.GetDropdownOptions.Name: true, events.SelectDropdownOption.Name: true,
	events.Hover.Name: true, events.Evaluate.Name: true, events.PageText.Name: true,
	events.Screenshot.Name: true, events.NavigateToURL.Name: true, events.GoBack.Name: true,
	events.SwitchTab.Name: true, events.CloseTab.Name: true, events.Wait.Name: true,
}

func checkKind(kind string) {
	if !kinds[kind] {
		panic(fmt.Sprintf("agenttest: the fake does not handle %q", kind))
	}
}

// handle registers fn for k. The wrapper records the event, applies an
// injected fault, makes an action's error an *events.ActionError whose
// outcome the result carries too (outcome is nil for events that are not
// actions), and runs the After hooks.
func handle[E, R any](b *Browser, k bus.Kind[E, R], fn func(context.Context, E) (R, error), outcome func(*R) *events.ActionOutcome) {
	h := func(ctx context.Context, ev E) (R, error) {
		b.mu.Lock()
		n := len(b.log)
		b.log = append(b.log, Event{Kind: k.Name, Payload: ev})
		var f fault
		if q := b.faults[k.Name]; len(q) > 0 {
			f, b.faults[k.Name] = q[0], q[1:]
		}
		b.mu.Unlock()

		var r R
		var err error
		switch {
		case f.block:
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-b.quit:
				err = ErrClosed
			}
		case f.err != nil:
			err = f.err
		default:
			r, err = fn(ctx, ev)
		}
		if err != nil && outcome != nil {
			o := outcome(&r)
			o.Verdict = events.VerdictFailed
			if o.Detail == "" {
				o.Detail = err.Error()
			}
			if o.Before.URL == "" && o.After.URL == "" {
				// Failed before touching the page: the evidence is the page
				// as it is, as the actions watchdog reports it.
				b.mu.Lock()
				o.Before = b.evidenceLocked()
				b.mu.Unlock()
				o.After = o.Before
			}
			if ae := (*events.ActionError)(nil); !errors.As(err, &ae) {
				err = &events.ActionError{Action: k.Name, Outcome: *o, Err: err}
			}
		}

		b.mu.Lock()
		b.log[n].Err = err
		var hook func()
		if q := b.after[k.Name]; len(q) > 0 {
			hook, b.after[k.Name] = q[0], q[1:]
		}
		b.mu.Unlock()
		if hook != nil {
			hook()
		}
		return r, err
	}
	if _, err := bus.Handle(b.bus, k, HandlerName, h); err != nil {
		panic(err) // a new bus accepts every kind once
	}
}

// tabsLocked lists the tabs.
func (b *Browser) tabsLocked() []events.TabInfo {
	out := make([]events.TabInfo, 0, len(b.tabs))
	for _, t := range b.tabs {
		out = append(out, events.TabInfo{TargetID: t.id, URL: t.doc.url, Title: t.doc.title})
	}
	return out
}

// tabLocked returns the tab with this exact id, "" being the focused one.
func (b *Browser) tabLocked(id string) (*tab, error) {
	if id == "" {
		id = b.focus
	}
	for _, t := range b.tabs {
		if t.id == id {
			return t, nil
		}
	}
	if id == "" {
		return nil, errors.New("agenttest: no tab is open")
	}
	return nil, fmt.Errorf("agenttest: no tab %q", id)
}

func (b *Browser) resolveLocked(ref string) (*tab, error) {
	if ref == "" {
		return nil, errors.New("agenttest: empty tab id")
	}
	var found []*tab
	for _, t := range b.tabs {
		if t.id == ref {
			return t, nil
		}
		if strings.HasSuffix(strings.ToLower(t.id), strings.ToLower(ref)) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("agenttest: no tab %q", ref)
	default:
		return nil, fmt.Errorf("agenttest: tab %q is ambiguous (%d tabs)", ref, len(found))
	}
}

// openTabLocked opens url in a new tab, without focusing it.
func (b *Browser) openTabLocked(url string) string {
	b.nextTab++
	t := &tab{id: fmt.Sprintf("tab-%04d", b.nextTab)}
	b.tabs = append(b.tabs, t)
	t.doc = b.docLocked(url)
	return t.id
}

// loadLocked loads url in t, keeping the current page for GoBack.
func (b *Browser) loadLocked(t *tab, url string) {
	t.back = append(t.back, t.doc.url)
	t.doc = b.docLocked(url)
	b.focused = 0
}

func (b *Browser) docLocked(url string) *doc {
	if p, ok := b.site[url]; ok {
		return newDoc(p)
	}
	return newDoc(Page{URL: url})
}

// evidenceLocked is the focused page's evidence for an action's outcome.
func (b *Browser) evidenceLocked() events.Evidence {
	ev := events.Evidence{FocusedTarget: b.focus, TabCount: len(b.tabs)}
	if t, err := b.tabLocked(""); err == nil {
		fp := t.doc.fingerprint()
		ev.URL, ev.Fingerprint = fp.URL, fp.String()
	}
	return ev
}

// verdict compares the evidence before and after an action, as the session
// does.
func verdict(before, after events.Evidence) events.Verdict {
	switch {
	case after.TabCount > before.TabCount:
		return events.VerdictNewTab
	case after.FocusedTarget != before.FocusedTarget || after.URL != before.URL:
		return events.VerdictNavigated
	case after.Fingerprint != before.Fingerprint:
		return events.VerdictChanged
	}
	return events.VerdictNoChange
}

// screenshotPNG is the image every Screenshot returns: one white pixel.
var screenshotPNG = func() []byte {
	img := image.NewGray(image.Rect(0, 0, 1, 1))
	img.Pix[0] = 0xff
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}()
