package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/browseragent/browseragent/agent/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/ok":
			if string(b) != `{"a":1}` || r.Header.Get("X-Extra") != "v" || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("body %s headers %v", b, r.Header)
			}
			io.WriteString(w, `{"fine":true}`)
		case "/ms":
			w.Header().Set("Retry-After-Ms", "1500")
			w.WriteHeader(429)
			io.WriteString(w, "slow down")
		}
	}))
	defer srv.Close()
	call := Call{Provider: "p", Client: srv.Client(), URL: srv.URL + "/ok", Header: http.Header{"X-Extra": {"v"}}, Body: map[string]int{"a": 1}}
	body, lat, err := Do(context.Background(), call)
	if err != nil || string(body) != `{"fine":true}` || lat <= 0 {
		t.Fatalf("%s %v %v", body, lat, err)
	}
	call.URL = srv.URL + "/ms"
	_, _, err = Do(context.Background(), call)
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.RetryAfter != 1500*time.Millisecond || ae.Message != "slow down" || !errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %#v", err)
	}
	call.Body = func() {}
	if _, _, err := Do(context.Background(), call); !errors.Is(err, llm.ErrBadRequest) {
		t.Fatalf("unencodable body: %v", err)
	}
}

func TestEnvelopeAndFinish(t *testing.T) {
	err := Envelope("p", []byte("<html>"), errors.New("invalid character"))
	if !errors.Is(err, llm.ErrProviderUnavailable) || !strings.Contains(err.Error(), "<html>") {
		t.Fatalf("%v", err)
	}
	req := &llm.Request{Schema: &llm.Schema{}}
	if _, err := Finish("p", req, &llm.Response{Content: "no"}); !errors.Is(err, llm.ErrMalformedOutput) || !strings.HasPrefix(err.Error(), "p: ") {
		t.Fatalf("%v", err)
	}
	if _, err := Finish("p", &llm.Request{}, &llm.Response{Content: "no"}); err != nil {
		t.Fatalf("free text: %v", err)
	}
}

func TestClassifyAndAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/quota":
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"type":"insufficient_quota"}}`)
		case "/stall":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	call := Call{Provider: "p", Client: srv.Client(), URL: srv.URL + "/quota", Body: map[string]int{},
		ParseError: func([]byte) (string, string, time.Duration) { return "insufficient_quota", "no credit", 0 },
		Classify: func(ae *llm.APIError) {
			if ae.Code == "insufficient_quota" {
				ae.Class = llm.ErrQuota
			}
		}}
	if _, _, err := Do(context.Background(), call); !errors.Is(err, llm.ErrQuota) || errors.Is(err, llm.ErrRateLimited) {
		t.Fatalf("err = %v", err)
	}

	req := &llm.Request{AttemptTimeout: 40 * time.Millisecond}
	if d := Timeout(context.Background(), time.Minute, req); d != 40*time.Millisecond {
		t.Fatalf("the shorter request timeout must win: %s", d)
	}
	if d := Timeout(context.Background(), 10*time.Millisecond, req); d != 10*time.Millisecond {
		t.Fatalf("the shorter configured timeout must win: %s", d)
	}
	call.URL, call.Timeout = srv.URL+"/stall", Timeout(context.Background(), time.Minute, req)
	_, _, err := Do(context.Background(), call)
	var ae *llm.APIError
	if !errors.As(err, &ae) || !errors.Is(err, llm.ErrProviderUnavailable) || !strings.Contains(err.Error(), "attempt timeout of 40ms") {
		t.Fatalf("err = %v", err)
	}
}
