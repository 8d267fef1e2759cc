package watchdogs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of jpeg frames
	_ "image/png"  // DecodeConfig of png frames
	"os"
	"path/filepath"
	"sync"
	"time"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
)

// Recording watchdog defaults.
const (
	DefaultRecordingFormat    = "jpeg"
	DefaultRecordingQuality   = 70
	DefaultRecordingMaxWidth  = 1280
	DefaultRecordingMaxHeight = 800
	DefaultRecordingMaxFrames = 2000
)

// RecordingManifest is the name of the manifest file the recording watchdog
// writes in RecordingConfig.Dir: one JSON object per written frame, see
// Recording.
const RecordingManifest = "frames.jsonl"

// ErrRecordingConfig is wrapped by the error Attach returns for an invalid
// RecordingConfig (so Session.Start fails before connecting).
var ErrRecordingConfig = errors.New("recording: invalid config")

// RecordingConfig configures the recording watchdog.
type RecordingConfig struct {
	// Dir is where frames and the manifest go (created if missing).
	// Required.
	Dir string
	// Format is "jpeg" (default) or "png".
	Format string
	// Quality is the jpeg quality, 1..100. Default DefaultRecordingQuality.
	Quality int
	// MaxWidth and MaxHeight bound the frame size in pixels (Chrome scales
	// down, keeping the aspect ratio). Defaults 1280x800.
	MaxWidth, MaxHeight int
	// EveryNthFrame asks Chrome to send only every n-th painted frame.
	// Default 1.
	EveryNthFrame int
	// MaxFrames bounds how many frames are written; when reached, the
	// screencast stops and one warning is logged. Default
	// DefaultRecordingMaxFrames.
	MaxFrames int
	// Logger; default zap.NewNop().
	Logger *zap.Logger
}

// Recording is the optional screencast watchdog (name "recording"). It is
// not in Defaults; add it with
// session.WithWatchdogs(watchdogs.NewRecording(cfg)).
//
// On BrowserConnected, BrowserReconnected and every AgentFocusChanged it
// runs Page.startScreencast on the focused tab (stopping it on the
// previously recorded tab); if Chrome refuses, the handler returns the error
// (so a failure on BrowserConnected fails Session.Start). Each frame Chrome sends is acknowledged and written to
// Dir as frame-000001.jpg (or .png), numbered from 1 in arrival order, and
// described by one line of Dir/frames.jsonl:
//
//	{"seq":1,"file":"frame-000001.jpg","time":"2026-...Z","target":"<tab id>","width":1280,"height":800}
//
// time is Chrome's frame swap timestamp (UTC; the arrival time if Chrome
// gave none), so a report can place frames on the session's timeline.
// Headless Chrome only sends a frame when the page paints: a static page
// yields one or a few frames.
//
// A Recording may be reused across Start/Stop of its session: numbering
// and the manifest continue. The manifest is truncated on the first Attach
// of a new Recording. Frames are consumed by a goroutine the watchdog owns,
// never on the CDP reader and never through the bus; Detach stops the
// screencast (while the connection lives) and that goroutine, after which
// nothing more is written.
type Recording struct {
	cfg RecordingConfig
	log *zap.Logger

	mu       sync.Mutex
	ctx      context.Context // cancelled by Detach
	cancel   context.CancelFunc
	cur      *recStream // the screencast running now, or nil
	manifest *os.File
	reserved int  // sequence numbers handed out
	written  int  // frames written (file and manifest line)
	capped   bool // MaxFrames reached
	attached bool // Attach succeeded at least once (manifest truncated)
	wg       sync.WaitGroup
}

// recStream is one screencast on one tab and the goroutine consuming it.
type recStream struct {
	ps  *cdp.Session
	sub *cdp.Subscription
}

// NewRecording returns the recording watchdog. cfg is validated by Attach.
func NewRecording(cfg RecordingConfig) *Recording {
	if cfg.Format == "" {
		cfg.Format = DefaultRecordingFormat
	}
	if cfg.Quality == 0 {
		cfg.Quality = DefaultRecordingQuality
	}
	if cfg.MaxWidth == 0 {
		cfg.MaxWidth = DefaultRecordingMaxWidth
	}
	if cfg.MaxHeight == 0 {
		cfg.MaxHeight = DefaultRecordingMaxHeight
	}
	if cfg.EveryNthFrame == 0 {
		cfg.EveryNthFrame = 1
	}
	if cfg.MaxFrames == 0 {
		cfg.MaxFrames = DefaultRecordingMaxFrames
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Recording{cfg: cfg, log: log.Named("recording")}
}

// Name implements session.Watchdog.
func (r *Recording) Name() string { return "recording" }

// Frames returns how many frames have been written so far.
func (r *Recording) Frames() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written
}

