package cdp

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestScanID(t *testing.T) {
	big := strings.Repeat("x", 2*maxIDScan)
	for _, tc := range []struct {
		in   string
		id   int64
		want bool
	}{
		{`{"id":12,"result":{}}`, 12, true},
		{` {"id" : 7 , "result":{"a":1}}`, 7, true},
		{"{\n\t\"id\":\r\n9}", 9, true},
		{`{"id":12,"result":{"result":{"type":"string","value":"abc`, 12, true}, // truncated reply
		{`{"id":34,"result":{"x":}}`, 34, true},                                 // bad after the id
		{`{"method":"A.b","params":{"id":5},"id":6}`, 6, true},                  // nested ids skipped
		{`{"sessionId":"S","error":{"code":-32000,"message":"m\"id\":3"},"id":77}`, 77, true},
		{`{"params":["{",{"id":1}],"id":8}`, 8, true},
		{`{"id":9223372036854775807}`, 1<<63 - 1, true},
		{`{"id":12`, 12, true},                              // cut right after the digits: still names the call
		{`{"method":"Page.x","params":{"id":5}}`, 0, false}, // event: no top-level id
		{`{"method":"Page.x","params":{`, 0, false},
		{`not json`, 0, false},
		{``, 0, false},
		{`[{"id":1}]`, 0, false},
		{`{"id":0}`, 0, false},
		{`{"id":-3}`, 0, false},
		{`{"id":1.5}`, 0, false},
		{`{"id":1e3}`, 0, false},
		{`{"id":012}`, 0, false},
		{`{"id":"12"}`, 0, false},
		{`{"id":9223372036854775808}`, 0, false}, // overflows int64
		{`{"\u0069d":4}`, 0, false},              // escaped names are not recognised
		{`{"ids":4}`, 0, false},
		{`{"a":"unterminated, "id":4}`, 0, false},
		{`{"a" 1, "id":4}`, 0, false},
		{`{"id":3,"result":"` + big + `"}`, 3, true},
		{`{"result":"` + big + `","id":3}`, 0, false}, // beyond the bound
		{`{"result":"` + strings.Repeat("y", maxIDScan-len(`{"result":"","id":1`)) + `","id":12345}`, 0, false}, // digits cut by the bound
	} {
		id, ok := scanID([]byte(tc.in))
		name := tc.in
		if len(name) > 60 {
			name = name[:60] + "…"
		}
		if ok != tc.want || id != tc.id {
			t.Errorf("scanID(%q) = %d, %v; want %d, %v", name, id, ok, tc.id, tc.want)
		}
	}
}

// FuzzScanID checks that scanID never panics and, on well-formed JSON,
// agrees with a reference decoder about the first top-level "id".
func FuzzScanID(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"result":{}}`, `{"method":"A.b","params":{"id":2}}`, `{"a":[1,{"b":"}"}],"id":3}`,
		`{"id":4,"error":{"code":-32000,"message":"x"},"sessionId":"S"}`, `{`, `{"id":`, `"`, `{"a":"\"","id":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, ok := scanID(data)
		if !json.Valid(data) {
			return
		}
		wantID, wantOK := referenceID(data)
		if ok != wantOK || id != wantID {
			t.Fatalf("scanID(%q) = %d, %v; reference %d, %v", data, id, ok, wantID, wantOK)
		}
	})
}

// referenceID finds the first top-level member literally named "id" of a
// valid JSON object with encoding/json, and parses it like scanID.
func referenceID(data []byte) (int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return 0, false
	}
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return 0, false
		}
		raw := bytes.TrimLeft(data[off:dec.InputOffset()], " \t\r\n,")
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, false
		}
		if tok == "id" && string(raw) == `"id"` {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n <= 0 || v[0] == '0' {
				return 0, false
			}
			return n, true
		}
	}
	return 0, false
}

func TestActivityConnCountsProgress(t *testing.T) {
	a, b := net.Pipe() // synchronous: a write returns once read
	defer a.Close()
	defer b.Close()
	act := &activity{epoch: time.Now().Add(-time.Hour)}
	c := &activityConn{Conn: a, act: act}
	read := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, b)
		read <- n
	}()
	// A small write (one chunk) is not progress: the kernel takes it even
	// when the peer reads nothing.
	if _, err := c.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if act.last.Load() != 0 {
		t.Fatal("a one-chunk write counted as progress")
	}
	// The later chunks of a large write are.
	if n, err := c.Write(make([]byte, 3*writeChunk+5)); err != nil || n != 3*writeChunk+5 {
		t.Fatalf("write %d %v", n, err)
	}
	if act.silence() >= time.Hour {
		t.Fatal("a multi-chunk write did not count as progress")
	}
	a.Close()
	<-read

	// Every read with data is progress.
	x, y := net.Pipe()
	defer x.Close()
	defer y.Close()
	act2 := &activity{epoch: time.Now().Add(-time.Hour)}
	r := &activityConn{Conn: x, act: act2}
	go func() { _, _ = y.Write([]byte("hello")) }()
	buf := make([]byte, 16)
	if n, err := r.Read(buf); err != nil || n == 0 {
		t.Fatalf("read %d %v", n, err)
	}
	if act2.silence() >= time.Hour {
		t.Fatal("a read did not count as progress")
	}
}

func TestKeepaliveOption(t *testing.T) {
	for _, tc := range []struct {
		probe, stall         time.Duration
		wantProbe, wantStall time.Duration
	}{
		{0, 0, DefaultProbeAfter, DefaultStallTimeout},
		{time.Second, 0, time.Second, DefaultStallTimeout},
		{-1, -1, -1, -1},
		{-1, 5 * time.Second, -1, 5 * time.Second},
		{5 * time.Second, 2 * time.Second, time.Second, 2 * time.Second}, // probe must come first
		{time.Second, -1, time.Second, -1},
	} {
		o := defaultOptions()
		WithKeepalive(tc.probe, tc.stall)(&o)
		p, s := o.keepalive()
		if p != tc.wantProbe || s != tc.wantStall {
			t.Errorf("WithKeepalive(%v, %v): %v, %v; want %v, %v", tc.probe, tc.stall, p, s, tc.wantProbe, tc.wantStall)
		}
	}
}
