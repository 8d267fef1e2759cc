package events

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/browseragent/browseragent/bus"
)

// ErrUnknownKind is returned for a timeout override naming no catalog event.
var ErrUnknownKind = errors.New("events: unknown event kind")

// ErrBadTimeout is returned for a timeout override that is not a duration >= 0.
var ErrBadTimeout = errors.New("events: bad timeout")

// EnvPrefix prefixes the environment variables read by TimeoutsFromEnv:
// BROWSERAGENT_TIMEOUT_ClickElement=20s (a Go duration, or seconds as a
// number like upstream's TIMEOUT_<Event>).
const EnvPrefix = "BROWSERAGENT_TIMEOUT_"

// Timeouts overrides catalog timeouts by kind name (configuration: a
// Profile field, a config file). 0 means "no override"; overrides are per
// handler, like the defaults.
type Timeouts map[string]time.Duration

// Validate checks that every name is a catalog kind and every duration >= 0.
func (t Timeouts) Validate() error {
	var errs []error
	for _, name := range sortedKeys(t) {
		if _, ok := catalog[name]; !ok {
			errs = append(errs, fmt.Errorf("%w: %q", ErrUnknownKind, name))
		}
		if t[name] < 0 {
			errs = append(errs, fmt.Errorf("%w: %s = %v", ErrBadTimeout, name, t[name]))
		}
	}
	return errors.Join(errs...)
}

// Option returns a bus option applying the overrides to a new bus. It
// validates first.
func (t Timeouts) Option() (bus.Option, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	m := make(map[string]time.Duration, len(t))
	for k, d := range t {
		if d > 0 {
			m[k] = d
		}
	}
	return bus.WithTimeouts(m), nil
}

// Apply sets the overrides on an existing bus (bus.SetTimeout), after
// validating all of them: on error nothing is applied.
func (t Timeouts) Apply(b *bus.Bus) error {
	if err := t.Validate(); err != nil {
		return err
	}
	for k, d := range t {
		b.SetTimeout(k, d)
	}
	return nil
}

// Effective returns the timeout of a catalog kind with the overrides applied.
func (t Timeouts) Effective(name string) (time.Duration, bool) {
	k, ok := catalog[name]
	if !ok {
		return 0, false
	}
	if d := t[name]; d > 0 {
		return d, true
	}
	return k.Timeout, true
}

// TimeoutsFromEnv reads EnvPrefix<Name> variables from environ (os.Environ()
// form, "KEY=value"). Values are Go durations ("20s", "1m30s") or seconds
// ("20", "2.5"). Unknown names and bad values are errors naming the variable;
// other variables are ignored.
func TimeoutsFromEnv(environ []string) (Timeouts, error) {
	t := Timeouts{}
	var errs []error
	for _, kv := range environ {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(key, EnvPrefix) {
			continue
		}
		name := strings.TrimPrefix(key, EnvPrefix)
		if _, known := catalog[name]; !known {
			errs = append(errs, fmt.Errorf("%w: %s", ErrUnknownKind, key))
			continue
		}
		d, err := parseTimeout(val)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s=%q: %v", ErrBadTimeout, key, val, err))
			continue
		}
		t[name] = d
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

func parseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > 1e9 {
			return 0, errors.New("seconds out of range")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, errors.New("negative")
	}
	return d, nil
}

func sortedKeys(t Timeouts) []string {
	ks := make([]string, 0, len(t))
	for k := range t {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
