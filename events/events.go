// Package events is the catalog of the runtime's events: one Go struct per
// event type, its result type, and a bus.Kind binding them with the default
// timeout (taken from browser-use 0.13's events.py unless noted).
//
// Naming: the struct carries the "Event" suffix (ClickElementEvent), the Kind
// variable does not (ClickElement), results end in "Result" or name their
// value (BrowserState). Events that only report something that happened
// (TabCreated, NavigationComplete, …) have the result type None; they are
// usually emitted fire-and-forget with bus.Emit.
//
// Every event's doc comment says who emits it and who handles it in the
// default set. "Session" is session.Session, "the actions watchdog" is
// package watchdogs/actions, and so on. A deployment that replaces a
// watchdog must answer the events it handled. The package depends only on
// bus.
//
// Timeouts are the per-handler defaults; override them per bus with
// Timeouts.Options (configuration) or TimeoutsFromEnv (environment), or per
// dispatch with bus.WithTimeout.
package events

import (
	"sort"
	"time"

	"github.com/browseragent/browseragent/bus"
)

// None is the result type of report-only events.
type None = struct{}

// KindInfo describes one catalog entry.
type KindInfo struct {
	Name    string
	Timeout time.Duration
	Report  bool // result type is None
}

var catalog = map[string]KindInfo{}

func def[E, R any](name string, timeout time.Duration) bus.Kind[E, R] {
	if _, dup := catalog[name]; dup {
		panic("events: duplicate kind " + name)
	}
	_, report := any(*new(R)).(None)
	catalog[name] = KindInfo{Name: name, Timeout: timeout, Report: report}
	return bus.Kind[E, R]{Name: name, Timeout: timeout}
}

// guard is def for events whose handler chain stops at the first error, so
// that a policy handler placed first can veto the effect.
func guard[E, R any](name string, timeout time.Duration) bus.Kind[E, R] {
	k := def[E, R](name, timeout)
	k.StopOnError = true
	return k
}

// Catalog returns every event kind of the catalog, sorted by name.
func Catalog() []KindInfo {
	out := make([]KindInfo, 0, len(catalog))
	for _, k := range catalog {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the catalog entry of a kind name.
func Lookup(name string) (KindInfo, bool) {
	k, ok := catalog[name]
	return k, ok
}

const sec = time.Second
