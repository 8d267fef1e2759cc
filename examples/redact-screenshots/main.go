// Command redact-screenshots replaces the default screenshot watchdog with
// one that blacks out password fields and anything marked data-private
// before the image leaves the browser session. The DOM watchdog asks for
// the screenshot of every observation through the bus, so the model, the
// run's files and the trace all get the redacted image: replacing the
// watchdog replaces what every caller gets.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
	"github.com/browseragent/browseragent/watchdogs/screenshot"
)

// privateBoxesJS returns the viewport boxes (CSS pixels) of what must not
// be seen, and the device pixel ratio to scale them to image pixels.
const privateBoxesJS = `(() => ({
  dpr: window.devicePixelRatio,
  boxes: Array.from(document.querySelectorAll('input[type=password], [data-private]'))
    .map((e) => e.getBoundingClientRect())
    .filter((r) => r.width > 0 && r.height > 0)
    .map((r) => ({x: r.x, y: r.y, w: r.width, h: r.height})),
}))()`

// Redactor answers events.Screenshot with a redacted viewport image. It
// takes the default screenshot watchdog's name, so it replaces it.
type Redactor struct {
	// Last is the last image it produced and Boxes the regions it covered.
	Last  []byte
	Boxes int
}

// Name implements session.Watchdog.
func (r *Redactor) Name() string { return screenshot.Name }

// Attach implements session.Watchdog.
func (r *Redactor) Attach(s *session.Session) error {
	return session.Handle(s, events.Screenshot, "redactor", func(ctx context.Context, ev events.ScreenshotEvent) (events.ScreenshotResult, error) {
		if ev.FullPage || ev.Clip != nil {
			return events.ScreenshotResult{}, errors.New("redactor: only viewport screenshots are offered")
		}
		tab := ev.TargetID
		if tab == "" {
			tab = s.FocusedTab()
		}
		cs, err := s.PageSession(tab)
		if err != nil {
			return events.ScreenshotResult{}, err
		}
		boxes, err := cdpproto.Call(ctx, cs, runtime.Evaluate, runtime.EvaluateParams{Expression: privateBoxesJS, ReturnByValue: ptr(true)})
		if err != nil {
			return events.ScreenshotResult{}, err
		}
		var found struct {
			DPR   float64 `json:"dpr"`
			Boxes []struct {
				X float64 `json:"x"`
				Y float64 `json:"y"`
				W float64 `json:"w"`
				H float64 `json:"h"`
			} `json:"boxes"`
		}
		if boxes.Result == nil || json.Unmarshal(boxes.Result.Value, &found) != nil || found.DPR <= 0 {
			return events.ScreenshotResult{}, errors.New("redactor: the page did not say what is private")
		}
		shot, err := cdpproto.Call(ctx, cs, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
		if err != nil {
			return events.ScreenshotResult{}, err
		}
		src, err := png.Decode(bytes.NewReader(shot.Data))
		if err != nil {
			return events.ScreenshotResult{}, err
		}
		img := image.NewRGBA(src.Bounds())
		draw.Draw(img, img.Bounds(), src, src.Bounds().Min, draw.Src)
		black := image.NewUniform(color.Black)
		for _, b := range found.Boxes {
			d := found.DPR
			rect := image.Rect(int(b.X*d), int(b.Y*d), int((b.X+b.W)*d)+1, int((b.Y+b.H)*d)+1)
			draw.Draw(img, rect.Intersect(img.Bounds()), black, image.Point{}, draw.Src)
		}
		var out bytes.Buffer
		if err := png.Encode(&out, img); err != nil {
			return events.ScreenshotResult{}, err
		}
		r.Last, r.Boxes = out.Bytes(), len(found.Boxes)
		return events.ScreenshotResult{Data: r.Last, MediaType: "image/png", TargetID: tab}, nil
	})
}

func ptr[T any](v T) *T { return &v }

const login = `<!doctype html><title>Account</title><body style="margin:0;background:#fff">
<form><input name=user value=ada style="display:block;height:40px">
<input id=pw type=password value=hunter2 style="display:block;width:300px;height:40px;background:#fff"></form>
<p data-private style="height:40px">IBAN DE00 1234 5678 9012 3456 78</p></body>`

func main() {
	if _, err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run observes a login page the way the agent does, reports whose image the
// observation carries, and returns that image.
func run(ctx context.Context, out io.Writer) ([]byte, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, login) }))
	defer srv.Close()

	redactor := &Redactor{}
	s := watchdogs.NewSession(session.Profile{}, session.WithWatchdogs(redactor))
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	defer s.Stop(context.Background())
	if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: srv.URL}); err != nil {
		return nil, err
	}
	// What the agent asks for at every step.
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: true})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "regions blacked out: %d\nthe observation carries the redacted image: %v\n", redactor.Boxes, len(st.Screenshot) > 0 && bytes.Equal(st.Screenshot, redactor.Last))
	return st.Screenshot, nil
}
