package liveview

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/agent"
)

// Announcement is what Handler.Announce is told at the start of a hand-off.
type Announcement struct {
	// URL is the live view's address (token included).
	URL string
	// Request is the agent's request.
	Request agent.HumanRequest
	// Headful reports that the session's browser shows a window, which the
	// person may use instead of the live view.
	Headful bool
}

// Via values of the HumanResponse a Handler returns.
const (
	ViaLiveView = "live view"
	ViaSignal   = "terminal"
)

// Handler is an agent.HumanHandler that hands the browser to a person
// through a live view.
//
// Handoff activates the live view with the request's reason (input is
// accepted only then), calls Announce, and waits for the first of: the
// live view's done endpoint (Via ViaLiveView, with the person's note), a
// value on Signal (Via ViaSignal, the value as the note), or ctx's end (an
// error wrapping ctx.Err(), and agent.ErrHumanTimeout when ctx's deadline
// passed). A second hand-off while one is active fails with ErrBusy.
type Handler struct {
	// Server is the live view. Required.
	Server *Server
	// Announce tells the person where to look; called once per hand-off,
	// before waiting, on the agent's goroutine. Optional.
	Announce func(Announcement)
	// Signal is a second way to say done, such as lines read from a
	// terminal (the line is the note). Values sent before the hand-off
	// began are discarded. Optional.
	Signal <-chan string
	// Ask is a third way, run alongside the others after Announce: a
	// question to the person elsewhere, such as an MCP client's
	// elicitation. Its answer (or its error, agent.ErrNoHuman when nobody
	// can be asked) ends the hand-off; its ctx ends when another way did,
	// and Handoff waits for it to return. Optional.
	Ask func(ctx context.Context, a Announcement) (agent.HumanResponse, error)
}

var _ agent.HumanHandler = (*Handler)(nil)

// Handoff implements agent.HumanHandler.
func (h *Handler) Handoff(ctx context.Context, req agent.HumanRequest) (agent.HumanResponse, error) {
	if h == nil || h.Server == nil {
		return agent.HumanResponse{}, fmt.Errorf("%w: liveview.Handler has no Server", agent.ErrNoHuman)
	}
	done, release, err := h.Server.begin(req)
	if err != nil {
		return agent.HumanResponse{}, err
	}
	defer release()
	h.drain()
	// A tab behind another is not painted and takes input late (a browser
	// the session connected to); best effort.
	fctx, fcancel := context.WithTimeout(ctx, cdpTimeout)
	if err := h.Server.s.Front(fctx); err != nil {
		h.Server.log.Debug("bringing the tab to the front", zap.Error(err))
	}
	fcancel()
	a := Announcement{URL: h.Server.URL(), Request: req, Headful: h.Server.s.Profile().Headful}
	if h.Announce != nil {
		h.Announce(a)
	}
	var asked chan askResult // nil: never ready
	if h.Ask != nil {
		actx, cancel := context.WithCancel(ctx)
		asked = make(chan askResult, 1)
		go func() {
			resp, err := h.Ask(actx, a)
			asked <- askResult{resp, err}
		}()
		defer func() {
			cancel()
			if asked != nil {
				<-asked // the goroutine has returned: nothing outlives Handoff
			}
		}()
	}
	select {
	case r := <-asked:
		asked = nil
		return r.resp, r.err
	case note := <-done:
		return agent.HumanResponse{Via: ViaLiveView, Note: note}, nil
	case note, ok := <-h.Signal:
		if !ok {
			// The second channel ended (stdin closed): only the live view
			// and ctx are left.
			select {
			case note := <-done:
				return agent.HumanResponse{Via: ViaLiveView, Note: note}, nil
			case r := <-asked:
				asked = nil
				return r.resp, r.err
			case <-ctx.Done():
				return agent.HumanResponse{}, ctxErr(ctx)
			}
		}
		return agent.HumanResponse{Via: ViaSignal, Note: note}, nil
	case <-ctx.Done():
		return agent.HumanResponse{}, ctxErr(ctx)
	}
}

type askResult struct {
	resp agent.HumanResponse
	err  error
}

// drain discards what Signal holds from before the hand-off.
func (h *Handler) drain() {
	for {
		select {
		case _, ok := <-h.Signal:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("liveview: %w: %w", agent.ErrHumanTimeout, err)
	}
	return fmt.Errorf("liveview: the hand-off ended before the person said done: %w", err)
}
