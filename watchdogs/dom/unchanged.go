package dom

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"sync"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// unchangedJS is the unchanged probe (see the file): installed once per
// document in the isolated world unchangedWorld, it returns a signature
// that changes with any mutation, typed value, scroll, resize, focus,
// hover or frame document the watch can see.
//
//go:embed js/unchanged.js
var unchangedJS string

// unchangedWorld names the isolated world of the probe: the page's own
// scripts cannot see or disturb its observers, and the world (with its
// state) lives as long as the document.
const unchangedWorld = "browseragent-unchanged"

// unchangedCache keeps, per tab, the last observation that a capture
// produced and the probe's signatures taken right before that capture.
type unchangedCache struct {
	mu      sync.Mutex
	entries map[string]*unchangedEntry // by tab id
	reused  int                        // observations served again (tests)
}

type unchangedEntry struct {
	sigs map[string]string // by target id: page target and every frame target
	obs  *observation
}

func (c *unchangedCache) get(tab string) *unchangedEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[tab]
}

func (c *unchangedCache) set(tab string, e *unchangedEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e == nil {
		delete(c.entries, tab)
		return
	}
	if c.entries == nil {
		c.entries = map[string]*unchangedEntry{}
	}
	c.entries[tab] = e
}

// probeResult of one target.
type unchangedProbe struct {
	Fresh bool   `json:"fresh"`
	Sig   string `json:"sig"`
}

// probeUnchanged reads the signature of every target of the tab (page and
// frame targets, concurrently, one createIsolatedWorld and one evaluation
// each). ok is false when any target's probe failed or was installed just
// now: then nothing can be said about what changed, and the signatures are
// only a baseline for the next observation (nil when a probe failed).
func probeUnchanged(ctx context.Context, cs *cdp.Session, frames []session.AttachedTarget) (sigs map[string]string, ok bool) {
	sessions := []*cdp.Session{cs}
	for _, f := range frames {
		if f.Session != nil {
			sessions = append(sessions, f.Session)
		}
	}
	results := make([]unchangedProbe, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, sess := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = probeTarget(ctx, sess)
		}()
	}
	wg.Wait()
	sigs = make(map[string]string, len(sessions))
	ok = true
	for i, sess := range sessions {
		if errs[i] != nil || results[i].Sig == "" {
			return nil, false
		}
		ok = ok && !results[i].Fresh
		sigs[string(sess.TargetID())] = results[i].Sig
	}
	return sigs, ok
}

func probeTarget(ctx context.Context, cs *cdp.Session) (unchangedProbe, error) {
	var p unchangedProbe
	// A target's main frame has the target's id.
	w, err := cdpproto.Call(ctx, cs, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{
		FrameID:             cdpproto.FrameID(cs.TargetID()),
		WorldName:           unchangedWorld,
		GrantUniveralAccess: pagejs.Ptr(true), // to enter same-process cross-origin frames
	})
	if err != nil {
		return p, fmt.Errorf("isolated world: %w", err)
	}
	res, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    unchangedJS,
		ContextID:     w.ExecutionContextID,
		ReturnByValue: pagejs.Ptr(true),
		AwaitPromise:  pagejs.Ptr(true),
	})
	if err != nil {
		return p, err
	}
	err = pagejs.Decode(res.Result, res.ExceptionDetails, &p)
	return p, err
}

// hasClosedShadow reports whether the tree holds a closed shadow root,
// whose mutations no observer of the page can see.
func hasClosedShadow(t *dom.Tree) bool {
	found := false
	t.Walk(func(n *dom.Node) bool {
		if n.ShadowRootType == string(cdpproto.ShadowRootTypeClosed) {
			found = true
		}
		return !found
	})
	return found
}

// observeTab is the observation's capture, or the previous one when the
// page is unchanged since (Config.AlwaysCapture off): the probe is read
// on every target of the tab first; when every signature equals the one
// read right before the previous capture — so nothing the probe watches
// changed since that capture started — and nothing else happened (events
// says whether a dialog was handled or a request refused since), that
// capture's tree is serialized again (same indexes; nothing is new)
// instead of capturing. Otherwise it captures, and keeps the signatures
// read before as the next observation's baseline when the page can be
// trusted to the probe (no closed shadow root, every target probed).
func (w *Watchdog) observeTab(ctx context.Context, s *session.Session, tab string, cs *cdp.Session, events bool) (*observation, error) {
	if w.cfg.AlwaysCapture {
		return w.capture(ctx, s, tab, cs)
	}
	frames := s.FrameTargets(tab)
	// Bounded like a capture: a frame whose renderer hangs must not hold
	// the observation (a failed probe only means capturing).
	pctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	sigs, ok := probeUnchanged(pctx, cs, frames)
	cancel()
	if prev := w.unch.get(tab); prev != nil && ok && !events && maps.Equal(sigs, prev.sigs) {
		w.mu.Lock()
		prevMap := w.prev[tab]
		w.mu.Unlock()
		// Title and pending requests are read fresh, as a capture does.
		var pr probeResult
		err := pagejs.Evaluate(ctx, cs, probeJS, &pr)
		var res *dom.Result
		if err == nil {
			res, err = dom.Serialize(prev.obs.tree, prevMap, w.cfg.Serialize)
		}
		if err == nil {
			obs := *prev.obs
			obs.res = res
			w.unch.mu.Lock()
			w.unch.reused++
			w.unch.mu.Unlock()
			if obs.page != nil {
				pc := *obs.page
				pc.probe = &pr
				obs.page = &pc
			}
			return &obs, nil
		}
		w.log.Debug("dom: reusing the unchanged page failed; capturing", zap.Error(err))
	}
	obs, err := w.capture(ctx, s, tab, cs)
	var keep *unchangedEntry
	if err == nil && sigs != nil && obs != nil && obs.res != nil && obs.tree != nil && !hasClosedShadow(obs.tree) {
		keep = &unchangedEntry{sigs: sigs, obs: obs}
	}
	w.unch.set(tab, keep)
	return obs, err
}
