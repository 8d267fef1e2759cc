package control_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/browseragent/browseragent/control"
)

func TestControlValidName(t *testing.T) {
	for _, ok := range []string{"default", "a", "A_b-c.1", "_x", "9", strings.Repeat("n", 64)} {
		if err := control.ValidName(ok); err != nil {
			t.Errorf("ValidName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "-rf", "a/b", "../x", "a b", "ä", "x\n", strings.Repeat("n", 65), "a:b"} {
		if err := control.ValidName(bad); !errors.Is(err, control.ErrBadName) {
			t.Errorf("ValidName(%q) = %v, want ErrBadName", bad, err)
		}
	}
}

// shortDir is a private directory with a short path: a socket path must
// fit in 108 bytes, and t.TempDir's may not.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestControlOpenDirCreatesAPrivateDirectory(t *testing.T) {
	path := filepath.Join(shortDir(t), "browseragent")
	d, err := control.OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(d.Path())
	if err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("directory %v, %v; want mode 0700", fi.Mode(), err)
	}
	// Opening it again accepts it as it is.
	if _, err := control.OpenDir(path); err != nil {
		t.Fatal(err)
	}
}

func TestControlOpenDirRefusesUnsafeDirectories(t *testing.T) {
	base := shortDir(t)

	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := control.OpenDir(open)
	if !errors.Is(err, control.ErrUnsafeDir) || !strings.Contains(err.Error(), "0777") {
		t.Fatalf("a 0777 directory: %v", err)
	}
	if fi, _ := os.Stat(open); fi.Mode().Perm() != 0o777 {
		t.Fatal("OpenDir changed the refused directory")
	}

	link := filepath.Join(base, "link")
	private := filepath.Join(base, "private")
	os.Mkdir(private, 0o700)
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	if _, err := control.OpenDir(link); !errors.Is(err, control.ErrUnsafeDir) {
		t.Fatalf("a symlink: %v", err)
	}

	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := control.OpenDir(file); !errors.Is(err, control.ErrUnsafeDir) {
		t.Fatalf("a file: %v", err)
	}

	if _, err := control.OpenDir(filepath.Join(base, "missing", "browseragent")); err == nil {
		t.Fatal("a directory whose parent is missing was accepted")
	}
}

func TestControlSessionPaths(t *testing.T) {
	d, err := control.OpenDir(filepath.Join(shortDir(t), "browseragent"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Session("work")
	if err != nil {
		t.Fatal(err)
	}
	if p.Socket != filepath.Join(d.Path(), "work.sock") || p.Lock != filepath.Join(d.Path(), "work.lock") || p.Meta != filepath.Join(d.Path(), "work.json") {
		t.Fatalf("paths %+v", p)
	}
	if _, err := d.Session("../x"); !errors.Is(err, control.ErrBadName) {
		t.Fatalf("bad name: %v", err)
	}

	// A directory too deep for a socket address is refused with words
	// that say what to do.
	deep := shortDir(t)
	for len(deep) < control.MaxSocketPath {
		deep = filepath.Join(deep, "dddddddddddddddddddd")
	}
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	dd, err := control.OpenDir(filepath.Join(deep, "browseragent"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = dd.Session("default")
	if !errors.Is(err, control.ErrPathTooLong) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Fatalf("too long: %v", err)
	}
}

func TestControlDefaultDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1234")
	if got := control.DefaultDir(); got != "/run/user/1234/browseragent" {
		t.Fatalf("with XDG_RUNTIME_DIR: %s", got)
	}
	t.Setenv("XDG_RUNTIME_DIR", "relative/dir")
	if got := control.DefaultDir(); !strings.HasPrefix(got, os.TempDir()) || !strings.Contains(got, "browseragent-") {
		t.Fatalf("without a usable XDG_RUNTIME_DIR: %s", got)
	}
}

// Diagnose tells a dead session from a live one by its lock, and removes
// what a dead one left.
func TestControlDiagnose(t *testing.T) {
	d, err := control.OpenDir(filepath.Join(shortDir(t), "browseragent"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := d.Session("s")

	if e := p.Diagnose(); e.State != control.Absent || !errors.Is(e, control.ErrNotRunning) {
		t.Fatalf("nothing there: %+v", e)
	}

	// A live process holds the lock: busy, and nothing is removed.
	l, err := p.TryLock()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMeta(control.Meta{Name: "s", PID: 42, Log: "/x/session.log"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TryLock(); !errors.Is(err, control.ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	if e := p.Diagnose(); e.State != control.Busy {
		t.Fatalf("locked: %+v", e)
	}
	if _, err := os.Stat(p.Meta); err != nil {
		t.Fatal("Diagnose removed a live session's Meta")
	}
	l.Unlock()

	// Its process died: the socket and the Meta go, the log is named.
	os.WriteFile(p.Socket, nil, 0o600)
	e := p.Diagnose()
	if e.State != control.Died || !strings.Contains(e.Error(), "pid 42") || !strings.Contains(e.Error(), "/x/session.log") {
		t.Fatalf("died: %v", e)
	}
	names, _ := d.Names()
	if len(names) != 0 {
		t.Fatalf("left behind: %v", names)
	}

	// It ended by itself and said why: reported once.
	now := time.Now()
	p.WriteMeta(control.Meta{Name: "s", PID: 43, Ended: &now, Reason: "idle for 2s", Trace: "/x/trace.jsonl"})
	if e := p.Diagnose(); e.State != control.Ended || !strings.Contains(e.Error(), "idle for 2s") || !strings.Contains(e.Error(), "/x/trace.jsonl") {
		t.Fatalf("ended: %v", e)
	}
	if e := p.Diagnose(); e.State != control.Absent {
		t.Fatalf("reported twice: %v", e)
	}
}
