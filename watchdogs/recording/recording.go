// Package recording is the optional screencast watchdog: it records the
// focused tab as a series of image files with a manifest, for reports and
// audits. It is not among watchdogs.Defaults; add it with
// session.WithWatchdogs(recording.New(cfg)).
//
// It handles BrowserConnected, BrowserReconnected and AgentFocusChanged: on
// each it runs Page.startScreencast on the focused tab (stopping it on the
// tab recorded before); if Chrome refuses, the handler returns the error,
// so a failure on BrowserConnected fails Session.Start. It emits nothing.
// Each frame Chrome sends is acknowledged and written to Config.Dir as
// frame-000001.jpg (or .png), numbered from 1 in arrival order, and
// described by one line of the manifest, Dir/frames.jsonl:
//
//	{"seq":1,"file":"frame-000001.jpg","time":"2026-...Z","target":"<tab id>","width":1280,"height":800}
//
// time is Chrome's frame swap timestamp (UTC; the arrival time if Chrome
// gave none), so a report can place frames on the session's timeline.
// Headless Chrome only sends a frame when the page paints: a static page
// yields one or a few frames. If frames were lost (the watchdog fell behind
// Chrome), a line without "file" marks the gap where it was noticed:
//
//	{"gap":"frames lost: ...","time":"2026-...Z","target":"<tab id>"}
//
// Readers that want frames take the lines with a "file" (report/ does).
//
// It never records a tab that is not focused, never writes outside Dir,
// and never writes after Detach.
package recording

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
	"github.com/browseragent/browseragent/internal/follow"
	"github.com/browseragent/browseragent/internal/pagejs"
	"github.com/browseragent/browseragent/internal/routine"
	"github.com/browseragent/browseragent/session"
)

// Name is the recording watchdog's name and the name of its handlers.
const Name = "recording"

// Defaults of Config.
const (
	DefaultFormat    = "jpeg"
	DefaultQuality   = 70
	DefaultMaxWidth  = 1280
	DefaultMaxHeight = 800
	DefaultMaxFrames = 2000
)

// Manifest is the name of the manifest file the recording watchdog writes
// in Config.Dir: one JSON object per line, see the package documentation.
const Manifest = "frames.jsonl"

// ErrConfig is wrapped by the error Attach returns for an invalid Config
// (so Session.Start fails before connecting).
var ErrConfig = errors.New("recording: invalid config")

// cdpTimeout bounds the watchdog's own CDP calls (ack, stop, restart).
const cdpTimeout = 10 * time.Second

// Config configures the recording watchdog.
type Config struct {
	// Dir is where frames and the manifest go (created if missing).
	// Required.
	Dir string
	// Format is "jpeg" or "png". Default DefaultFormat.
	Format string
	// Quality is the jpeg quality, 1..100. Default DefaultQuality.
	Quality int
	// MaxWidth and MaxHeight bound the frame size in pixels (Chrome scales
	// down, keeping the aspect ratio). Defaults DefaultMaxWidth and
	// DefaultMaxHeight.
	MaxWidth, MaxHeight int
	// EveryNthFrame asks Chrome to send only every n-th painted frame.
	// Default 1.
	EveryNthFrame int
	// MaxFrames bounds how many frames are written; when reached, the
	// screencast stops and one warning is logged. Default DefaultMaxFrames.
	MaxFrames int
	// Logger receives warnings (frames that could not be written, lost
	// frames) and debug messages. Default: the session's logger, named
	// "recording".
	Logger *zap.Logger
}

// Watchdog is the recording watchdog; see the package documentation.
//
// A Watchdog may be reused across Start/Stop of its session: numbering and
// the manifest continue. The manifest is truncated on the first Attach of a
// new Watchdog. Frames are consumed by a goroutine the watchdog owns, never
// on the CDP reader and never through the bus; Detach stops the screencast
// (while the connection lives) and that goroutine, after which nothing more
// is written.
type Watchdog struct {
	cfg Config

	mu       sync.Mutex
	log      *zap.Logger
	group    *routine.Group // frame consumers; nil before Attach
	cur      *stream        // the screencast running now, or nil
	manifest *os.File
	reserved int  // sequence numbers handed out
	written  int  // frames written (file and manifest line)
	capped   bool // MaxFrames reached
	attached bool // Attach succeeded at least once (manifest truncated)
}

