package session

import (
	"context"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/cdp"
)

// Watchdog is an independent part of a session: it registers handlers for
// events on the session's bus (and, if it must see new targets before they
// run, a [TargetHook]) in Attach. Attach runs on every Start, on a fresh bus,
// after the session's own handlers are registered and before the browser is
// connected, so it may not call the browser yet. Attach must be quick and must
// not block.
//
// A watchdog that starts goroutines or holds resources also implements
// [Detacher]; the session calls Detach on Stop, after the last event.
//
// Names identify watchdogs: a watchdog given to [WithWatchdogs] replaces an
// earlier one with the same name, and [WithoutWatchdogs] removes by name.
type Watchdog interface {
	Name() string
	Attach(s *Session) error
}

// Detacher is implemented by watchdogs that must release what they started.
// Detach is called once per successful Attach, on Stop, with a context that
// bounds the cleanup; it must not dispatch events.
type Detacher interface {
	Detach(ctx context.Context) error
}

// TargetKind tells a [TargetHook] what kind of target was attached.
type TargetKind string

const (
	// TargetPage is a tab: one the session created, or one the page opened.
	TargetPage TargetKind = "page"
	// TargetFrame is an out-of-process (cross-site) iframe.
	TargetFrame TargetKind = "iframe"
	// TargetOther is a worker or any other attachable target.
	TargetOther TargetKind = "other"
)

// AttachedTarget describes a target while it is paused before its first
// script runs.
type AttachedTarget struct {
	Kind TargetKind
	// Session is the target's flat CDP session.
	Session *cdp.Session
	// URL is the target's URL at attach time (often empty for new targets).
	URL string
	// OpenerID is the tab that opened this one (window.open, target=_blank).
	OpenerID string
	// ParentSessionID is the session the target was attached below (the page
	// of an iframe); empty for tabs.
	ParentSessionID string
}

// TargetHook prepares a new target while it is paused: enable domains, add
// request interception, set download behaviour. The target runs only after
// every hook returned, so a hook can stop a blocked popup from ever loading.
// Hooks run on their own goroutine, never on the CDP reader; they must not
// dispatch bus events and await them (the bus may be busy with the very
// navigation that created the target). An error is logged and the target
// still resumes; a hook that must stop the target closes it itself.
type TargetHook func(ctx context.Context, t AttachedTarget) error

// NewWatchdog returns a Watchdog named name whose Attach calls attach: the
// short form for a watchdog that only registers handlers and starts
// nothing (so it needs no Detach).
func NewWatchdog(name string, attach func(*Session) error) Watchdog {
	return funcWatchdog{name: name, attach: attach}
}

type funcWatchdog struct {
	name   string
	attach func(*Session) error
}

func (w funcWatchdog) Name() string            { return w.name }
func (w funcWatchdog) Attach(s *Session) error { return w.attach(s) }

// Handle registers h for kind k on the session's current bus under name
// (the watchdog's name, so that traces and bus.Before/After can name it):
// the call a Watchdog's Attach makes for each event it handles. It fails
// with ErrNotStarted when the session has no bus yet, and with the bus's
// errors (bus.ErrDuplicateHandler, bus.ErrKindMismatch, ...).
func Handle[E, R any](s *Session, k bus.Kind[E, R], name string, h func(context.Context, E) (R, error), opts ...bus.HandleOption) error {
	b := s.Bus()
	if b == nil {
		return ErrNotStarted
	}
	_, err := bus.Handle(b, k, name, h, opts...)
	return err
}
