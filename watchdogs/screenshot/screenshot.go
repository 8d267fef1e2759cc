// Package screenshot is the screenshot watchdog: it answers
// events.Screenshot with an image of a tab (viewport, full page or a clip;
// PNG, JPEG or WebP; at full size or scaled down by the browser), and
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
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/internal/imgsize"
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
// with an image of a tab (the event's
// TargetID, else the focused tab): the viewport, the full page (clipped to
// the content size, at most MaxSide CSS pixels each way) or a clip in page
// coordinates, encoded and bounded as the event's ImageOptions say (Chrome
// encodes and scales: no image is decoded here). The result says its media
// type, its size (read from the image's header) and its scale. The device
// pixel ratio a bound needs is measured on the images Chrome returns, never
// asked of the page (see capture). The DOM watchdog asks it for the image of every observation
// through the bus, so a deployment that replaces this watchdog (by name)
// replaces the screenshots everywhere. Nothing of the runtime draws on
// pages, so the images carry no overlays; a future highlighter must hide
// itself here before capturing.
type Watchdog struct {
	cfg Config
	// ratios caches each tab's device pixel ratio as measured on its last
	// bounded capture (see capture): a later capture of the tab takes one
	// call.
	ratios ratioCache
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
			res, err := capture(ctx, cs, ev, w.ratios.get(tab), log)
			if err != nil {
				log.Debug("capture failed", zap.String("target", tab), zap.Error(err))
				return events.ScreenshotResult{}, err
			}
			if res.ratio > 0 {
				w.ratios.put(tab, res.ratio)
			}
			res.TargetID = tab
			return res.ScreenshotResult, nil
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

// The device pixel ratios a measure is believed in: a measure outside is
// clamped (and logged).
const (
	minRatio = 0.5
	maxRatio = 8
)

// ratioCache holds a device pixel ratio per tab.
type ratioCache struct {
	mu sync.Mutex
	m  map[string]float64
}

// get is the tab's cached ratio, else 1.
func (c *ratioCache) get(tab string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.m[tab]; ok {
		return r
	}
	return 1
}

func (c *ratioCache) put(tab string, r float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 256 {
		// Closed tabs' entries go with the rest now and then; a missing
		// entry costs one more capture.
		c.m = map[string]float64{}
	}
	c.m[tab] = r
}

// captured is a capture and the device pixel ratio measured on it (0 = not
// measured: no size bound).
type captured struct {
	events.ScreenshotResult
	ratio float64
}

// capture takes an image of the page behind cs. Without a size bound the
// capture is the one Chrome gives (a viewport capture has no clip); with
// one, the captured area is a clip whose scale makes the image fit, so that
// Chrome does the resize.
//
// Chrome renders a clip at its scale times the device pixel ratio. The
// ratio is not asked of the page (its devicePixelRatio is the page's to
// redefine, and evaluating waits on its main thread): the clip is captured
// at the scale computed for ratio (the tab's last measure, else 1), the
// true ratio is read off the image (its width over the clip's scaled
// width), and when the image breaks the bound or is well under it, the
// clip is captured once more at the corrected scale.
func capture(ctx context.Context, cs *cdp.Session, ev events.ScreenshotEvent, ratio float64, log *zap.Logger) (captured, error) {
	res, err := captureOnce(ctx, cs, ev, ratio)
	if err != nil || res.clip == nil {
		return res.captured, err
	}
	o, c := ev.ImageOptions, res.clip
	measured := float64(res.Width) / (c.Width * c.Scale)
	if !(measured >= minRatio && measured <= maxRatio) {
		// Not a ratio Chrome renders at: the image is not the clip's.
		clamped := math.Min(math.Max(measured, minRatio), maxRatio)
		if math.IsNaN(measured) {
			clamped = 1
		}
		log.Warn("implausible device pixel ratio measured on a capture; clamped",
			zap.Float64("measured", measured), zap.Float64("clamped", clamped),
			zap.Int("width", res.Width), zap.Float64("clip_width", c.Width), zap.Float64("clip_scale", c.Scale))
		measured = clamped
	}
	if breaks(res.Width, res.Height, o) || farUnder(res.Width, res.Height, c.Width*measured, c.Height*measured, o) {
		again, err := captureOnce(ctx, cs, ev, measured)
		if err != nil {
			return captured{}, err
		}
		if breaks(again.Width, again.Height, o) {
			log.Warn("a capture at the measured device pixel ratio still breaks the size bound",
				zap.Float64("ratio", measured), zap.Int("width", again.Width), zap.Int("height", again.Height),
				zap.Int("max_width", o.MaxWidth), zap.Int("max_height", o.MaxHeight))
		}
		res = again
	}
	res.ratio = measured
	return res.captured, nil
}

// breaks reports whether a w×h image is larger than the bound (by more
// than Chrome's rounding).
func breaks(w, h int, o events.ImageOptions) bool {
	return (o.MaxWidth > 0 && w > o.MaxWidth+1) || (o.MaxHeight > 0 && h > o.MaxHeight+1)
}

// farUnder reports whether a w×h image is well under what the bound allows
// a capture of fullW×fullH device pixels (a ratio assumed too high).
func farUnder(w, h int, fullW, fullH float64, o events.ImageOptions) bool {
	s := fitScale(fullW, fullH, o.MaxWidth, o.MaxHeight)
	return float64(w) < 0.95*fullW*s-1 || float64(h) < 0.95*fullH*s-1
}

// once is one capture and the clip it was taken with (nil = none).
type once struct {
	captured
	clip *page.Viewport
}

// captureOnce captures the page once, a bounded clip at the scale that fits
// the bound if the device pixel ratio is ratio.
func captureOnce(ctx context.Context, cs *cdp.Session, ev events.ScreenshotEvent, ratio float64) (once, error) {
	o := ev.ImageOptions
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, FromSurface: pagejs.Ptr(true)}
	switch o.Format {
	case "", events.ImagePNG:
	case events.ImageJPEG:
		p.Format = page.CaptureScreenshotFormatJpeg
	case events.ImageWebP:
		p.Format = page.CaptureScreenshotFormatWebp
	default:
		return once{}, fmt.Errorf("%w: format %q (want png, jpeg or webp)", ErrBadRequest, o.Format)
	}
	if o.Quality < 0 || o.Quality > 100 {
		return once{}, fmt.Errorf("%w: quality %d (want 1..100, or 0 for the default)", ErrBadRequest, o.Quality)
	}
	if o.Quality > 0 && p.Format != page.CaptureScreenshotFormatPng {
		p.Quality = pagejs.Ptr(int64(o.Quality))
	}
	if o.MaxWidth < 0 || o.MaxHeight < 0 {
		return once{}, fmt.Errorf("%w: negative size bound %dx%d", ErrBadRequest, o.MaxWidth, o.MaxHeight)
	}
	bounded := o.MaxWidth > 0 || o.MaxHeight > 0
	metrics := func() (page.GetLayoutMetricsResult, error) {
		m, err := cdpproto.Call(ctx, cs, page.GetLayoutMetrics, cdpproto.Empty{})
		if err != nil {
			return m, fmt.Errorf("screenshot: layout metrics: %w", err)
		}
		return m, nil
	}
	switch {
	case ev.FullPage && ev.Clip != nil:
		return once{}, fmt.Errorf("%w: FullPage and Clip are exclusive", ErrBadRequest)
	case ev.Clip != nil:
		c := ev.Clip
		if !(c.Width > 0 && c.Height > 0) || math.IsInf(c.Width+c.Height+c.X+c.Y, 0) || math.IsNaN(c.Width+c.Height+c.X+c.Y) || c.X < 0 || c.Y < 0 {
			return once{}, fmt.Errorf("%w: clip %+v must have a positive size and a non-negative origin", ErrBadRequest, *c)
		}
		p.Clip = &page.Viewport{X: c.X, Y: c.Y, Width: c.Width, Height: c.Height, Scale: 1}
		p.CaptureBeyondViewport = pagejs.Ptr(true)
	case ev.FullPage:
		m, err := metrics()
		if err != nil {
			return once{}, err
		}
		if m.CSSContentSize == nil || m.CSSContentSize.Width <= 0 || m.CSSContentSize.Height <= 0 {
			return once{}, fmt.Errorf("screenshot: page reports no content size")
		}
		w := math.Min(math.Ceil(m.CSSContentSize.Width), MaxSide)
		h := math.Min(math.Ceil(m.CSSContentSize.Height), MaxSide)
		p.Clip = &page.Viewport{X: 0, Y: 0, Width: w, Height: h, Scale: 1}
		p.CaptureBeyondViewport = pagejs.Ptr(true)
	case bounded:
		// The viewport as a clip in page coordinates, not beyond it: the
		// same pixels as a capture without a clip, at the clip's scale.
		m, err := metrics()
		if err != nil {
			return once{}, err
		}
		v := m.CSSVisualViewport
		if v == nil || v.ClientWidth <= 0 || v.ClientHeight <= 0 {
			return once{}, fmt.Errorf("screenshot: page reports no viewport")
		}
		p.Clip = &page.Viewport{X: v.PageX, Y: v.PageY, Width: v.ClientWidth, Height: v.ClientHeight, Scale: 1}
		p.CaptureBeyondViewport = pagejs.Ptr(false)
	}
	if bounded && p.Clip != nil {
		p.Clip.Scale = fitScale(p.Clip.Width*ratio, p.Clip.Height*ratio, o.MaxWidth, o.MaxHeight)
	}
	res, err := cdpproto.Call(ctx, cs, page.CaptureScreenshot, p)
	if err != nil {
		return once{}, fmt.Errorf("screenshot: %w", err)
	}
	if len(res.Data) == 0 {
		return once{}, ErrEmpty
	}
	out := once{clip: p.Clip}
	out.Data, out.MediaType = res.Data, o.Format.MediaType()
	w, h, err := imgsize.Of(res.Data)
	if err != nil {
		return once{}, fmt.Errorf("screenshot: the browser's image: %w", err)
	}
	out.Width, out.Height = w, h
	// A clip's scale is measured on the image: it holds whatever the
	// device pixel ratio and the clip's scale did. A capture without a clip
	// (the default viewport capture) is at the device pixel ratio, which
	// it does not measure: Scale stays 0.
	if p.Clip != nil {
		out.Scale = float64(w) / p.Clip.Width
	}
	if !bounded {
		out.clip = nil
	}
	return out, nil
}

// fitScale is the factor (at most 1) that makes a w×h image fit maxW×maxH
// (0 = no bound on that side).
func fitScale(w, h float64, maxW, maxH int) float64 {
	s := 1.0
	if maxW > 0 && w > float64(maxW) {
		s = math.Min(s, float64(maxW)/w)
	}
	if maxH > 0 && h > float64(maxH) {
		s = math.Min(s, float64(maxH)/h)
	}
	return s
}