// stream is one screencast on one tab and the goroutine consuming it.
type stream struct {
	ps   *cdp.Session
	ctx  context.Context // ends when the focus moves away or on Detach
	stop context.CancelFunc
}

// New returns a recording watchdog. cfg is validated by Attach.
func New(cfg Config) *Watchdog {
	if cfg.Format == "" {
		cfg.Format = DefaultFormat
	}
	if cfg.Quality == 0 {
		cfg.Quality = DefaultQuality
	}
	if cfg.MaxWidth == 0 {
		cfg.MaxWidth = DefaultMaxWidth
	}
	if cfg.MaxHeight == 0 {
		cfg.MaxHeight = DefaultMaxHeight
	}
	if cfg.EveryNthFrame == 0 {
		cfg.EveryNthFrame = 1
	}
	if cfg.MaxFrames == 0 {
		cfg.MaxFrames = DefaultMaxFrames
	}
	return &Watchdog{cfg: cfg}
}

// Name implements session.Watchdog.
func (w *Watchdog) Name() string { return Name }

// Frames returns how many frames have been written so far.
func (w *Watchdog) Frames() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

func (w *Watchdog) validate() error {
	c := w.cfg
	switch {
	case c.Dir == "":
		return fmt.Errorf("%w: Dir is required (where frames are written)", ErrConfig)
	case c.Format != "jpeg" && c.Format != "png":
		return fmt.Errorf("%w: Format %q (want \"jpeg\" or \"png\")", ErrConfig, c.Format)
	case c.Quality < 1 || c.Quality > 100:
		return fmt.Errorf("%w: Quality %d (want 1..100)", ErrConfig, c.Quality)
	case c.MaxWidth < 1 || c.MaxHeight < 1:
		return fmt.Errorf("%w: MaxWidth/MaxHeight %dx%d (want positive)", ErrConfig, c.MaxWidth, c.MaxHeight)
	case c.EveryNthFrame < 1:
		return fmt.Errorf("%w: EveryNthFrame %d (want positive)", ErrConfig, c.EveryNthFrame)
	case c.MaxFrames < 1:
		return fmt.Errorf("%w: MaxFrames %d (want positive)", ErrConfig, c.MaxFrames)
	}
	return nil
}

