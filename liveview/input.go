package liveview

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"net/http"

	cdpproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/keys"
	"github.com/browseragent/browseragent/internal/pagejs"
)

// Input is the body of POST ./input: one thing the person did.
type Input struct {
	// Type is "click", "scroll", "key" or "text".
	Type string `json:"type"`
	// X and Y are the pointer in CSS px of the viewport (click, scroll).
	X *float64 `json:"x,omitempty"`
	Y *float64 `json:"y,omitempty"`
	// Button is "left" (default), "middle" or "right" (click).
	Button string `json:"button,omitempty"`
	// Count is the click count (2: double click). Default 1.
	Count int `json:"count,omitempty"`
	// DX and DY are the wheel deltas in CSS px (scroll).
	DX float64 `json:"dx,omitempty"`
	DY float64 `json:"dy,omitempty"`
	// Key is a key name or combination: "Enter", "Tab", "Backspace", "a",
	// "Control+a" (key).
	Key string `json:"key,omitempty"`
	// Text is inserted at the caret as typed (text). Never logged.
	Text string `json:"text,omitempty"`
}

// input handles POST ./input: validate (400), require an active hand-off
// (409), dispatch to the focused tab.
func (v *Server) input(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var in Input
	if err := decodeBody(r, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), cdpTimeout)
	defer cancel()
	do, err := v.prepare(ctx, in)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Counted until dispatched: the hand-off's release waits for it, so no
	// input lands after the agent has the page again.
	leave, ok := v.enter()
	if !ok {
		http.Error(w, "no hand-off is active: the agent has the page", http.StatusConflict)
		return
	}
	defer leave()
	ps, err := v.s.PageSession("")
	if err != nil {
		http.Error(w, "no focused tab: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	// The type only: what the person types is never logged.
	fields := []zap.Field{zap.String("type", in.Type)}
	if in.X != nil && in.Y != nil {
		fields = append(fields, zap.Float64("x", *in.X), zap.Float64("y", *in.Y)) // where, never what
	}
	v.log.Debug("person's input", fields...)
	if err := do(ctx, ps); err != nil {
		http.Error(w, "dispatching the input: "+err.Error(), http.StatusBadGateway)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// prepare validates in and returns what dispatches it.
func (v *Server) prepare(ctx context.Context, in Input) (func(context.Context, *cdp.Session) error, error) {
	switch in.Type {
	case "click", "scroll":
		if in.X == nil || in.Y == nil {
			return nil, fmt.Errorf("%s needs x and y (CSS px of the viewport)", in.Type)
		}
		x, y := *in.X, *in.Y
		vw, vh, err := v.bounds(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the viewport: %v", err)
		}
		if x < 0 || y < 0 || x >= float64(vw) || y >= float64(vh) {
			return nil, fmt.Errorf("%s at (%g, %g) is outside the viewport %dx%d", in.Type, x, y, vw, vh)
		}
		if in.Type == "scroll" {
			if in.DX == 0 && in.DY == 0 {
				return nil, fmt.Errorf("scroll needs dx or dy")
			}
			return func(ctx context.Context, s *cdp.Session) error {
				return mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseWheel, X: x, Y: y, DeltaX: in.DX, DeltaY: in.DY})
			}, nil
		}
		var btn input.MouseButton
		var mask int64
		switch in.Button {
		case "", "left":
			btn, mask = input.MouseButtonLeft, 1
		case "right":
			btn, mask = input.MouseButtonRight, 2
		case "middle":
			btn, mask = input.MouseButtonMiddle, 4
		default:
			return nil, fmt.Errorf("unknown button %q (want left, middle or right)", in.Button)
		}
		n := int64(in.Count)
		if n == 0 {
			n = 1
		}
		if n < 1 || n > 3 {
			return nil, fmt.Errorf("click count %d (want 1..3)", in.Count)
		}
		return func(ctx context.Context, s *cdp.Session) error {
			if err := mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y}); err != nil {
				return err
			}
			for i := int64(1); i <= n; i++ {
				if err := mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: btn, Buttons: mask, ClickCount: i}); err != nil {
					return err
				}
				if err := mouse(ctx, s, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: btn, ClickCount: i}); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case "key":
		st, ok := keys.ParseCombo(in.Key)
		if in.Key == "" || !ok {
			return nil, fmt.Errorf("unknown key %q (want a key name such as Enter, Tab, Backspace, ArrowDown, a character, or a combination such as Control+a)", in.Key)
		}
		return func(ctx context.Context, s *cdp.Session) error {
			v.markTyped(ctx, s)
			return keys.Dispatch(ctx, s, st)
		}, nil
	case "text":
		if in.Text == "" {
			return nil, fmt.Errorf("text needs a non-empty text")
		}
		return func(ctx context.Context, s *cdp.Session) error {
			v.markTyped(ctx, s)
			_, err := cdpproto.Call(ctx, s, input.InsertText, input.InsertTextParams{Text: in.Text})
			return err
		}, nil
	case "":
		return nil, fmt.Errorf("missing type (want click, scroll, key or text)")
	default:
		return nil, fmt.Errorf("unknown input type %q (want click, scroll, key or text)", in.Type)
	}
}

//go:embed js/mark_typed.js
var markTypedJS string

// markTyped marks the field with focus as typed into by a person, so that
// the agent's observations withhold its value (dom.HumanTypedAttr). Best
// effort: a field in a cross-origin frame is out of reach.
func (v *Server) markTyped(ctx context.Context, s *cdp.Session) {
	if err := pagejs.Evaluate(ctx, s, markTypedJS, nil); err != nil {
		v.log.Debug("marking the typed-into field", zap.Error(err))
	}
}

func mouse(ctx context.Context, s *cdp.Session, p input.DispatchMouseEventParams) error {
	_, err := cdpproto.Call(ctx, s, input.DispatchMouseEvent, p)
	return err
}

// bounds returns the area a click may land in, CSS px: the page area the
// latest frame of the focused tab shows (a headed window's includes the
// scrollbar, which the viewport does not), else the viewport.
func (v *Server) bounds(ctx context.Context) (int, int, error) {
	tab := v.s.FocusedTab()
	v.mu.Lock()
	w, h, ft := v.lastW, v.lastH, v.lastTab
	v.mu.Unlock()
	if ft == tab && w > 0 && h > 0 {
		return int(math.Ceil(w)), int(math.Ceil(h)), nil
	}
	return v.viewport(ctx)
}

// viewport returns the focused tab's visual viewport in CSS px.
func (v *Server) viewport(ctx context.Context) (int, int, error) {
	ps, err := v.s.PageSession("")
	if err != nil {
		return 0, 0, err
	}
	m, err := cdpproto.Call(ctx, ps, page.GetLayoutMetrics, cdpproto.Empty{})
	if err != nil {
		return 0, 0, err
	}
	if m.CSSVisualViewport == nil {
		return 0, 0, fmt.Errorf("the browser reported no viewport")
	}
	return int(math.Round(m.CSSVisualViewport.ClientWidth)), int(math.Round(m.CSSVisualViewport.ClientHeight)), nil
}
