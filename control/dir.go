package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Errors of the socket directory.
var (
	// ErrBadName: a session name that is not 1 to 64 of A-Z a-z 0-9 _ . -
	// starting with a letter, a digit or _.
	ErrBadName = errors.New("control: bad session name")
	// ErrUnsafeDir: the socket directory is not the caller's own private
	// directory (another owner, a symlink, or a mode other than 0700).
	ErrUnsafeDir = errors.New("control: unsafe socket directory")
	// ErrPathTooLong: a socket path longer than a Unix socket address
	// holds.
	ErrPathTooLong = errors.New("control: socket path too long")
	// ErrLocked: the session's lock is held by a live process.
	ErrLocked = errors.New("control: session lock held")
)

// DefaultName is the session name when none is given.
const DefaultName = "default"

// ValidName returns an error wrapping ErrBadName unless name is a valid
// session name: 1 to 64 of A-Z a-z 0-9 _ . - starting with a letter, a
// digit or _ (so that it is a plain file name and never a flag).
func ValidName(name string) error {
	ok := len(name) >= 1 && len(name) <= 64 && name[0] != '.' && name[0] != '-'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w %q: use 1 to 64 letters, digits, _ . - (not starting with . or -)", ErrBadName, name)
	}
	return nil
}

// MaxSocketPath is the longest socket path the system takes: sun_path
// holds 108 bytes on Linux and 104 elsewhere, the terminating NUL
// included.
var MaxSocketPath = map[bool]int{true: 107, false: 103}[runtime.GOOS == "linux"]

// DefaultDir is the socket directory: $XDG_RUNTIME_DIR/browseragent when
// XDG_RUNTIME_DIR is an absolute path (a per-user tmpfs on most Linux
// desktops); on Windows %LocalAppData%\browseragent-sessions (under the
// user's profile, which only the user, SYSTEM and Administrators may
// enter by default); else os.TempDir()/browseragent-<uid>.
func DefaultDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) && runtime.GOOS != "windows" {
		return filepath.Join(d, "browseragent")
	}
	if runtime.GOOS == "windows" {
		if d := os.Getenv("LocalAppData"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "browseragent-sessions")
		}
		return filepath.Join(os.TempDir(), "browseragent-sessions")
	}
	return filepath.Join(os.TempDir(), "browseragent-"+strconv.Itoa(os.Getuid()))
}

// Dir is a socket directory checked by OpenDir.
type Dir struct {
	path      string
	transport Transport
}

