package events

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/bus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCatalogComplete(t *testing.T) {
	want := []string{
		"NavigateToURL", "NavigationStarted", "NavigationComplete", "GoBack", "GoForward", "Refresh", "Wait",
		"TabCreated", "TabClosed", "SwitchTab", "CloseTab", "AgentFocusChanged",
		"ClickElement", "ClickCoordinate", "TypeText", "Scroll", "ScrollToText", "SendKeys", "UploadFile",
		"GetDropdownOptions", "SelectDropdownOption", "Hover",
		"Screenshot", "BrowserStateRequest", "PageText", "Evaluate",
		"BrowserStop", "BrowserStopped", "BrowserConnected", "BrowserLost",
		"BrowserError", "TargetCrashed", "BrowserReconnecting", "BrowserReconnected",
		"DownloadStarted", "DownloadProgress", "FileDownloaded", "DialogOpened", "DialogHandled", "RequestBlocked",
		"SaveStorageState", "LoadStorageState", "StorageStateSaved", "StorageStateLoaded",
		"SearchPage", "FindElements", "PrintPDF",
		"Drag", "ScrollCoordinate", "ReadPDF", "ReadValue",
	}
	cat := Catalog()
	if len(cat) != len(want) {
		t.Errorf("catalog has %d kinds, want %d", len(cat), len(want))
	}
	seen := map[string]bool{}
	for _, k := range cat {
		if k.Name == "" || k.Timeout <= 0 || strings.HasSuffix(k.Name, "Event") {
			t.Errorf("bad kind %+v", k)
		}
		if seen[k.Name] {
			t.Errorf("duplicate %s", k.Name)
		}
		seen[k.Name] = true
	}
	for _, n := range want {
		if !seen[n] {
			t.Errorf("missing %s", n)
		}
	}
	reports := map[string]bool{"TabCreated": true, "NavigationComplete": true, "DialogOpened": true, "FileDownloaded": true}
	for n := range reports {
		if k, _ := Lookup(n); !k.Report {
			t.Errorf("%s should be report-only", n)
		}
	}
	if k, _ := Lookup("ClickElement"); k.Report || k.Timeout != 15*time.Second {
		t.Errorf("ClickElement %+v", k)
	}
	if !NavigateToURL.StopOnError || !ClickElement.StopOnError || Screenshot.StopOnError {
		t.Error("guarded kinds wrong")
	}
}

func TestTimeoutsConfigApplies(t *testing.T) {
	cfg := Timeouts{"Wait": 20 * time.Millisecond}
	if d, _ := cfg.Effective("Wait"); d != 20*time.Millisecond {
		t.Errorf("Effective = %v", d)
	}
	if d, _ := cfg.Effective("Scroll"); d != 8*time.Second {
		t.Errorf("Effective default = %v", d)
	}
	opt, err := cfg.Option()
	if err != nil {
		t.Fatal(err)
	}
	b := bus.New(opt)
	defer func() { _ = b.Close(context.Background()) }()
	hang := func(ctx context.Context, _ WaitEvent) (None, error) { <-ctx.Done(); return None{}, ctx.Err() }
	if _, err := bus.Handle(b, Wait, "hang", hang); err != nil {
		t.Fatal(err)
	}
	var te *bus.TimeoutError
	if _, err := bus.Call(context.Background(), b, Wait, WaitEvent{}); !errors.As(err, &te) || te.Timeout != 20*time.Millisecond {
		t.Fatalf("config override not applied: %v", err)
	}
	if err := (Timeouts{"Wait": 30 * time.Millisecond}).Apply(b); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Call(context.Background(), b, Wait, WaitEvent{}); !errors.As(err, &te) || te.Timeout != 30*time.Millisecond {
		t.Fatalf("Apply not applied: %v", err)
	}
	// Bad input: nothing applied, clear errors.
	bad := Timeouts{"Wait": time.Hour, "Nope": time.Second, "Scroll": -1}
	if err := bad.Apply(b); !errors.Is(err, ErrUnknownKind) || !errors.Is(err, ErrBadTimeout) || !strings.Contains(err.Error(), "Nope") {
		t.Fatalf("bad config: %v", err)
	}
	if _, err := bus.Call(context.Background(), b, Wait, WaitEvent{}); !errors.As(err, &te) || te.Timeout != 30*time.Millisecond {
		t.Fatalf("failed Apply changed the bus: %v", err)
	}
	if _, err := bad.Option(); err == nil {
		t.Error("Option accepted bad config")
	}
}

