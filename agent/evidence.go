package agent

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// AfterScreenshotTimeout bounds the screenshot taken after the last step's
// actions (StateRecord.AfterScreenshotPath): evidence for the report, not
// worth holding up the end of a run for.
const AfterScreenshotTimeout = 5 * time.Second

// mark is where an action on element index of the step's observation
// landed, for the report: the element's box from the observation's
// selector map (the screenshot the step took shows the page then) and
// point, the mouse's position when the action used the mouse. It is nil
// when neither is known (index 0, an element without bounds, no point).
//
// The box is in the top-level viewport's coordinates as the observation
// saw them; the point is where the watchdog aimed when it acted, in the
// element's frame target's viewport. The point is kept only where it
// matches the box (within pointSlack): an element in a cross-site iframe
// (its own target: the point is local to it), an element not wholly in
// view (the watchdog scrolled it first), or a page an earlier action of
// the batch scrolled would put the dot somewhere the mouse never was on
// the step's screenshot.
func (ac *ActionContext) mark(index int, point *[2]float64) *ActionMark {
	m := &ActionMark{Point: point}
	if st := ac.BrowserState; st != nil && index > 0 {
		if el, ok := st.Elements[index]; ok && el.Bounds != nil {
			b := el.Bounds
			m.Box = &[4]float64{b.X, b.Y, b.Width, b.Height}
			vw, vh := float64(st.Page.ViewportWidth), float64(st.Page.ViewportHeight)
			switch {
			case m.Point == nil:
			case vw > 0 && vh > 0 && (b.X < 0 || b.Y < 0 || b.X+b.Width > vw || b.Y+b.Height > vh),
				el.TargetID != "" && st.FocusedTarget != "" && el.TargetID != st.FocusedTarget,
				!inBox(*m.Point, *m.Box, pointSlack):
				m.Point = nil
			}
		}
	}
	if m.Box == nil && m.Point == nil {
		return nil
	}
	return m
}

// pointSlack is how far (CSS px) outside its element's box a recorded
// mouse point may lie and still be drawn: rounding of the box and of the
// aim.
const pointSlack = 2

// inBox reports whether p lies in box b (x, y, w, h) grown by slack.
func inBox(p [2]float64, b [4]float64, slack float64) bool {
	return p[0] >= b[0]-slack && p[0] <= b[0]+b[2]+slack && p[1] >= b[1]-slack && p[1] <= b[1]+b[3]+slack
}

// clickPoint is the point a click result reports, nil when the click did
// not get as far as aiming (no method recorded) or did not use the mouse
// (a JavaScript click: no mouse went there).
func clickPoint(r events.ClickResult) *[2]float64 {
	if r.Method == "" || r.Method == "js_fallback" {
		return nil
	}
	return &[2]float64{r.X, r.Y}
}

// viewportOf is the area the step's screenshot shows, in CSS pixels, nil
// when the observation did not measure it: the image's size over its
// scale when both are known (a headful window's scrollbars are in the
// image but not in the page's viewport, and the marks are placed in
// percent of the image), else the page's viewport.
func viewportOf(st *events.BrowserState) *Viewport {
	if st.ScreenshotScale > 0 && st.ScreenshotWidth > 0 && st.ScreenshotHeight > 0 {
		// To 1/100 px: the scale is measured, its float noise is not.
		css := func(px int) float64 { return math.Round(float64(px)/st.ScreenshotScale*100) / 100 }
		return &Viewport{Width: css(st.ScreenshotWidth), Height: css(st.ScreenshotHeight)}
	}
	if st.Page.ViewportWidth <= 0 || st.Page.ViewportHeight <= 0 {
		return nil
	}
	return &Viewport{Width: float64(st.Page.ViewportWidth), Height: float64(st.Page.ViewportHeight)}
}

// changedPage reports whether an action of the step changed the page: by
// its verdict (changed, navigated, new_tab), or failed yet with another
// URL or page fingerprint after it (a form whose POST answered 500 with
// an error page).
func changedPage(recs []ActionRecord) bool {
	for _, r := range recs {
		switch r.Verdict {
		case events.VerdictChanged, events.VerdictNavigated, events.VerdictNewTab:
			return true
		case events.VerdictFailed:
			if o := r.Result.Outcome; o != nil && evidenceDiffers(o.Before, o.After) {
				return true
			}
		}
	}
	return false
}

// evidenceDiffers reports whether the page's URL or fingerprint differs
// between two readings; false when either reading is empty.
func evidenceDiffers(b, a events.Evidence) bool {
	if b.URL == "" && b.Fingerprint == "" || a.URL == "" && a.Fingerprint == "" {
		return false
	}
	return b.URL != a.URL || b.Fingerprint != a.Fingerprint
}

// doneAccepted reports whether the step's actions include a done that
// ends the run (not one the done check held back).
func doneAccepted(recs []ActionRecord) bool {
	for _, r := range recs {
		if r.Result.Done && r.Error == "" {
			return true
		}
	}
	return false
}

// afterShot saves the page as the step's actions left it
// (StateRecord.AfterScreenshotPath, screenshots/step_N_after.<ext>) when
// they changed it and no later observation will show it: final is set for
// the run's last step (its last allowed step, an accepted done after
// page-changing actions, the forced final answer, a budget stop, or the
// run stopped during it). Vision off takes none. The capture is bounded by
// AfterScreenshotTimeout, also runs when ctx has ended (a stopped run is
// the case that needs it), and a failure only goes to the log.
func (a *Agent) afterShot(ctx context.Context, item *HistoryItem, final bool) {
	if !final || a.set.Vision == VisionOff || !changedPage(item.Actions) {
		return
	}
	b := a.browser.Bus()
	if b == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AfterScreenshotTimeout)
	defer cancel()
	res, err := bus.Call(cctx, b, events.Screenshot, events.ScreenshotEvent{ImageOptions: a.screenshotOptions()})
	if err == nil && len(res.Data) == 0 {
		err = fmt.Errorf("the browser returned no image")
	}
	if err != nil {
		a.log.Debug("agent: after-action screenshot", zap.Int("step", item.Step), zap.Error(err))
		return
	}
	dir := filepath.Join(a.runDir, "screenshots")
	p := filepath.Join(dir, fmt.Sprintf("step_%d_after%s", item.Step, screenshotExt(&events.BrowserState{Screenshot: res.Data, ScreenshotType: res.MediaType})))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.log.Debug("agent: after-action screenshot", zap.Error(err))
		return
	}
	if err := os.WriteFile(p, res.Data, 0o644); err != nil {
		a.log.Debug("agent: after-action screenshot", zap.Error(err))
		return
	}
	item.State.AfterScreenshotPath = p
}
