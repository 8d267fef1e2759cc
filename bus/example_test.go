package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/browseragent/browseragent/bus"
)

// GreetEvent is a custom event; Greeting is its result.
type GreetEvent struct{ Name string }

type Greeting struct{ Text string }

// Greet binds them, with a 2 s default handler timeout.
var Greet = bus.Kind[GreetEvent, Greeting]{Name: "Greet", Timeout: 2 * time.Second, StopOnError: true}

var ErrRude = errors.New("rude name")

func Example() {
	b := bus.New(bus.WithName("session-1"))
	defer b.Close(context.Background())

	// The default handler.
	bus.Handle(b, Greet, "greeter", func(ctx context.Context, ev GreetEvent) (Greeting, error) {
		return Greeting{Text: "hello " + ev.Name}, nil
	})
	// A policy placed in front of it: its error stops the chain.
	bus.Handle(b, Greet, "policy", func(ctx context.Context, ev GreetEvent) (Greeting, error) {
		if strings.Contains(ev.Name, "!") {
			return Greeting{}, ErrRude
		}
		return Greeting{}, nil
	}, bus.Guard(), bus.First())

	g, err := bus.Call(context.Background(), b, Greet, GreetEvent{Name: "gopher"})
	fmt.Println(g.Text, err)

	_, err = bus.Call(context.Background(), b, Greet, GreetEvent{Name: "you!"})
	fmt.Println(errors.Is(err, ErrRude))
	// Output:
	// hello gopher <nil>
	// true
}