func TestTimeoutsFromEnv(t *testing.T) {
	got, err := TimeoutsFromEnv([]string{
		"PATH=/bin", EnvPrefix + "ClickElement=20s", EnvPrefix + "TypeText=2.5", "OTHER_TIMEOUT_X=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["ClickElement"] != 20*time.Second || got["TypeText"] != 2500*time.Millisecond || len(got) != 2 {
		t.Errorf("got %v", got)
	}
	_, err = TimeoutsFromEnv([]string{EnvPrefix + "Clik=1s", EnvPrefix + "Scroll=soon", EnvPrefix + "Wait=-3"})
	if !errors.Is(err, ErrUnknownKind) || !errors.Is(err, ErrBadTimeout) || !strings.Contains(err.Error(), EnvPrefix+"Scroll") || !strings.Contains(err.Error(), EnvPrefix+"Wait") {
		t.Errorf("err = %v", err)
	}
}

// TestCatalogOnBus wires a few catalog kinds the way session and watchdogs
// do: a policy guard in front of navigation, an inline child chain
// Navigate → TabCreated/SwitchTab → AgentFocusChanged, and report events
// emitted fire-and-forget.
func TestCatalogOnBus(t *testing.T) {
	b := bus.New()
	defer func() {
		if err := b.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	errBlocked := errors.New("blocked")
	focus := make(chan string, 1)
	must := func(_ *bus.Registration, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(bus.Handle(b, NavigateToURL, "session", func(ctx context.Context, ev NavigateToURLEvent) (NavigateResult, error) {
		if ev.NewTab {
			if _, err := bus.Emit(ctx, b, TabCreated, TabCreatedEvent{TargetID: "T2", URL: ev.URL}); err != nil {
				return NavigateResult{}, err
			}
			if _, err := bus.Call(ctx, b, SwitchTab, SwitchTabEvent{TargetID: "T2"}); err != nil {
				return NavigateResult{}, err
			}
		}
		return NavigateResult{TargetID: "T2", URL: ev.URL, Outcome: ActionOutcome{Verdict: VerdictNavigated}}, nil
	}))
	must(bus.Handle(b, NavigateToURL, "security", func(_ context.Context, ev NavigateToURLEvent) (NavigateResult, error) {
		if strings.HasPrefix(ev.URL, "data:") {
			return NavigateResult{}, errBlocked
		}
		return NavigateResult{}, nil
	}, bus.Guard(), bus.First()))
	must(bus.Handle(b, SwitchTab, "session", func(ctx context.Context, ev SwitchTabEvent) (SwitchTabResult, error) {
		_, err := bus.Call(ctx, b, AgentFocusChanged, AgentFocusChangedEvent{TargetID: ev.TargetID})
		return SwitchTabResult{TargetID: ev.TargetID}, err
	}))
	must(bus.Handle(b, AgentFocusChanged, "recorder", func(_ context.Context, ev AgentFocusChangedEvent) (None, error) {
		focus <- ev.TargetID
		return None{}, nil
	}))
	res, err := bus.Call(context.Background(), b, NavigateToURL, NavigateToURLEvent{URL: "http://127.0.0.1/", NewTab: true})
	if err != nil || res.URL != "http://127.0.0.1/" || res.Outcome.Verdict != VerdictNavigated {
		t.Fatalf("navigate = %+v, %v", res, err)
	}
	if got := <-focus; got != "T2" {
		t.Errorf("focus %s", got)
	}
	if _, err := bus.Call(context.Background(), b, NavigateToURL, NavigateToURLEvent{URL: "data:text/html,x"}); !errors.Is(err, errBlocked) {
		t.Errorf("policy did not veto: %v", err)
	}
	// TypeText summaries never show secrets.
	if s := (TypeTextEvent{Text: "hunter2", Sensitive: true, SensitiveKey: "pw"}).Summary(); strings.Contains(s, "hunter2") {
		t.Errorf("summary leaks secret: %s", s)
	}
}
