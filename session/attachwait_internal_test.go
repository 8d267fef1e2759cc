package session

import (
	"context"
	"testing"
	"time"
)

// The wait for a tab to attach is the caller's to bound: a ctx with a
// deadline keeps it (eight browsers starting at once on two busy cores
// need more than the default), a ctx without one gets defaultAttachWait.
func TestAttachWaitHonoursTheCallersDeadline(t *testing.T) {
	long, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	want, _ := long.Deadline()
	w, wcancel := attachWait(long)
	got, ok := w.Deadline()
	wcancel()
	if !ok || !got.Equal(want) {
		t.Fatalf("with the caller's deadline %v: wait deadline %v (%v), want the caller's", want, got, ok)
	}
	if w.Err() == nil {
		t.Fatal("the wait's cancel did not end it")
	}

	before := time.Now()
	w, wcancel = attachWait(context.Background())
	defer wcancel()
	got, ok = w.Deadline()
	if !ok || got.Before(before.Add(defaultAttachWait)) || got.After(time.Now().Add(defaultAttachWait)) {
		t.Fatalf("without a deadline: wait deadline %v (%v), want %v from now", got, ok, defaultAttachWait)
	}
}
