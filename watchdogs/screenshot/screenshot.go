package watchdogs

import (
	"context"
	"errors"
	"fmt"
	"math"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// ScreenshotConfig configures the screenshot watchdog. The zero value means
// the defaults.
type ScreenshotConfig struct {
	// Logger receives debug messages. Default zap.NewNop().
	Logger *zap.Logger
}

// ScreenshotWatchdog answers events.Screenshot with a PNG of the focused
// tab: the viewport, the full page (clipped to the content size, at most
// 16,384 CSS pixels each way) or a clip in page coordinates. Nothing of the
// runtime draws on pages, so the images carry no overlays; a future
// highlighter must hide itself here before capturing.
type ScreenshotWatchdog struct {
	cfg ScreenshotConfig
}

// NewScreenshot returns a screenshot watchdog.
func NewScreenshot(cfg ScreenshotConfig) *ScreenshotWatchdog {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &ScreenshotWatchdog{cfg: cfg}
}

// Name implements session.Watchdog.
func (w *ScreenshotWatchdog) Name() string { return "screenshot" }

// Attach implements session.Watchdog.
func (w *ScreenshotWatchdog) Attach(s *session.Session) error {
	return register(s.Bus(), w.Name(), events.Screenshot,
		func(ctx context.Context, ev events.ScreenshotEvent) (events.ScreenshotResult, error) {
			tab := s.FocusedTab()
			cs, err := s.PageSession(tab)
			if err != nil {
				return events.ScreenshotResult{}, fmt.Errorf("screenshot: %w", err)
			}
			png, err := shotCapture(ctx, cs, ev)
			if err != nil {
				return events.ScreenshotResult{}, err
			}
			return events.ScreenshotResult{PNG: png, TargetID: tab}, nil
		})
}

var (
	shotErrBadRequest = errors.New("screenshot: bad request")
	shotErrEmpty      = errors.New("screenshot: browser returned no image")
)

// shotMaxSide bounds full-page captures (GPU texture limits).
const shotMaxSide = 16384

// shotCapture takes a PNG of the page behind cs. The DOM watchdog calls it
// on its own goroutine while it captures the DOM.
func shotCapture(ctx context.Context, cs *cdp.Session, ev events.ScreenshotEvent) ([]byte, error) {
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, FromSurface: ptr(true)}
	switch {
	case ev.FullPage && ev.Clip != nil:
		return nil, fmt.Errorf("%w: FullPage and Clip are exclusive", shotErrBadRequest)
	case ev.Clip != nil:
		c := ev.Clip
		if !(c.Width > 0 && c.Height > 0) || math.IsInf(c.Width+c.Height+c.X+c.Y, 0) || math.IsNaN(c.Width+c.Height+c.X+c.Y) || c.X < 0 || c.Y < 0 {
			return nil, fmt.Errorf("%w: clip %+v must have a positive size and a non-negative origin", shotErrBadRequest, *c)
		}
		p.Clip = &page.Viewport{X: c.X, Y: c.Y, Width: c.Width, Height: c.Height, Scale: 1}
		p.CaptureBeyondViewport = ptr(true)
	case ev.FullPage:
		m, err := cdpproto.Call(ctx, cs, page.GetLayoutMetrics, cdpproto.Empty{})
		if err != nil {
			return nil, fmt.Errorf("screenshot: layout metrics: %w", err)
		}
		if m.CSSContentSize == nil || m.CSSContentSize.Width <= 0 || m.CSSContentSize.Height <= 0 {
			return nil, fmt.Errorf("screenshot: page reports no content size")
		}
		w := math.Min(math.Ceil(m.CSSContentSize.Width), shotMaxSide)
		h := math.Min(math.Ceil(m.CSSContentSize.Height), shotMaxSide)
		p.Clip = &page.Viewport{X: 0, Y: 0, Width: w, Height: h, Scale: 1}
		p.CaptureBeyondViewport = ptr(true)
	}
	res, err := cdpproto.Call(ctx, cs, page.CaptureScreenshot, p)
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	if len(res.Data) == 0 {
		return nil, shotErrEmpty
	}
	return res.Data, nil
}