// Attach implements session.Watchdog: it validates the config, creates Dir
// and opens the manifest, and registers the focus-following handlers.
func (w *Watchdog) Attach(s *session.Session) error {
	if err := w.validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(w.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("recording: creating Dir: %w", err)
	}
	log := w.cfg.Logger
	if log == nil {
		log = s.Logger().Named(Name)
	}
	w.mu.Lock()
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if !w.attached {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(filepath.Join(w.cfg.Dir, Manifest), flags, 0o644)
	if err != nil {
		w.mu.Unlock()
		return fmt.Errorf("recording: opening the manifest: %w", err)
	}
	g := routine.New(context.Background())
	w.attached = true
	w.manifest, w.log, w.group, w.cur = f, log, g, nil
	w.mu.Unlock()
	follow := func(ctx context.Context) (events.None, error) {
		return events.None{}, w.follow(ctx, s)
	}
	err = errors.Join(
		session.Handle(s, events.BrowserConnected, Name, func(ctx context.Context, _ events.BrowserConnectedEvent) (events.None, error) {
			return follow(ctx)
		}),
		session.Handle(s, events.AgentFocusChanged, Name, func(ctx context.Context, _ events.AgentFocusChangedEvent) (events.None, error) {
			return follow(ctx)
		}),
		// A reconnect gives the tabs new CDP sessions; resume on the focused one.
		session.Handle(s, events.BrowserReconnected, Name, func(ctx context.Context, _ events.BrowserReconnectedEvent) (events.None, error) {
			return follow(ctx)
		}),
	)
	if err != nil {
		// Detach is not called after a failed Attach: release here.
		_ = g.Stop(context.Background()) // nothing started yet
		f.Close()
		w.mu.Lock()
		w.manifest = nil
		w.mu.Unlock()
	}
	return err
}

// follow moves the screencast to the focused tab.
func (w *Watchdog) follow(ctx context.Context, s *session.Session) error {
	ps, err := s.PageSession("")
	if err != nil || ps == nil {
		// No focused tab (yet): nothing to record.
		return nil
	}
	w.mu.Lock()
	g, log := w.group, w.log
	if g.Stopped() || w.capped || (w.cur != nil && w.cur.ps == ps) {
		w.mu.Unlock()
		return nil
	}
	old := w.cur
	if old != nil {
		// Under the lock: no frame of the old tab is written from here on.
		old.stop()
	}
	sctx, stop := context.WithCancel(g.Context())
	st := &stream{ps: ps, ctx: sctx, stop: stop}
	open := func() *cdp.Subscription { return ps.SubscribeEvents(page.ScreencastFrame.Method) }
	first := open() // before the start, so the first frame is seen
	if err := g.Go("screencast of "+string(ps.TargetID()), func(context.Context) {
		defer stop()
		w.consume(st, first, open)
	}); err != nil { // Detach began
		first.Cancel()
		stop()
		w.mu.Unlock()
		return nil
	}
	w.cur = st
	w.mu.Unlock()

	if old != nil {
		// The old tab may be gone already (closed tab): not an error.
		sctx, cancel := context.WithTimeout(ctx, cdpTimeout)
		if _, err := cdpproto.Call(sctx, old.ps, page.StopScreencast, cdpproto.Empty{}); err != nil {
			log.Debug("stop screencast on previous tab", zap.String("target", string(old.ps.TargetID())), zap.Error(err))
		}
		cancel()
	}
	if err := w.start(ctx, ps); err != nil {
		return fmt.Errorf("recording: start screencast on %s: %w", ps.TargetID(), err)
	}
	return nil
}

// start runs Page.startScreencast on ps with the configured settings.
func (w *Watchdog) start(ctx context.Context, ps *cdp.Session) error {
	_, err := cdpproto.Call(ctx, ps, page.StartScreencast, page.StartScreencastParams{
		Format:        page.StartScreencastFormat(w.cfg.Format),
		Quality:       pagejs.Ptr(int64(w.cfg.Quality)),
		MaxWidth:      int64(w.cfg.MaxWidth),
		MaxHeight:     int64(w.cfg.MaxHeight),
		EveryNthFrame: int64(w.cfg.EveryNthFrame),
	})
	return err
}

// consume writes and acknowledges the frames of one screencast until its
// context ends (focus moved away, Detach) or its tab goes away.
func (w *Watchdog) consume(st *stream, first *cdp.Subscription, open func() *cdp.Subscription) {
	w.mu.Lock()
	log := w.log
	w.mu.Unlock()
	ext := ".jpg"
	if w.cfg.Format == "png" {
		ext = ".png"
	}
	err := follow.Run(st.ctx, first, open, func(ev cdp.Event) {
		var fr page.EventScreencastFrame
		if err := ev.Decode(&fr); err != nil {
			log.Warn("undecodable screencast frame", zap.Error(err))
			return
		}
		// Always ack, or Chrome stops sending frames.
		actx, cancel := context.WithTimeout(st.ctx, cdpTimeout)
		_, err := cdpproto.Call(actx, st.ps, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: fr.SessionID})
		cancel()
		if err != nil && st.ctx.Err() == nil {
			log.Debug("screencast ack", zap.Error(err))
		}
		w.write(st, &fr, ext)
	}, follow.Options{
		Name:   "recording screencast of " + string(st.ps.TargetID()),
		Logger: log,
		Resync: func(context.Context) { w.resync(st) },
	})
	if err != nil {
		log.Debug("screencast subscription ended", zap.String("target", string(st.ps.TargetID())), zap.Error(err))
	}
}

// resync handles frames lost to a subscription overflow. Nothing brings
// them back: it marks the gap in the manifest and restarts the screencast,
// because Chrome stops sending once too many frames are unacknowledged and
// the lost ones never will be.
func (w *Watchdog) resync(st *stream) {
	w.mu.Lock()
	log := w.log
	w.mu.Unlock()
	target := string(st.ps.TargetID())
	log.Warn("screencast frames lost: the recording has a gap", zap.String("target", target))
	line, _ := json.Marshal(gapLine{
		Gap:    "frames lost: the recorder fell behind the screencast",
		Time:   time.Now().UTC().Format(time.RFC3339Nano),
		Target: target,
	})
	w.appendLine(line)

	ctx, cancel := context.WithTimeout(st.ctx, cdpTimeout)
	defer cancel()
	if _, err := cdpproto.Call(ctx, st.ps, page.StopScreencast, cdpproto.Empty{}); err != nil && st.ctx.Err() == nil {
		log.Debug("stop screencast for a restart", zap.Error(err))
	}
	w.mu.Lock()
	capped := w.capped
	w.mu.Unlock()
	if capped {
		return
	}
	if err := w.start(ctx, st.ps); err != nil && st.ctx.Err() == nil {
		log.Warn("restarting the screencast after lost frames failed; recording stopped", zap.String("target", target), zap.Error(err))
	}
}

