package session_test

import (
	"context"
	"testing"

	"github.com/browseragent/browseragent/internal/testbrowser"
	"github.com/browseragent/browseragent/session"
)

// BenchmarkSessionStartStop compares what a session costs to begin and end
// in a browser of its own (launch, quit) with a context of its own in a
// running browser (create, dispose), the two ways of running many sessions
// on one host. Run: go test -run '^$' -bench SessionStartStop -benchtime 5x ./session/
func BenchmarkSessionStartStop(b *testing.B) {
	cycle := func(b *testing.B, p session.Profile) {
		ctx := context.Background()
		for range b.N {
			s := session.New(p)
			if err := s.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if err := s.Stop(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("launched-browser", func(b *testing.B) { cycle(b, session.Profile{}) })
	b.Run("isolated-context", func(b *testing.B) {
		env := testbrowser.Start(b)
		cycle(b, session.Profile{IsolatedContext: true, CDPURL: env.Browser.WebSocketURL()})
	})
}