func (r *Recording) recValidate() error {
	c := r.cfg
	switch {
	case c.Dir == "":
		return fmt.Errorf("%w: Dir is required (where frames are written)", ErrRecordingConfig)
	case c.Format != "jpeg" && c.Format != "png":
		return fmt.Errorf("%w: Format %q (want \"jpeg\" or \"png\")", ErrRecordingConfig, c.Format)
	case c.Quality < 1 || c.Quality > 100:
		return fmt.Errorf("%w: Quality %d (want 1..100)", ErrRecordingConfig, c.Quality)
	case c.MaxWidth < 1 || c.MaxHeight < 1:
		return fmt.Errorf("%w: MaxWidth/MaxHeight %dx%d (want positive)", ErrRecordingConfig, c.MaxWidth, c.MaxHeight)
	case c.EveryNthFrame < 1:
		return fmt.Errorf("%w: EveryNthFrame %d (want positive)", ErrRecordingConfig, c.EveryNthFrame)
	case c.MaxFrames < 1:
		return fmt.Errorf("%w: MaxFrames %d (want positive)", ErrRecordingConfig, c.MaxFrames)
	}
	return nil
}

// Attach implements session.Watchdog: it validates the config, creates Dir
// and opens the manifest, and registers the focus-following handlers.
func (r *Recording) Attach(s *session.Session) error {
	if err := r.recValidate(); err != nil {
		return err
	}
	if err := os.MkdirAll(r.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	r.mu.Lock()
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if !r.attached {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(filepath.Join(r.cfg.Dir, RecordingManifest), flags, 0o644)
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("recording: %w", err)
	}
	r.attached = true
	r.manifest = f
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.cur = nil
	r.mu.Unlock()
	follow := func(ctx context.Context) (events.None, error) {
		return events.None{}, r.recFollow(ctx, s)
	}
	err = errors.Join(
		register(s.Bus(), r.Name(), events.BrowserConnected, func(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
			return follow(ctx)
		}),
		register(s.Bus(), r.Name(), events.AgentFocusChanged, func(ctx context.Context, _ events.AgentFocusChangedEvent) (events.None, error) {
			return follow(ctx)
		}),
		// A reconnect gives the tabs new CDP sessions; resume on the focused one.
		register(s.Bus(), r.Name(), events.BrowserReconnected, func(ctx context.Context, _ events.BrowserReconnectedEvent) (events.None, error) {
			return follow(ctx)
		}),
	)
	if err != nil {
		// Detach is not called after a failed Attach: release here.
		r.cancel()
		f.Close()
		r.mu.Lock()
		r.manifest = nil
		r.mu.Unlock()
	}
	return err
}

// recFollow moves the screencast to the focused tab.
func (r *Recording) recFollow(ctx context.Context, s *session.Session) error {
	ps, err := s.PageSession("")
	if err != nil || ps == nil {
		// No focused tab (yet): nothing to record.
		return nil
	}
	r.mu.Lock()
	if r.ctx.Err() != nil || r.capped || (r.cur != nil && r.cur.ps == ps) {
		r.mu.Unlock()
		return nil
	}
	old := r.cur
	st := &recStream{ps: ps, sub: ps.SubscribeEvents(page.ScreencastFrame.Method)}
	r.cur = st
	r.wg.Add(1)
	go r.recConsume(r.ctx, st)
	r.mu.Unlock()

	if old != nil {
		old.sub.Cancel()
		// The old tab may be gone already (closed tab): not an error.
		if _, err := cdpproto.Call(ctx, old.ps, page.StopScreencast, cdpproto.Empty{}); err != nil {
			r.log.Debug("stop screencast on previous tab", zap.String("target", string(old.ps.TargetID())), zap.Error(err))
		}
	}
	_, err = cdpproto.Call(ctx, ps, page.StartScreencast, page.StartScreencastParams{
		Format:        page.StartScreencastFormat(r.cfg.Format),
		Quality:       ptr(int64(r.cfg.Quality)),
		MaxWidth:      int64(r.cfg.MaxWidth),
		MaxHeight:     int64(r.cfg.MaxHeight),
		EveryNthFrame: int64(r.cfg.EveryNthFrame),
	})
	if err != nil {
		return fmt.Errorf("recording: start screencast on %s: %w", ps.TargetID(), err)
	}
	return nil
}

// recConsume writes and acknowledges the frames of one screencast until its
// subscription ends (focus moved away, Detach, or the tab went away).
func (r *Recording) recConsume(ctx context.Context, st *recStream) {
	defer r.wg.Done()
	ext := ".jpg"
	if r.cfg.Format == "png" {
		ext = ".png"
	}
	for ev := range st.sub.C() {
		var fr page.EventScreencastFrame
		if err := ev.Decode(&fr); err != nil {
			r.log.Warn("undecodable screencast frame", zap.Error(err))
			continue
		}
		// Always ack, or Chrome stops sending frames.
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cdpproto.Call(actx, st.ps, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: fr.SessionID})
		cancel()
		if err != nil && ctx.Err() == nil {
			r.log.Debug("screencast ack", zap.Error(err))
		}
		r.recWrite(ctx, st, &fr, ext)
	}
	if err := st.sub.Err(); err != nil {
		r.log.Warn("screencast subscription ended", zap.String("target", string(st.ps.TargetID())), zap.Error(err))
	}
}

