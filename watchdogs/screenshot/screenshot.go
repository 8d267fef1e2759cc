// Package screenshot is the screenshot watchdog: it answers
// events.Screenshot with a PNG of a tab (viewport, full page or a clip), and
// events.PrintPDF with the tab printed as a PDF.
// The DOM watchdog asks it for the image of every observation through the
// bus; a deployment that replaces it by name (see
// examples/redact-screenshots) replaces every screenshot the runtime takes.
package screenshot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/session"
)

// Name is the screenshot watchdog's name and the name of its handler.
const Name = "screenshot"

// Config configures the screenshot watchdog. The zero value means the
// defaults.
type Config struct {
	// Logger receives debug messages. Default: the session's logger, named
	// "screenshot".
	Logger *zap.Logger
}

// Watchdog answers events.PrintPDF (see printPDF) and events.Screenshot
// with a PNG of a tab (the event's
// TargetID, else the focused tab): the viewport, the full page (clipped to
// the content size, at most MaxSide CSS pixels each way) or a clip in page
// coordinates. The DOM watchdog asks it for the image of every observation
// through the bus, so a deployment that replaces this watchdog (by name)
// replaces the screenshots everywhere. Nothing of the runtime draws on
// pages, so the images carry no overlays; a future highlighter must hide
// itself here before capturing.
type Watchdog struct {
	cfg Config
}

// New returns a screenshot watchdog.
func New(cfg Config) *Watchdog { return &Watchdog{cfg: cfg} }

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Attach implements session.Watchdog.
func (w *Watchdog) Attach(s *session.Session) error {
	log := w.cfg.Logger
	if log == nil {
		log = s.Logger().Named(Name)
	}
	pdf := session.Handle(s, events.PrintPDF, Name, func(ctx context.Context, ev events.PrintPDFEvent) (events.PrintPDFResult, error) {
		return printPDF(ctx, s, ev)
	})
	return errors.Join(pdf, session.Handle(s, events.Screenshot, Name,
		func(ctx context.Context, ev events.ScreenshotEvent) (events.ScreenshotResult, error) {
			tab := ev.TargetID
			if tab == "" {
				tab = s.FocusedTab()
			}
			if err := s.Readable(tab); err != nil {
				return events.ScreenshotResult{}, fmt.Errorf("screenshot: %w", err)
			}
			cs, err := s.PageSession(tab)
			if err != nil {
				return events.ScreenshotResult{}, fmt.Errorf("screenshot: %w", err)
			}
			if focused := s.FocusedTab(); tab == focused {
				// In a shared browser another tab may be in front: ours
				// would not be painted.
				if err := s.Front(ctx); err != nil {
					log.Debug("bringing the tab to the front", zap.Error(err))
				}
			} else {
				// A tab behind another is not painted: bring it to the
				// front for the capture, then give the front back.
				if conn := s.Conn(); conn != nil {
					if err := conn.ActivateTarget(ctx, target.ID(tab)); err != nil {
						return events.ScreenshotResult{}, fmt.Errorf("screenshot: bringing tab %s to the front: %w", tab, err)
					}
					defer func() {
						rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
						defer cancel()
						if err := conn.ActivateTarget(rctx, target.ID(focused)); err != nil {
							log.Debug("giving the front back", zap.String("target", focused), zap.Error(err))
						}
					}()
				}
			}
			png, err := capture(ctx, cs, ev)
			if err != nil {
				log.Debug("capture failed", zap.String("target", tab), zap.Error(err))
				return events.ScreenshotResult{}, err
			}
			return events.ScreenshotResult{PNG: png, TargetID: tab}, nil
		}))
}

// Errors of the screenshot watchdog.
var (
	// ErrBadRequest: the event's fields contradict each other or the clip is
	// not a rectangle of positive size at a non-negative origin.
	ErrBadRequest = errors.New("screenshot: bad request")
	// ErrEmpty: the browser answered without an image.
	ErrEmpty = errors.New("screenshot: browser returned no image")
)

// MaxSide bounds full-page captures, in CSS pixels each way (GPU texture
// limits).
const MaxSide = 16384

// capture takes a PNG of the page behind cs.
func capture(ctx context.Context, cs *cdp.Session, ev events.ScreenshotEvent) ([]byte, error) {
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, FromSurface: pagejs.Ptr(true)}
	switch {
	case ev.FullPage && ev.Clip != nil:
		return nil, fmt.Errorf("%w: FullPage and Clip are exclusive", ErrBadRequest)
	case ev.Clip != nil:
		c := ev.Clip
		if !(c.Width > 0 && c.Height > 0) || math.IsInf(c.Width+c.Height+c.X+c.Y, 0) || math.IsNaN(c.Width+c.Height+c.X+c.Y) || c.X < 0 || c.Y < 0 {
			return nil, fmt.Errorf("%w: clip %+v must have a positive size and a non-negative origin", ErrBadRequest, *c)
		}
		p.Clip = &page.Viewport{X: c.X, Y: c.Y, Width: c.Width, Height: c.Height, Scale: 1}
		p.CaptureBeyondViewport = pagejs.Ptr(true)
	case ev.FullPage:
		m, err := cdpproto.Call(ctx, cs, page.GetLayoutMetrics, cdpproto.Empty{})
		if err != nil {
			return nil, fmt.Errorf("screenshot: layout metrics: %w", err)
		}
		if m.CSSContentSize == nil || m.CSSContentSize.Width <= 0 || m.CSSContentSize.Height <= 0 {
			return nil, fmt.Errorf("screenshot: page reports no content size")
		}
		w := math.Min(math.Ceil(m.CSSContentSize.Width), MaxSide)
		h := math.Min(math.Ceil(m.CSSContentSize.Height), MaxSide)
		p.Clip = &page.Viewport{X: 0, Y: 0, Width: w, Height: h, Scale: 1}
		p.CaptureBeyondViewport = pagejs.Ptr(true)
	}
	res, err := cdpproto.Call(ctx, cs, page.CaptureScreenshot, p)
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	if len(res.Data) == 0 {
		return nil, ErrEmpty
	}
	return res.Data, nil
}
