package report

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
	"github.com/browseragent/browseragent/trace"
)

// The report shows each step's blocked summary and lists every refused
// request with its resource type and initiator, from the RequestBlocked
// bus records.
func TestReportShowsBlockedRequests(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	w, err := trace.Create(path, trace.WithMetadata(map[string]any{"task": "shop"}))
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(bus.WithName("session"))
	w.ObserveBus(b)
	if _, err := bus.Handle(b, events.RequestBlocked, "dom", func(context.Context, events.RequestBlockedEvent) (events.None, error) {
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []events.RequestBlockedEvent{
		{TabID: "T1", URL: "https://tracker.example/a.js?<b>", Host: "tracker.example", ResourceType: "Script",
			Initiator: "https://shop.test/", Reason: "host tracker.example is not allowed", Layer: "interception"},
		{URL: "wss://evil.test:443", Host: "evil.test", ResourceType: "Connection", Reason: "host evil.test is prohibited", Layer: "guard"},
		// Too large to keep whole: the report falls back on the summary.
		{URL: "https://tracker.example/c?" + strings.Repeat("x", 5000), Host: "tracker.example", ResourceType: "Ping", Reason: "big", Layer: "interception"},
	} {
		if _, err := bus.Call(context.Background(), b, events.RequestBlocked, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	step := trace.Step{Step: 1, URL: "https://shop.test/", Blocked: []trace.Blocked{
		{Host: "tracker.example", Count: 2, Types: []string{"script", "ping"}},
		{Host: "evil.test", Count: 1, Types: []string{"connection"}},
	}}
	if err := w.Write(trace.TypeStep, step); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(trace.TypeStep, trace.Step{Step: 2, URL: "https://shop.test/"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.BlockedTotal != 3 || len(d.BlockedRequests) != 3 {
		t.Fatalf("%d of %d blocked requests", len(d.BlockedRequests), d.BlockedTotal)
	}
	first := d.BlockedRequests[0]
	if first.Type != "Script" || first.Initiator != "https://shop.test/" || first.Layer != "interception" || first.TabID != "T1" || first.Time.IsZero() {
		t.Fatalf("first blocked request %+v", first)
	}
	if big := d.BlockedRequests[2]; big.URL != "" || !strings.HasPrefix(big.Summary, "Ping https://tracker.example/c?") {
		t.Fatalf("oversized record %+v: want its summary", big)
	}

	var out bytes.Buffer
	if err := Render(&out, d); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	for _, want := range []string{
		`<strong>Blocked by the URL policy since the previous step:</strong> 2 to tracker.example (script, ping); 1 to evil.test (connection)</p>`,
		"<h2>Blocked requests</h2>",
		"3 requests refused by the URL policy.",
		`<td>Script</td><td class="url">https://tracker.example/a.js?&lt;b&gt;</td><td class="url">https://shop.test/</td><td>host tracker.example is not allowed</td><td>interception</td>`,
		`<td>Connection</td><td class="url">wss://evil.test:443</td>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(html, `class="blocked"`); n != 1 {
		t.Errorf("%d steps show a blocked summary, want 1", n)
	}
}

// The list is capped; the total is still told.
func TestReportCapsBlockedRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	w, err := trace.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New()
	w.ObserveBus(b)
	if _, err := bus.Handle(b, events.RequestBlocked, "dom", func(context.Context, events.RequestBlockedEvent) (events.None, error) {
		return events.None{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for range MaxBlockedRequests + 5 {
		if _, err := bus.Emit(context.Background(), b, events.RequestBlocked, events.RequestBlockedEvent{URL: "https://t.test/p", Host: "t.test", ResourceType: "Ping"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if d.BlockedTotal != MaxBlockedRequests+5 || len(d.BlockedRequests) != MaxBlockedRequests {
		t.Fatalf("%d of %d listed", len(d.BlockedRequests), d.BlockedTotal)
	}
	var out bytes.Buffer
	if err := Render(&out, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "505 requests refused by the URL policy; the first 500 are listed.") {
		t.Fatal("the report does not say the list is capped")
	}
}
