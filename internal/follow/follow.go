// Package follow consumes a CDP event subscription for as long as its
// owner runs, including past an overflow. A cdp.Subscription that falls
// behind is closed by the connection (events are never dropped silently);
// Run then subscribes again, logs it, and calls the consumer's Resync so
// that it re-reads the state whose events it may have missed. Every
// long-lived consumer of CDP events in the runtime goes through Run, so
// that none of them cancels the wrong subscription or misses events
// without knowing.
package follow

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/browseragent/browseragent/cdp"
)

// Options configure Run. The zero value is usable.
type Options struct {
	// Name identifies the consumer in logs ("security commits").
	Name string
	// Logger receives the overflow warning. Default zap.NewNop().
	Logger *zap.Logger
	// Resync is called, on Run's goroutine, after a new subscription
	// replaced one that overflowed and before its events are delivered: the
	// consumer reads the current state (the tab list, the committed URLs)
	// to make up for the events it lost. Nil: nothing to re-read (the loss
	// is still logged).
	Resync func(ctx context.Context)
}

// Run delivers the events of the subscriptions open returns to handle, in
// order, on the calling goroutine, until ctx ends (Run returns nil) or a
// subscription ends for another reason than an overflow: its session
// detached or the connection closed (Run returns that error; nil after a
// Cancel by someone else). open is called once at the start and once after
// each overflow. The subscription in use is cancelled when Run returns.
//
// A consumer that must not miss the first events subscribes itself, before
// the action that causes them, and passes that subscription as first.
func Run(ctx context.Context, first *cdp.Subscription, open func() *cdp.Subscription, handle func(cdp.Event), opt Options) error {
	log := opt.Logger
	if log == nil {
		log = zap.NewNop()
	}
	sub := first
	if sub == nil {
		sub = open()
	}
	defer func() { sub.Cancel() }() // the current one, not the first
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-sub.C():
			if ok {
				handle(ev)
				continue
			}
			err := sub.Err()
			if !errors.Is(err, cdp.ErrSubscriptionOverflow) {
				return err
			}
			log.Warn("event consumer fell behind; subscribing again and resynchronising",
				zap.String("consumer", opt.Name), zap.Error(err))
			sub = open()
			if opt.Resync != nil {
				opt.Resync(ctx)
			}
		}
	}
}
