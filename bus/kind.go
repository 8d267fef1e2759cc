package bus

import (
	"context"
	"fmt"
	"time"
)

// Kind names one event type and binds it to its result type. Declare one
// package-level value per event type, e.g.
//
//	var ClickElement = bus.Kind[ClickElementEvent, ClickResult]{Name: "ClickElement", Timeout: 15 * time.Second}
//
// Name identifies the kind on a bus (handlers, timeouts overrides, traces);
// one name must always be used with the same E and R. Timeout is the default
// per-handler timeout: 0 means the bus default (WithDefaultTimeout), a
// negative value means no timeout. StopOnError makes the first handler error
// skip the remaining handlers of the event.
type Kind[E, R any] struct {
	Name        string
	Timeout     time.Duration
	StopOnError bool
}

// Handler is the function type registered for a Kind[E, R].
type Handler[E, R any] func(ctx context.Context, ev E) (R, error)

// kindTok is a typed nil pointer used to compare the type parameters of two
// uses of the same kind name without reflection.
func kindTok[E, R any]() any { return (*Kind[E, R])(nil) }

type entry struct {
	id    uint64
	name  string
	fn    any // func(context.Context, E) (R, error)
	guard bool
}

// kindState is the per-bus state of one kind name. Guarded by Bus.mu; entries
// is replaced (copy on write), never modified, so a snapshot taken at the
// start of processing stays valid.
type kindState struct {
	name    string
	tok     any
	entries []*entry
	timeout time.Duration // per-bus override, 0 = none
}

// HandleOption configures a registration.
type HandleOption func(*handleConfig)

type handleConfig struct {
	pos    int // 0 append, 1 first, 2 before, 3 after
	anchor string
	guard  bool
}

// First places the handler before every handler registered so far.
func First() HandleOption { return func(c *handleConfig) { c.pos, c.anchor = 1, "" } }

// Before places the handler just before the handler named name (which must exist).
func Before(name string) HandleOption { return func(c *handleConfig) { c.pos, c.anchor = 2, name } }

// After places the handler just after the handler named name (which must exist).
func After(name string) HandleOption { return func(c *handleConfig) { c.pos, c.anchor = 3, name } }

// Guard marks the handler as a guard (a policy check): its error stops the
// handlers after it, whatever the kind's StopOnError, and its value is not a
// result (Result.First skips it).
func Guard() HandleOption { return func(c *handleConfig) { c.guard = true } }

// Registration is a registered handler. Remove unregisters it; Replace (by
// name) keeps the registration valid.
type Registration struct {
	b    *Bus
	kind string
	name string
	id   uint64
}

// Kind returns the kind name of the registration.
func (r *Registration) Kind() string { return r.kind }

// Name returns the handler name.
func (r *Registration) Name() string { return r.name }

// Remove unregisters the handler. Events already being processed keep the
// handler list they started with; later events do not run it. It reports
// whether the handler was still registered.
func (r *Registration) Remove() bool {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.kinds[r.kind]
	if ks == nil {
		return false
	}
	for i, e := range ks.entries {
		if e.id == r.id {
			n := make([]*entry, 0, len(ks.entries)-1)
			n = append(n, ks.entries[:i]...)
			n = append(n, ks.entries[i+1:]...)
			ks.entries = n
			return true
		}
	}
	return false
}

// Handle registers h for kind k on b under name, which must be unique per
// kind. Handlers run one after another, in registration order unless an
// option (First, Before, After) places them. It fails with ErrInvalid,
// ErrDuplicateHandler, ErrHandlerNotFound (bad anchor), ErrKindMismatch or
// ErrClosed.
func Handle[E, R any](b *Bus, k Kind[E, R], name string, h func(context.Context, E) (R, error), opts ...HandleOption) (*Registration, error) {
	if k.Name == "" || name == "" || h == nil {
		return nil, fmt.Errorf("%w: Handle needs a kind name, a handler name and a handler", ErrInvalid)
	}
	var cfg handleConfig
	for _, o := range opts {
		o(&cfg)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	ks, err := b.kindLocked(k.Name, kindTok[E, R]())
	if err != nil {
		return nil, err
	}
	at, found := len(ks.entries), false
	for i, e := range ks.entries {
		if e.name == name {
			return nil, fmt.Errorf("%w: %s/%s", ErrDuplicateHandler, k.Name, name)
		}
		if cfg.pos >= 2 && e.name == cfg.anchor {
			at, found = i, true
			if cfg.pos == 3 {
				at = i + 1
			}
		}
	}
	switch {
	case cfg.pos == 1:
		at = 0
	case cfg.pos >= 2 && !found:
		return nil, fmt.Errorf("%w: %s/%s (anchor)", ErrHandlerNotFound, k.Name, cfg.anchor)
	}
	b.seq++
	e := &entry{id: b.seq, name: name, fn: h, guard: cfg.guard}
	n := make([]*entry, 0, len(ks.entries)+1)
	n = append(n, ks.entries[:at]...)
	n = append(n, e)
	n = append(n, ks.entries[at:]...)
	ks.entries = n
	return &Registration{b: b, kind: k.Name, name: name, id: e.id}, nil
}

// Replace swaps the function of the handler named name for kind k, keeping
// its position, guard flag and Registration. This is how a deployment swaps a
// default policy handler. Events already being processed run whichever
// function they found when they started.
func Replace[E, R any](b *Bus, k Kind[E, R], name string, h func(context.Context, E) (R, error)) error {
	if k.Name == "" || name == "" || h == nil {
		return fmt.Errorf("%w: Replace needs a kind name, a handler name and a handler", ErrInvalid)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.kinds[k.Name]
	if ks == nil {
		return fmt.Errorf("%w: %s/%s", ErrHandlerNotFound, k.Name, name)
	}
	if ks.tok != kindTok[E, R]() {
		return fmt.Errorf("%w: %s", ErrKindMismatch, k.Name)
	}
	for i, e := range ks.entries {
		if e.name == name {
			n := make([]*entry, len(ks.entries))
			copy(n, ks.entries)
			n[i] = &entry{id: e.id, name: name, fn: h, guard: e.guard}
			ks.entries = n
			return nil
		}
	}
	return fmt.Errorf("%w: %s/%s", ErrHandlerNotFound, k.Name, name)
}

// Handlers returns the names of the handlers registered for the kind name, in
// the order they run.
func (b *Bus) Handlers(kind string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.kinds[kind]
	if ks == nil {
		return nil
	}
	out := make([]string, len(ks.entries))
	for i, e := range ks.entries {
		out[i] = e.name
	}
	return out
}

// SetTimeout overrides, on this bus, the default timeout of the kind name
// (d > 0), removes the override (d == 0), or disables the timeout (d < 0).
// It applies to events dispatched afterwards; a per-dispatch WithTimeout
// still wins.
func (b *Bus) SetTimeout(kind string, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ks := b.kinds[kind]
	if ks == nil {
		ks = &kindState{name: kind}
		b.kinds[kind] = ks
	}
	ks.timeout = d
}

func (b *Bus) kindLocked(name string, tok any) (*kindState, error) {
	ks := b.kinds[name]
	if ks == nil {
		ks = &kindState{name: name, tok: tok}
		b.kinds[name] = ks
		return ks, nil
	}
	if ks.tok == nil {
		ks.tok = tok
	} else if ks.tok != tok {
		return nil, fmt.Errorf("%w: %s", ErrKindMismatch, name)
	}
	return ks, nil
}