// OpenDir creates path with mode 0700 when it does not exist (its parent
// must), and checks it: a directory, not a symlink, owned by the caller,
// mode exactly 0700. Anything else is refused with an error wrapping
// ErrUnsafeDir and is left as it is: in a shared directory such as /tmp,
// another user may have made it to read or replace the sockets.
//
// On Windows only "a directory, not a symlink or junction" is checked:
// Go sets no access list, so the directory and its files get what their
// parent grants (under the user's profile: the user, SYSTEM and
// Administrators), and the owner is not compared.
//
// The Dir's sessions listen on SelectedTransport; an error wraps
// ErrTransport when TransportEnv names none this system has.
func OpenDir(path string) (*Dir, error) {
	transport, err := SelectedTransport()
	if err != nil {
		return nil, err
	}
	path = filepath.Clean(path)
	if err := os.Mkdir(path, 0o700); err == nil {
		// The umask may have taken bits away.
		if err := os.Chmod(path, 0o700); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("control: creating the socket directory: %w", err)
	}
	if err := checkDir(path); err != nil {
		return nil, err
	}
	return &Dir{path: path, transport: transport}, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Paths are the files of one session in a Dir.
type Paths struct {
	Name string
	// Socket is NAME.sock, Endpoint NAME.tcp (TransportTCP's address and
	// token), Lock NAME.lock, Meta NAME.json.
	Socket, Endpoint, Lock, Meta string
	// Transport is what a server of this session listens on (Listen).
	// Clients use whichever the session's files say (Client).
	Transport Transport
}

// Client returns a client of the session: over TCP when its NAME.tcp
// exists, else over its Unix socket (never on Windows).
func (p Paths) Client(timeout time.Duration) Client {
	c := Client{Endpoint: p.Endpoint, Lock: p.Lock, Timeout: timeout}
	if runtime.GOOS != "windows" {
		c.Socket = p.Socket
	}
	return c
}

// Session returns the paths of the named session, or an error wrapping
// ErrBadName or ErrPathTooLong (a Unix socket's path only).
func (d *Dir) Session(name string) (Paths, error) {
	if err := ValidName(name); err != nil {
		return Paths{}, err
	}
	base := filepath.Join(d.path, name)
	p := Paths{Name: name, Socket: base + ".sock", Endpoint: base + ".tcp", Lock: base + ".lock", Meta: base + ".json", Transport: d.transport}
	if p.Transport == TransportUnix && len(p.Socket) > MaxSocketPath {
		return Paths{}, fmt.Errorf("%w: %s is %d bytes, a Unix socket address holds %d; set XDG_RUNTIME_DIR (or TMPDIR) to a shorter directory, or use a shorter session name",
			ErrPathTooLong, p.Socket, len(p.Socket), MaxSocketPath)
	}
	return p, nil
}

// Names lists the sessions that have a socket, an endpoint or a Meta file
// in d, sorted.
func (d *Dir) Names() ([]string, error) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, e := range ents {
		n := e.Name()
		for _, ext := range []string{".sock", ".tcp", ".json"} {
			if base, ok := strings.CutSuffix(n, ext); ok && ValidName(base) == nil {
				seen[base] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Meta is what a session's NAME.json says: written by the server process
// when it starts, rewritten with Ended and Reason when it ends for another
// reason than close (idle, signal, browser gone), removed on close.
type Meta struct {
	Name    string    `json:"name"`
	PID     int       `json:"pid"`
	Version int       `json:"version"`
	Started time.Time `json:"started"`
	Dir     string    `json:"dir,omitempty"`
	Trace   string    `json:"trace,omitempty"`
	Report  string    `json:"report,omitempty"`
	Log     string    `json:"log,omitempty"`
	CDPURL  string    `json:"cdp_url,omitempty"`
	// Ended is when the session ended (nil while it runs); Reason says why.
	Ended  *time.Time `json:"ended,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// WriteMeta writes m to p.Meta (mode 0600), replacing it whole.
func (p Paths) WriteMeta(m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := p.Meta + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p.Meta)
}

// ReadMeta reads p.Meta.
func (p Paths) ReadMeta() (Meta, error) {
	var m Meta
	b, err := os.ReadFile(p.Meta)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("control: %s: %w", p.Meta, err)
	}
	return m, nil
}

// NotRunningState is what Diagnose found of a session that did not
// answer.
type NotRunningState int

// States of a session that does not answer.
const (
	// Absent: there is no trace of it.
	Absent NotRunningState = iota + 1
	// Busy: its process holds the lock but does not listen: it is
	// starting (its browser) or stopping (writing its trace).
	Busy
	// Died: its process ended without closing (killed, crashed); its stale
	// socket and Meta were removed.
	Died
	// Ended: it ended by itself (Meta.Reason: idle, signal, browser gone)
	// and said so; its Meta was removed, so this is reported once.
	Ended
)

// NotRunningError is a session that does not answer, and why. It wraps
// ErrNotRunning.
type NotRunningError struct {
	Name  string
	State NotRunningState
	// Meta is what the session's last Meta said (nil when there was none).
	Meta *Meta
}

func (e *NotRunningError) Error() string {
	switch e.State {
	case Busy:
		return fmt.Sprintf("session %q is starting or stopping and does not answer yet", e.Name)
	case Died:
		var b strings.Builder
		fmt.Fprintf(&b, "session %q is not running: its process", e.Name)
		if e.Meta != nil && e.Meta.PID > 0 {
			fmt.Fprintf(&b, " (pid %d)", e.Meta.PID)
		}
		b.WriteString(" ended without closing (killed or crashed); its stale socket was removed")
		if e.Meta != nil && e.Meta.Log != "" {
			fmt.Fprintf(&b, "; its log: %s", e.Meta.Log)
		}
		return b.String()
	case Ended:
		var b strings.Builder
		fmt.Fprintf(&b, "session %q is not running: it ended", e.Name)
		if e.Meta != nil && e.Meta.Ended != nil {
			fmt.Fprintf(&b, " at %s", e.Meta.Ended.Local().Format("15:04:05"))
		}
		if e.Meta != nil && e.Meta.Reason != "" {
			fmt.Fprintf(&b, " (%s)", e.Meta.Reason)
		}
		if e.Meta != nil && e.Meta.Trace != "" {
			fmt.Fprintf(&b, "; its trace: %s", e.Meta.Trace)
		}
		if e.Meta != nil && e.Meta.Log != "" {
			fmt.Fprintf(&b, "; its log: %s", e.Meta.Log)
		}
		return b.String()
	}
	return fmt.Sprintf("no session %q is running", e.Name)
}

// Unwrap makes errors.Is(err, ErrNotRunning) hold.
func (e *NotRunningError) Unwrap() error { return ErrNotRunning }

// Diagnose tells why the session does not answer, for a caller whose Call
// failed with ErrNotRunning: Busy while a live process holds the lock;
// otherwise Absent, Died or Ended, after removing the stale socket or
// endpoint file and the Meta (under the lock, so that a session starting
// meanwhile is not touched).
func (p Paths) Diagnose() *NotRunningError {
	e := &NotRunningError{Name: p.Name, State: Absent}
	l, err := p.TryLock()
	if err != nil {
		if errors.Is(err, ErrLocked) {
			e.State = Busy
		}
		return e
	}
	defer l.Unlock()
	m, merr := p.ReadMeta()
	if merr == nil {
		e.Meta = &m
	}
	_, serr := os.Lstat(p.Socket)
	_, eerr := os.Lstat(p.Endpoint)
	switch {
	case merr == nil && m.Ended != nil:
		e.State = Ended
	case merr == nil || serr == nil || eerr == nil:
		e.State = Died
	}
	os.Remove(p.Socket)
	os.Remove(p.Endpoint)
	os.Remove(p.Meta)
	return e
}
