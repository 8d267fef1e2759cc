package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestStdinTerminalNeedsForeground: stdin counts as a terminal the run may
// read only when it is one and the process's group is its foreground group
// (a run in the background would be stopped by SIGTTIN at its first read).
// The child prints what stdinIsTerminal says: a pseudo-terminal that is its
// controlling terminal (its session's, so in the foreground) is; the same
// terminal when it is not the child's controlling one (no foreground group
// of the child's) is not; /dev/null is not.
func TestStdinTerminalNeedsForeground(t *testing.T) {
	if os.Getenv("BA_TTY_CHILD") == "1" {
		fmt.Printf("stdin-terminal=%v\n", stdinIsTerminal())
		return
	}
	for _, c := range []struct {
		name  string
		ctty  bool
		pty   bool
		wants string
	}{
		{"controlling terminal", true, true, "stdin-terminal=true"},
		{"a terminal not ours", false, true, "stdin-terminal=false"},
		{"/dev/null", false, false, "stdin-terminal=false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestStdinTerminalNeedsForeground$")
			cmd.Env = append(os.Environ(), "BA_TTY_CHILD=1")
			if c.pty {
				_, slave := openPTY(t)
				cmd.Stdin = slave
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: c.ctty, Ctty: 0}
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), c.wants) {
				t.Fatalf("child says %q, want %q", out, c.wants)
			}
		})
	}
}
