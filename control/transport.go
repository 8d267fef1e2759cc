package control

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"runtime"
	"sync"
	"time"
)

// Transport is how a session's server and its clients meet.
type Transport string

// The transports.
const (
	// TransportUnix: a Unix socket NAME.sock (mode 0600 in the 0700 Dir);
	// on Linux the server also refuses other users (SO_PEERCRED). The
	// default on Unix systems.
	TransportUnix Transport = "unix"
	// TransportTCP: a listener on 127.0.0.1 at a random port, and a random
	// 256-bit token; both are written to NAME.tcp (mode 0600 in the Dir).
	// A client sends the token first; the server compares it in constant
	// time and refuses the connection unless it matches. The default on
	// Windows, where the Dir's access is what Windows gives the user's
	// profile folder (not checked: see OpenDir).
	TransportTCP Transport = "tcp"
)

// TransportEnv is the environment variable that selects the transport a
// server listens on: "unix" or "tcp" (so the TCP transport can be used,
// and tested, on Unix systems too). Clients need not agree: they use what
// the session's files say.
const TransportEnv = "BROWSERAGENT_SHELL_TRANSPORT"

// ErrTransport: TransportEnv names a transport this system does not have.
var ErrTransport = errors.New("control: unknown or unsupported transport")

// ErrRefused: the server refused the connection (not the session's owner:
// another user, or no valid token).
var ErrRefused = errors.New("control: connection refused by the session")

// ErrInsecureListener: Serve was given a TCP listener that does not check
// tokens; only Paths.Listen makes one that does.
var ErrInsecureListener = errors.New("control: a TCP listener without a token check")

// DefaultTransport is the transport of this system when TransportEnv is
// not set.
func DefaultTransport() Transport {
	if runtime.GOOS == "windows" {
		return TransportTCP
	}
	return TransportUnix
}

// SelectedTransport is the transport TransportEnv selects, else
// DefaultTransport; an error wraps ErrTransport.
func SelectedTransport() (Transport, error) {
	switch t := Transport(os.Getenv(TransportEnv)); t {
	case "":
		return DefaultTransport(), nil
	case TransportTCP:
		return t, nil
	case TransportUnix:
		if runtime.GOOS == "windows" {
			return "", fmt.Errorf("%w: %s=%s: sessions on Windows use tcp", ErrTransport, TransportEnv, t)
		}
		return t, nil
	default:
		return "", fmt.Errorf("%w: %s=%q: want unix or tcp", ErrTransport, TransportEnv, string(t))
	}
}

// tokenBytes is the size of a session's token: 256 bits.
const tokenBytes = 32

// endpoint is what NAME.tcp holds. The token never leaves this file and
// the connections that carry it: it is not logged, printed or put in Meta
// or Info.
type endpoint struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
}

// maxEndpointBytes bounds what a client reads of NAME.tcp.
const maxEndpointBytes = 4096

// Listen makes the session's listener for p.Transport: the Unix socket
// (mode 0600), or a loopback TCP listener whose address and new token are
// written to p.Endpoint (mode 0600) and whose connections must present
// the token. The caller holds the session's lock; closing the listener
// removes the socket or the endpoint file.
func (p Paths) Listen() (net.Listener, error) {
	switch p.Transport {
	case TransportUnix, "":
		ln, err := net.Listen("unix", p.Socket)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(p.Socket, 0o600); err != nil {
			ln.Close()
			return nil, err
		}
		return ln, nil
	case TransportTCP:
		return listenTCP(p.Endpoint)
	}
	return nil, fmt.Errorf("%w: %q", ErrTransport, string(p.Transport))
}

func listenTCP(file string) (net.Listener, error) {
	var raw [tokenBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(raw[:])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(endpoint{Addr: ln.Addr().String(), Token: token})
	if err == nil {
		err = writePrivate(file, append(b, '\n'))
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("control: writing %s: %w", file, err)
	}
	return &tokenListener{Listener: ln, token: []byte(token), file: file}, nil
}

// writePrivate writes a new file readable by its owner only (on Windows:
// what the directory's access list grants) and renames it into place, so
// a reader never sees half of it.
func writePrivate(path string, b []byte) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// tokenListener is a loopback TCP listener whose connections must begin
// with its token.
type tokenListener struct {
	net.Listener
	token []byte
	file  string
	once  sync.Once
}

// Accept returns the next connection, not yet authenticated: the Server
// reads the token on the connection's own goroutine, so that a slow
// client holds up no other.
func (l *tokenListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tokenConn{Conn: c, token: l.token}, nil
}

// Close stops listening and removes the endpoint file.
func (l *tokenListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { os.Remove(l.file) })
	return err
}

// tokenConn is a connection that must present the token before its
// request.
type tokenConn struct {
	net.Conn
	token []byte
}

// authenticate reads the token line (exactly the token's length and a
// newline, so not a byte of the request is consumed) within timeout or
// until ctx ends, and compares it in constant time.
func (c *tokenConn) authenticate(ctx context.Context, timeout time.Duration) error {
	c.SetReadDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	got := make([]byte, len(c.token)+1)
	if _, err := io.ReadFull(c.Conn, got); err != nil {
		return fmt.Errorf("%w: no token: %v", ErrRefused, err)
	}
	ok := subtle.ConstantTimeCompare(got[:len(c.token)], c.token) == 1 && got[len(c.token)] == '\n'
	c.SetReadDeadline(time.Time{})
	if !ok {
		return fmt.Errorf("%w: a connection without the session's token", ErrRefused)
	}
	return nil
}

// authenticator is a connection that must prove itself before its request
// is read.
type authenticator interface {
	authenticate(ctx context.Context, timeout time.Duration) error
}

// readEndpoint reads a NAME.tcp file. An error wraps fs.ErrNotExist when
// there is none.
func readEndpoint(path string) (endpoint, error) {
	var ep endpoint
	f, err := os.Open(path)
	if err != nil {
		return ep, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ep, err
	}
	if !fi.Mode().IsRegular() {
		return ep, fmt.Errorf("%s is not a regular file", path)
	}
	line, err := bufio.NewReader(io.LimitReader(f, maxEndpointBytes)).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return ep, err
	}
	if err := json.Unmarshal(line, &ep); err != nil {
		return ep, fmt.Errorf("%s: %w", path, err)
	}
	// The token goes to a loopback address only, whatever the file says.
	host, _, err := net.SplitHostPort(ep.Addr)
	if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
		return ep, fmt.Errorf("%s: %q is not a loopback address", path, ep.Addr)
	}
	if len(ep.Token) != 2*tokenBytes {
		return ep, fmt.Errorf("%s: no valid token", path)
	}
	return ep, nil
}

// isNotExist reports an error of a file that is not there.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
