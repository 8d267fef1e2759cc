package cdp_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/runtime"

	"github.com/browseragent/browseragent/cdp"
	"github.com/browseragent/browseragent/internal/testbrowser"
)

// frameLog records the header of every websocket frame a client sends
// through its proxy.
type frameLog struct {
	proxy *testbrowser.Proxy

	mu     sync.Mutex
	frames []frameHeader
}

type frameHeader struct {
	fin    bool
	opcode byte
	length uint64
}

func newFrameLog(t *testing.T, target string) *frameLog {
	l := &frameLog{}
	l.proxy = testbrowser.NewProxy(t, target, testbrowser.WithUpstream(l.clientToServer))
	return l
}

func (p *frameLog) clientToServer(up io.Writer, c io.Reader) {
	r := bufio.NewReaderSize(c, 1<<16)
	// The HTTP upgrade request, up to the blank line.
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := io.WriteString(up, line); err != nil {
			return
		}
		if line == "\r\n" {
			break
		}
	}
	for {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		hdr := append([]byte(nil), h[:]...)
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return
			}
			hdr = append(hdr, b[:]...)
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return
			}
			hdr = append(hdr, b[:]...)
			n = binary.BigEndian.Uint64(b[:])
		}
		if h[1]&0x80 != 0 {
			var m [4]byte
			if _, err := io.ReadFull(r, m[:]); err != nil {
				return
			}
			hdr = append(hdr, m[:]...)
		}
		p.mu.Lock()
		p.frames = append(p.frames, frameHeader{fin: h[0]&0x80 != 0, opcode: h[0] & 0x0f, length: n})
		p.mu.Unlock()
		if _, err := up.Write(hdr); err != nil {
			return
		}
		if _, err := io.CopyN(up, r, int64(n)); err != nil {
			return
		}
	}
}

func (p *frameLog) dataFrames() []frameHeader {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []frameHeader
	for _, f := range p.frames {
		if f.opcode <= 2 { // continuation, text, binary
			out = append(out, f)
		}
	}
	return out
}

// TestLargeParamIsOneFrame checks that a command larger than gorilla's
// default 4 KiB buffer leaves as a single websocket frame.
func TestLargeParamIsOneFrame(t *testing.T) {
	env := testbrowser.Start(t)
	ctx := ctxT(t)
	u, err := url.Parse(env.Browser.WebSocketURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFrameLog(t, u.Host)
	for _, tc := range []struct {
		name       string
		size       int
		opts       []cdp.Option
		fragmented bool
	}{
		{"default buffer, 900 KB", 900 << 10, nil, false},
		{"4 MiB buffer, 3 MB", 3 << 20, []cdp.Option{cdp.WithWriteBufferSize(4 << 20)}, false},
		// Control: the proxy does see fragmentation (Chromium 156 accepts it).
		{"4 KiB buffer, 20 KB", 20 << 10, []cdp.Option{cdp.WithWriteBufferSize(4 << 10)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxied := proxy.proxy.Through(u.String())
			c, err := cdp.Dial(ctx, proxied, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before := len(proxy.dataFrames())
			var res runtime.EvaluateResult
			expr := "'" + strings.Repeat("z", tc.size) + "'.length"
			_, sess := openBlank(t, ctx, env, c)
			if err := sess.Call(ctx, runtime.CommandEvaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: ptr(true)}, &res); err != nil {
				t.Fatal(err)
			}
			if string(res.Result.Value) != strconv.Itoa(tc.size) {
				t.Fatalf("evaluated %s", res.Result.Value)
			}
			frames := proxy.dataFrames()[before:]
			fragments := 0
			var big []frameHeader
			for _, f := range frames {
				if f.opcode == 0 || !f.fin {
					fragments++
				}
				if f.length > uint64(tc.size) {
					big = append(big, f)
				}
			}
			if tc.fragmented {
				if fragments == 0 {
					t.Fatalf("control: expected fragments, got %+v", frames)
				}
				return
			}
			if fragments != 0 || len(big) != 1 {
				t.Fatalf("want one unfragmented frame carrying the %d-byte param, got %d fragments, big frames %+v", tc.size, fragments, big)
			}
		})
	}
}
