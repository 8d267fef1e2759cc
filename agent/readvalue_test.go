package agent_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/events"
)

// TestDriverReadValue: the state cuts a long textarea value and says how
// much is left out; read_value returns it whole; a value over the
// result's cap is cut in the result and saved whole to a file it names; a
// secret in a value is scrubbed; a password field is refused with
// events.ErrValueWithheld, its value nowhere in the record.
func TestDriverReadValue(t *testing.T) {
	env, s := newSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	set := settings(t)
	set.SensitiveData = map[string]string{"title": "Quarterly report"}
	d, err := agent.NewDriver(s, set)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	if _, err := d.Do(ctx, "navigate", params(t, map[string]any{"url": env.URL("/actions-value.html")})); err != nil {
		t.Fatal(err)
	}
	o, err := d.State(ctx, agent.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var notes string
	evalPage(t, s, `document.getElementById('notes').value`, &notes)
	cut := regexp.MustCompile(`"… ([0-9,]+) more chars \(read_value\)`).FindStringSubmatch(o.Text)
	if cut == nil || strings.Contains(o.Text, "END-OF-NOTES") {
		t.Fatalf("the state does not mark the cut notes:\n%s", o.Text)
	}

	rec, err := d.Do(ctx, "read_value", params(t, map[string]any{"index": indexWhere(t, o.State, "id", "notes")}))
	if err != nil || rec.Result.ReadOnce != notes {
		t.Fatalf("read_value notes: %v; read %d chars, want %d", err, len(rec.Result.ReadOnce), len(notes))
	}

	var log string
	evalPage(t, s, `document.getElementById('log').value`, &log)
	rec, err = d.Do(ctx, "read_value", params(t, map[string]any{"index": indexWhere(t, o.State, "id", "log")}))
	if err != nil {
		t.Fatalf("read_value log: %v", err)
	}
	name := regexp.MustCompile(`Saved whole as (value_\S+\.txt)\.`).FindStringSubmatch(rec.Result.Text)
	if name == nil || !strings.HasPrefix(rec.Result.ReadOnce, log[:10000]) || strings.Contains(rec.Result.ReadOnce, "LOG-END") ||
		!strings.Contains(rec.Result.ReadOnce, "more characters; the whole value is in "+name[1]) {
		t.Fatalf("long log: %q\n%.200q", rec.Result.Text, rec.Result.ReadOnce[max(0, len(rec.Result.ReadOnce)-200):])
	}
	if saved, err := d.FileSystem().Read(name[1]); err != nil || saved != log {
		t.Fatalf("saved file %s: %v, %d chars (want %d)", name[1], err, len(saved), len(log))
	}

	rec, err = d.Do(ctx, "read_value", params(t, map[string]any{"index": indexWhere(t, o.State, "id", "title")}))
	if err != nil || strings.Contains(rec.Text(), "Quarterly") || !strings.Contains(rec.Result.ReadOnce, "<secret>title</secret>") {
		t.Fatalf("a secret in a value: %v %q", err, rec.Text())
	}

	rec, err = d.Do(ctx, "read_value", params(t, map[string]any{"index": indexWhere(t, o.State, "id", "pw")}))
	if !errors.Is(err, events.ErrValueWithheld) || strings.Contains(rec.Text(), "hunter2") {
		t.Fatalf("password: %v %q", err, rec.Text())
	}
}
