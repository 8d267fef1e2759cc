package events

import (
	"errors"
	"testing"
)

func TestRequestDescribeAndFailed(t *testing.T) {
	for _, c := range []struct {
		r                   Request
		want                string
		failed, unconfirmed bool
	}{
		{Request{Method: "post", URL: "http://h/submit?token=s3cret#x", Type: "Document", Status: 500}, "POST http://h/submit answered 500", true, false},
		{Request{Method: "POST", URL: "http://h/api", Type: "Fetch", Error: "net::ERR_CONNECTION_REFUSED"}, "POST http://h/api failed: net::ERR_CONNECTION_REFUSED", true, false},
		{Request{Method: "POST", URL: "http://h/api", Type: "XHR", Error: "blocked by policy", Blocked: true}, "POST http://h/api was blocked by policy", true, false},
		{Request{Method: "POST", URL: "http://h/api", Type: "XHR", Error: "net::ERR_ABORTED", Canceled: true}, "POST http://h/api was canceled before its answer (unconfirmed)", false, true},
		{Request{Method: "POST", URL: "http://h/api", Type: "Fetch", Pending: true}, "POST http://h/api has no answer yet (unconfirmed)", false, true},
		{Request{Method: "POST", URL: "http://h/prg", Type: "Document", Status: 302}, "POST http://h/prg answered 302", false, false},
	} {
		if got := c.r.Describe(); got != c.want {
			t.Errorf("Describe = %q, want %q", got, c.want)
		}
		if c.r.Failed() != c.failed || c.r.Unconfirmed() != c.unconfirmed {
			t.Errorf("%q: Failed %v Unconfirmed %v, want %v %v", c.want, c.r.Failed(), c.r.Unconfirmed(), c.failed, c.unconfirmed)
		}
	}
}

func TestFailedWriteSkipsTheNewPagesOwnRequests(t *testing.T) {
	o := ActionOutcome{Requests: []Request{
		{Method: "GET", URL: "http://h/next", Type: "Document", Status: 200, Own: true, Navigation: true},
		{Method: "POST", URL: "http://h/analytics", Type: "Fetch", Status: 500, Own: true}, // the new page's
		{Method: "POST", URL: "http://h/beacon", Type: "Ping", Status: 500, Own: true},     // not a verdict type
	}}
	if r, ok := o.FailedWrite(); ok {
		t.Fatalf("FailedWrite = %+v, want none", r)
	}
	o.Requests = append([]Request{{Method: "POST", URL: "http://h/save", Type: "XHR", Status: 422, Own: true}}, o.Requests...)
	if r, ok := o.FailedWrite(); !ok || r.URL != "http://h/save" {
		t.Fatalf("FailedWrite = %+v %v, want the XHR", r, ok)
	}
	err := error(&RequestError{Request: o.Requests[0]})
	var re *RequestError
	if !errors.Is(err, ErrRequestFailed) || !errors.As(err, &re) || err.Error() != "POST http://h/save answered 422" {
		t.Fatalf("RequestError %v", err)
	}
}

// TestFailedWriteOnlyOwnAndAfterFrameDocuments: a third-party write that
// failed decides nothing; an iframe's document does not hide the action's
// own failed write that follows it.
func TestFailedWriteOnlyOwnAndAfterFrameDocuments(t *testing.T) {
	o := ActionOutcome{Verdict: VerdictFailed, Requests: []Request{
		{Method: "POST", URL: "http://tracker/v1/t", Type: "Fetch", Status: 422},
		{Method: "GET", URL: "http://h/slow", Type: "Document", Status: 200, Own: true}, // an iframe's
		{Method: "POST", URL: "http://h/api", Type: "Fetch", Status: 422, Own: true},
	}}
	r, ok := o.FailedWrite()
	if !ok || r.URL != "http://h/api" {
		t.Fatalf("FailedWrite = %+v %v, want the own POST after the frame", r, ok)
	}
	if err := o.RequestErr(nil); !errors.Is(err, ErrRequestFailed) {
		t.Fatalf("RequestErr = %v", err)
	}
	o.Requests = o.Requests[:2]
	if r, ok := o.FailedWrite(); ok {
		t.Fatalf("FailedWrite = %+v, want none (third-party only)", r)
	}
	if err := o.RequestErr(nil); err != nil {
		t.Fatalf("RequestErr = %v, want nil", err)
	}
}
