// Command custom-action embeds the agent with an action of its own: the
// model reads a price off a local shop page and records it through
// record_price, a Go function with typed parameters.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/agent/llm/scripted"
	"github.com/browseragent/browseragent/session"
	"github.com/browseragent/browseragent/watchdogs"
)

// PriceParams are the action's parameters: the JSON schema the model gets
// is derived from this struct.
type PriceParams struct {
	Product string  `json:"product" description:"the product name as shown"`
	Price   float64 `json:"price" description:"the price in euros"`
}

const shop = `<!doctype html><title>Shop</title><h1>Gopher plush</h1><p id=price>Price: 24.90 €</p><button>Add to cart</button>`

func main() {
	if err := run(context.Background(), os.Stdout, ""); err != nil {
		log.Fatal(err)
	}
}

// run does the example's work; runDir "" means a temporary folder.
func run(ctx context.Context, out io.Writer, runDir string) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, shop) }))
	defer srv.Close()

	// 1. The action: a typed Go function registered next to the built-ins.
	var recorded []PriceParams
	tools := agent.DefaultRegistry()
	err := agent.Register(tools, "record_price", "Record the price of a product",
		func(_ context.Context, _ *agent.ActionContext, p PriceParams) (agent.ActionResult, error) {
			recorded = append(recorded, p)
			return agent.ActionResult{Text: fmt.Sprintf("recorded %s at %.2f €", p.Product, p.Price)}, nil
		}, agent.WithRisk(agent.RiskRead))
	if err != nil {
		return err
	}

	// 2. A browser session with the default watchdogs.
	s := watchdogs.NewSession(session.Profile{})
	if err := s.Start(ctx); err != nil {
		return err
	}
	defer s.Stop(context.Background())

	// 3. A model. A real one would be providers.New("openai:gpt-4.1", ...);
	// the scripted model keeps the example offline.
	model := scripted.New([]scripted.Step{
		{NextGoal: "Record the price.", Actions: []scripted.Action{{Name: "record_price", Params: map[string]any{"product": "Gopher plush", "price": 24.90}}}},
		{NextGoal: "Finish.", Actions: []scripted.Action{{Name: "done", Params: map[string]any{"success": true, "text": "Gopher plush costs 24.90 €"}}}},
	})
	a, err := agent.New("Record the price of the gopher plush at "+srv.URL, model, s, agent.Settings{Tools: tools, RunDir: runDir, MaxSteps: 5, StepTimeout: time.Minute})
	if err != nil {
		return err
	}
	res, err := a.Run(ctx)
	if err != nil {
		return err
	}
	if len(recorded) != 1 {
		return fmt.Errorf("the action ran %d times, want 1", len(recorded))
	}
	fmt.Fprintf(out, "recorded: %s %.2f\nresult: %s (success %v)\n", recorded[0].Product, recorded[0].Price, res.FinalText, res.Success)
	return nil
}
