package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/browser"
	cdpproto "github.com/chromedp/cdproto/cdp"
	cdpdom "github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/domsnapshot"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/dom"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

// floor is the raw cost floor of an observation: DOM.getDocument(-1,
// pierce) and DOMSnapshot.captureSnapshot with the styles the perception
// needs, issued together (as watchdogs/dom's benchmark defines it).
func floor(ctx context.Context, cs *cdp.Session) error {
	d := cs.Send(ctx, cdpdom.CommandGetDocument, cdpdom.GetDocumentParams{Depth: pagejs.Ptr(int64(-1)), Pierce: pagejs.Ptr(true)})
	sn := cs.Send(ctx, domsnapshot.CommandCaptureSnapshot, domsnapshot.CaptureSnapshotParams{
		ComputedStyles: dom.RequiredComputedStyles, IncludePaintOrder: pagejs.Ptr(true), IncludeDOMRects: pagejs.Ptr(true),
	})
	var doc cdpdom.GetDocumentResult
	var snap domsnapshot.CaptureSnapshotResult
	return errors.Join(d.Wait(ctx, &doc), sn.Wait(ctx, &snap))
}

// observe is one BrowserStateRequest with the DOM and no screenshot.
func observe(ctx context.Context, s *session.Session) (events.BrowserState, error) {
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true},
		bus.WithTimeout(6*time.Minute))
	if err == nil && st.Error != "" {
		err = errors.New(st.Error)
	}
	return st, err
}

func since(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// bench runs the rounds (see the package comment) and returns the result.
func bench(parent context.Context, o options, log io.Writer) (result, error) {
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	res := newResult(o.Rounds)

	var script string
	if o.Playwright {
		var err error
		if script, err = ensurePlaywright(ctx, o.PlaywrightDir, o.PlaywrightVersion, log); err != nil {
			return res, err
		}
	}
	env, err := testbrowser.NewEnv(ctx)
	if err != nil {
		return res, err
	}
	defer func() {
		if err := env.Close(); err != nil {
			fmt.Fprintf(log, "closing the browser: %v\n", err)
		}
	}()
	docs, err := startDocServer()
	if err != nil {
		return res, err
	}
	defer docs.Close()
	if v, err := cdpproto.Call(ctx, env.Conn.Browser(), browser.GetVersion, cdpproto.Empty{}); err == nil {
		res.Browser = v.Product
	}

	// A 50k-element capture on a busy machine can keep Chrome silent for
	// longer than the default stall timeout (10 s), which would end the
	// connection; the benchmark measures, it does not judge liveness.
	s := watchdogs.NewSession(session.Profile{CDPURL: env.Browser.WebSocketURL(), ConnectTab: session.ConnectTabNew, StallTimeout: o.StallTimeout})
	if err := s.Start(ctx); err != nil {
		return res, fmt.Errorf("session: %w", err)
	}
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		if err := s.Stop(sctx); err != nil {
			fmt.Fprintf(log, "stopping the session: %v\n", err)
		}
	}()
	var pw *pwClient
	if script != "" {
		if pw, err = startPlaywright(ctx, script, env.Browser.WebSocketURL()); err != nil {
			return res, err
		}
		defer pw.Close()
		res.Playwright = pw.Version
	}

	for _, p := range o.Pages {
		pr, err := benchPage(ctx, s, pw, p, env.Server.URL1, docs.URL, o.Rounds, log)
		if err != nil {
			return res, fmt.Errorf("%s: %w", p.Name, err)
		}
		res.Pages = append(res.Pages, pr)
	}
	res.finish()
	return res, nil
}

func pageURL(p pageSpec, genBase, docBase string) string {
	if p.N > 0 {
		return fmt.Sprintf("%s/generated?n=%d", genBase, p.N)
	}
	return docBase + "/" + p.Name
}

// benchPage loads the page in both tabs, warms each tool once and runs the
// rounds: floor, browseragent (after a one-attribute change), the
// unchanged re-observe, Playwright.
func benchPage(ctx context.Context, s *session.Session, pw *pwClient, p pageSpec, genBase, docBase string, rounds int, log io.Writer) (pageResult, error) {
	pr := pageResult{Name: p.Name, URL: pageURL(p, genBase, docBase), Samples: map[string][]float64{}, Chars: map[string]int{}}
	fmt.Fprintf(log, "%s: loading %s\n", p.Name, pr.URL)
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: pr.URL}, bus.WithTimeout(5*time.Minute)); err != nil {
		return pr, fmt.Errorf("navigate: %w", err)
	}
	cs, err := s.PageSession("")
	if err != nil {
		return pr, err
	}
	var n struct {
		Elements int `json:"elements"`
	}
	if err := pagejs.Evaluate(ctx, cs, `({elements: document.getElementsByTagName('*').length})`, &n); err != nil {
		return pr, fmt.Errorf("count elements: %w", err)
	}
	pr.Elements = n.Elements
	if pw != nil {
		if err := pw.Goto(ctx, pr.URL); err != nil {
			return pr, err
		}
	}
	// Warm each tool once, untimed (a failure here shows in the rounds).
	_ = floor(ctx, cs)
	_, _ = observe(ctx, s)
	if pw != nil {
		_, _, _ = pw.Snapshot(ctx)
	}
	// A failed sample (a capture that timed out on a busy machine) is
	// noted and left out of the median; the round goes on.
	fail := func(tool string, err error) {
		pr.Errors = append(pr.Errors, fmt.Sprintf("%s: %v", tool, err))
		fmt.Fprintf(log, "%s: %s failed: %v\n", p.Name, tool, err)
	}
	for r := 0; r < rounds; r++ {
		if err := ctx.Err(); err != nil {
			return pr, err
		}
		t := time.Now()
		if err := floor(ctx, cs); err != nil {
			fail(toolFloor, err)
		} else {
			pr.Samples[toolFloor] = append(pr.Samples[toolFloor], since(t))
		}

		// A change the page shows nowhere, so that the observation is a
		// fresh one (as after an action), not the unchanged re-observe.
		if err := pagejs.Evaluate(ctx, cs, fmt.Sprintf(`document.documentElement.dataset.benchRound = "%d"`, r), nil); err != nil {
			return pr, fmt.Errorf("mark round: %w", err)
		}
		t = time.Now()
		if st, err := observe(ctx, s); err != nil {
			fail(toolOurs, err)
		} else {
			pr.Samples[toolOurs] = append(pr.Samples[toolOurs], since(t))
			pr.Chars[toolOurs], pr.Indexed = utf8.RuneCountInString(st.DOMText), len(st.Elements)
		}

		t = time.Now()
		if _, err := observe(ctx, s); err != nil {
			fail(toolReobserve, err)
		} else {
			pr.Samples[toolReobserve] = append(pr.Samples[toolReobserve], since(t))
		}

		if pw != nil {
			ms, chars, err := pw.Snapshot(ctx)
			if err != nil {
				fail(toolPlaywright, err)
			} else {
				pr.Samples[toolPlaywright] = append(pr.Samples[toolPlaywright], ms)
				pr.Chars[toolPlaywright] = chars
			}
		}
		fmt.Fprintf(log, "%s: round %d/%d done\n", p.Name, r+1, rounds)
	}
	return pr, nil
}