// recFrameLine is one line of the manifest.
type recFrameLine struct {
	Seq    int    `json:"seq"`
	File   string `json:"file"`
	Time   string `json:"time"`
	Target string `json:"target"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

func (r *Recording) recWrite(ctx context.Context, st *recStream, fr *page.EventScreencastFrame, ext string) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(fr.Data))
	if err != nil {
		r.log.Warn("screencast frame is not an image", zap.Int("bytes", len(fr.Data)), zap.Error(err))
		return
	}
	r.mu.Lock()
	if ctx.Err() != nil || r.capped {
		r.mu.Unlock()
		return
	}
	r.reserved++
	seq := r.reserved
	hitCap := seq >= r.cfg.MaxFrames
	if hitCap {
		r.capped = true
	}
	r.mu.Unlock()
	if hitCap {
		r.log.Warn("MaxFrames reached; recording stopped", zap.Int("max_frames", r.cfg.MaxFrames))
		// Stop sending from here, not from a bus handler; the session may be
		// stopping, so bound the wait.
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _ = cdpproto.Call(sctx, st.ps, page.StopScreencast, cdpproto.Empty{})
		cancel()
	}

	ts := time.Now()
	if fr.Metadata != nil && fr.Metadata.Timestamp > 0 {
		sec := fr.Metadata.Timestamp.Float64()
		ts = time.Unix(0, int64(sec*1e9))
	}
	name := fmt.Sprintf("frame-%06d%s", seq, ext)
	if err := os.WriteFile(filepath.Join(r.cfg.Dir, name), fr.Data, 0o644); err != nil {
		r.log.Warn("write frame", zap.String("file", name), zap.Error(err))
		return
	}
	line, _ := json.Marshal(recFrameLine{
		Seq:    seq,
		File:   name,
		Time:   ts.UTC().Format(time.RFC3339Nano),
		Target: string(st.ps.TargetID()),
		Width:  cfg.Width,
		Height: cfg.Height,
	})
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.manifest == nil {
		return
	}
	if _, err := r.manifest.Write(line); err != nil {
		r.log.Warn("write manifest", zap.Error(err))
		return
	}
	r.written++
}

// Detach implements session.Detacher: it stops the screencast (if the
// connection is alive), waits for the frame goroutine, and closes the
// manifest. Nothing is written afterwards.
func (r *Recording) Detach(ctx context.Context) error {
	// Cancel first, under the lock: a focus handler still running sees it
	// and starts nothing new.
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
	}
	cur := r.cur
	r.cur = nil
	r.mu.Unlock()
	if cur != nil {
		cur.sub.Cancel()
		sctx, c := context.WithTimeout(ctx, 5*time.Second)
		// Fails fast when the tab or the connection is gone; nothing to undo then.
		_, _ = cdpproto.Call(sctx, cur.ps, page.StopScreencast, cdpproto.Empty{})
		c()
	}
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if r.manifest != nil {
		err = r.manifest.Close()
		r.manifest = nil
	}
	return err
}
