package liveview

import (
	"context"
	"fmt"
	"net/http"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/internal/pagejs"
)

// focusPoll is how often the caster checks that the session's focus and
// the viewers are unchanged (the session announces focus on its bus, which
// the live view stays off).
const focusPoll = 200 * time.Millisecond

// frameWriteTimeout bounds writing one frame to a viewer.
const frameWriteTimeout = 30 * time.Second

// frameStream handles GET ./frames: an MJPEG stream (multipart/x-mixed-
// replace, one image/jpeg part per frame; the latest frame first, if any).
// A slow viewer skips frames rather than slowing the others.
func (v *Server) frameStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	ch := make(chan []byte, 1)
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
		return
	}
	v.viewers[ch] = struct{}{}
	if v.last != nil {
		ch <- v.last // the latest frame at once
	}
	start := !v.casting
	v.casting = true
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		delete(v.viewers, ch)
		v.mu.Unlock()
	}()
	if start {
		if err := v.group.Go("liveview screencast", v.cast); err != nil {
			v.mu.Lock()
			v.casting = false
			v.mu.Unlock()
			http.Error(w, ErrClosed.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "multipart/x-mixed-replace; boundary=frame")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	stop := v.group.Context().Done()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-stop:
			return
		case b := <-ch:
			_ = rc.SetWriteDeadline(time.Now().Add(frameWriteTimeout))
			if _, err := fmt.Fprintf(w, "--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n", len(b)); err != nil {
				return
			}
			if _, err := w.Write(b); err != nil {
				return
			}
			if _, err := w.Write([]byte("\r\n")); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// cast runs the screencast while anyone watches, following the focus.
func (v *Server) cast(ctx context.Context) {
	for {
		v.mu.Lock()
		if len(v.viewers) == 0 || ctx.Err() != nil {
			// Checked and cleared under one lock: a viewer arriving now
			// starts a new caster.
			v.casting = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		tab := v.s.FocusedTab()
		if tab != "" {
			if err := v.castTab(ctx, tab); err != nil && ctx.Err() == nil {
				v.log.Debug("screencast", zap.String("target", tab), zap.Error(err))
			}
		}
		if ctx.Err() != nil {
			continue // clears casting above
		}
		t := time.NewTimer(focusPoll)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// castTab screencasts one tab on a CDP session of the live view's own until
// the focus moves, the viewers leave, the tab goes or ctx ends.
func (v *Server) castTab(ctx context.Context, tab string) error {
	conn := v.s.Conn()
	if conn == nil {
		return fmt.Errorf("session not connected")
	}
	actx, cancel := context.WithTimeout(ctx, cdpTimeout)
	ps, err := conn.AttachToTarget(actx, target.ID(tab))
	cancel()
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	defer func() {
		// Detach also ends the screencast; bounded, ctx may be over.
		dctx, cancel := context.WithTimeout(context.Background(), cdpTimeout)
		_ = conn.DetachFromTarget(dctx, ps)
		cancel()
	}()
	sub := ps.SubscribeEvents(page.ScreencastFrame.Method)
	defer sub.Cancel()
	sctx, cancel := context.WithTimeout(ctx, cdpTimeout)
	_, err = cdpproto.Call(sctx, ps, page.StartScreencast, page.StartScreencastParams{
		Format:    page.StartScreencastFormatJpeg,
		Quality:   pagejs.Ptr(int64(v.cfg.Quality)),
		MaxWidth:  int64(v.cfg.MaxWidth),
		MaxHeight: int64(v.cfg.MaxHeight),
	})
	cancel()
	if err != nil {
		return fmt.Errorf("start screencast: %w", err)
	}
	v.log.Debug("screencast started", zap.String("target", tab))
	v.mu.Lock()
	if v.lastTab != tab {
		// Another tab's picture must not greet a viewer who arrives now.
		v.last, v.lastTab, v.lastW, v.lastH = nil, "", 0, 0
	}
	v.mu.Unlock()
	// Headless Chrome sends a frame only when the page paints: a still
	// page would show nothing. One screenshot stands in until it paints.
	sctx, cancel = context.WithTimeout(ctx, cdpTimeout)
	shot, err := cdpproto.Call(sctx, ps, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: pagejs.Ptr(int64(v.cfg.Quality))})
	cancel()
	if err == nil {
		v.broadcast(tab, shot.Data, 0, 0)
	} else if ctx.Err() == nil {
		v.log.Debug("first frame", zap.Error(err))
	}
	tick := time.NewTicker(focusPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ps.Done():
			return ps.Err()
		case ev, ok := <-sub.C():
			if !ok {
				return sub.Err()
			}
			var fr page.EventScreencastFrame
			if err := ev.Decode(&fr); err != nil {
				v.log.Warn("undecodable screencast frame", zap.Error(err))
				continue
			}
			// Always ack, or Chrome stops sending frames.
			actx, cancel := context.WithTimeout(ctx, cdpTimeout)
			_, err := cdpproto.Call(actx, ps, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: fr.SessionID})
			cancel()
			if err != nil && ctx.Err() == nil {
				v.log.Debug("screencast ack", zap.Error(err))
			}
			var fw, fh float64
			if fr.Metadata != nil {
				fw, fh = fr.Metadata.DeviceWidth, fr.Metadata.DeviceHeight
			}
			v.broadcast(tab, fr.Data, fw, fh)
		case <-tick.C:
			v.mu.Lock()
			watched := len(v.viewers) > 0
			v.mu.Unlock()
			if !watched || v.s.FocusedTab() != tab {
				sctx, cancel := context.WithTimeout(ctx, cdpTimeout)
				_, _ = cdpproto.Call(sctx, ps, page.StopScreencast, cdpproto.Empty{})
				cancel()
				return nil
			}
		}
	}
}

// broadcast hands a frame of tab to every viewer, replacing one it has not
// taken. w and h are the page area it shows (CSS px; 0 when unknown: the
// viewport's).
func (v *Server) broadcast(tab string, b []byte, w, h float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.frames++
	v.last, v.lastTab, v.lastW, v.lastH = b, tab, w, h
	for ch := range v.viewers {
		select {
		case <-ch:
		default:
		}
		ch <- b // cannot block: one slot, emptied above, filled only here
	}
}