// frameLine is the manifest line of a frame.
type frameLine struct {
	Seq    int    `json:"seq"`
	File   string `json:"file"`
	Time   string `json:"time"`
	Target string `json:"target"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// gapLine is the manifest line marking lost frames.
type gapLine struct {
	Gap    string `json:"gap"`
	Time   string `json:"time"`
	Target string `json:"target"`
}

func (w *Watchdog) write(st *stream, fr *page.EventScreencastFrame, ext string) {
	w.mu.Lock()
	log := w.log
	w.mu.Unlock()
	cfg, _, err := image.DecodeConfig(bytes.NewReader(fr.Data))
	if err != nil {
		log.Warn("screencast frame is not an image", zap.Int("bytes", len(fr.Data)), zap.Error(err))
		return
	}
	w.mu.Lock()
	if st.ctx.Err() != nil || w.capped {
		w.mu.Unlock()
		return
	}
	w.reserved++
	seq := w.reserved
	hitCap := seq >= w.cfg.MaxFrames
	if hitCap {
		w.capped = true
	}
	w.mu.Unlock()
	if hitCap {
		log.Warn("MaxFrames reached; recording stopped", zap.Int("max_frames", w.cfg.MaxFrames))
		// Stop sending from here, not from a bus handler; the session may be
		// stopping, so bound the wait.
		sctx, cancel := context.WithTimeout(st.ctx, cdpTimeout)
		_, _ = cdpproto.Call(sctx, st.ps, page.StopScreencast, cdpproto.Empty{})
		cancel()
	}

	ts := time.Now()
	if fr.Metadata != nil && fr.Metadata.Timestamp > 0 {
		sec := fr.Metadata.Timestamp.Float64()
		ts = time.Unix(0, int64(sec*1e9))
	}
	name := fmt.Sprintf("frame-%06d%s", seq, ext)
	if err := os.WriteFile(filepath.Join(w.cfg.Dir, name), fr.Data, 0o644); err != nil {
		log.Warn("write frame", zap.String("file", name), zap.Error(err))
		return
	}
	line, _ := json.Marshal(frameLine{
		Seq:    seq,
		File:   name,
		Time:   ts.UTC().Format(time.RFC3339Nano),
		Target: string(st.ps.TargetID()),
		Width:  cfg.Width,
		Height: cfg.Height,
	})
	if w.appendLine(line) {
		w.mu.Lock()
		w.written++
		w.mu.Unlock()
	}
}

// appendLine appends one line to the manifest unless Detach closed it. It
// reports whether the line was written.
func (w *Watchdog) appendLine(line []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.manifest == nil {
		return false
	}
	if _, err := w.manifest.Write(append(line, '\n')); err != nil {
		w.log.Warn("write manifest", zap.Error(err))
		return false
	}
	return true
}

// Detach implements session.Detacher: it stops the screencast (if the
// connection is alive), stops the frame goroutines and waits for them until
// ctx ends, and closes the manifest. Nothing is written afterwards.
func (w *Watchdog) Detach(ctx context.Context) error {
	w.mu.Lock()
	g, cur := w.group, w.cur
	w.cur = nil
	if cur != nil {
		cur.stop() // under the lock: no frame is written from here on
	}
	w.mu.Unlock()
	if g == nil {
		return nil
	}
	if cur != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		// Fails fast when the tab or the connection is gone; nothing to undo then.
		_, _ = cdpproto.Call(sctx, cur.ps, page.StopScreencast, cdpproto.Empty{})
		cancel()
	}
	errStop := g.Stop(ctx)
	if errStop != nil {
		errStop = fmt.Errorf("recording: stopping: %w", errStop)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errClose error
	if w.manifest != nil {
		if err := w.manifest.Close(); err != nil {
			errClose = fmt.Errorf("recording: closing the manifest: %w", err)
		}
		w.manifest = nil
	}
	return errors.Join(errStop, errClose)
}
