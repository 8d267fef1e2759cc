//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// spawnSession starts the background process detached from this one (a
// session and process group of its own, so the shell's hang-up and Ctrl-C
// do not reach it; stdin and stdout on /dev/null; stderr appended to
// logPath) and waits until it says it listens, it exits, or bound passes.
// Nothing of it outlives this call in this process: on success it is
// released, otherwise reaped.
func spawnSession(exe string, argv []string, logPath string, bound time.Duration) (int, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		logf.Close()
		return 0, err
	}
	defer r.Close()
	cmd := exec.Command(exe, argv...)
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{w} // fd 3: "ok" once listening
	cmd.SysProcAttr = detachedAttr()
	err = cmd.Start()
	w.Close()
	logf.Close()
	if err != nil {
		return 0, fmt.Errorf("starting the session's process: %w", err)
	}
	pid := cmd.Process.Pid
	r.SetReadDeadline(time.Now().Add(bound))
	line, rerr := bufio.NewReader(r).ReadString('\n')
	switch strings.TrimSpace(line) {
	case "ok":
		cmd.Process.Release()
		return pid, nil
	case "busy":
		cmd.Wait()
		return 0, errSessionBusy
	}
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, fmt.Errorf("the session's process (pid %d) did not start within %s; its log %s ends with:\n%s", pid, bound, logPath, logTail(logPath, 15))
	}
	werr := cmd.Wait()
	return 0, fmt.Errorf("the session's process (pid %d) ended before it was ready (%v); its log %s ends with:\n%s", pid, werr, logPath, logTail(logPath, 15))
}

// readyPipe is the pipe open gave as file descriptor fd, kept from the
// browser this process starts: open must see it close when this process
// dies.
func readyPipe(fd int) *os.File {
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "ready")
}

// detachedAttr puts the background process in a session and process group
// of its own, so the shell's hang-up and Ctrl-C do not reach it.
func detachedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
