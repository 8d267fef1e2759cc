//go:build windows

package cdp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows the browser and every process it starts (GPU, renderers,
// network service, crash handler) belong to a job object of the Browser's,
// made with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: terminating the job ends
// the whole tree, and so does closing its last handle, which is what
// happens when this process dies without Close (the counterpart of
// Linux's Pdeathsig).
//
// The browser is assigned to the job right after it started, so a process
// it spawned before that would not be in the job. That window is a few
// microseconds, while Chromium spends milliseconds loading before it starts
// its first helper. Starting it suspended (CREATE_SUSPENDED) would close
// the window, but the main thread then has to be resumed, and os/exec
// closes that thread's handle inside StartProcess: finding it again means
// enumerating the process's threads, more code on a path that must not
// fail, for a race that does not happen in practice.

// procGroup is a browser's job object. It belongs to that Browser (not
// looked up by PID: Windows reuses PIDs quickly, and a dead browser's Close
// must not reach a new browser's job). mu orders terminate against close,
// so the handle is never used after it was closed.
type procGroup struct {
	mu     sync.Mutex
	job    windows.Handle
	closed bool
}

// terminate ends every process of the job, unless it was closed.
func (g *procGroup) terminate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		_ = windows.TerminateJobObject(g.job, 1)
	}
}

// close closes the job's handle, which kills what is left in it.
func (g *procGroup) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		windows.CloseHandle(g.job)
	}
}

// setProcAttrs does nothing: the job is assigned after start (see above).
func setProcAttrs(cmd *exec.Cmd) {}

// lockThread and unlockThread do nothing: only Linux's Pdeathsig ties the
// browser to the thread that started it.
func lockThread()   {}
func unlockThread() {}

// adoptProcess puts the just-started browser p into a new job object that
// kills its processes when closed. On error the browser runs outside any
// job: Close then kills the browser process only.
func adoptProcess(p *os.Process) (*procGroup, error) {
	job, err := windows.CreateJobObject(nil, nil) // not inheritable
	if err != nil {
		return nil, fmt.Errorf("creating a job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("setting the job's limits: %w", err)
	}
	// os/exec holds a handle of p until Wait returns, so its PID names it.
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("opening the browser process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("assigning the browser to a job object: %w", err)
	}
	return &procGroup{job: job}, nil
}

// killGroup terminates the browser's job g (nil: it has none), and the
// process pid itself in case it is not in it. A negative pid terminates
// only the job (the process was reaped: its PID may name another one now).
func killGroup(pid int, g *procGroup) {
	if g != nil {
		g.terminate()
	}
	if pid <= 0 {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
		_ = p.Release()
	}
}

// interruptProcess fails: a windowless process has no way to be asked to
// quit that Chromium honours, so Close kills the browser at once.
func interruptProcess(pid int) error {
	return errors.New("cdp: no graceful quit on Windows")
}

// waitGroupGone waits (bounded by ctx and 10 s) until the browser's job g
// has no active process, terminating it again meanwhile, then closes the
// job, which kills whatever is left. Without a job (adoptProcess failed)
// it returns at once. Launch's cleanup calls it once per browser.
func waitGroupGone(ctx context.Context, pid int, g *procGroup) error {
	if g == nil {
		return nil
	}
	defer g.close()
	job := g.job // not closed before the deferred close: only this call closes it
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := activeProcesses(job)
		if err != nil {
			return fmt.Errorf("querying job of browser %d: %w", pid, err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job of browser %d still has %d processes", pid, n)
		}
		_ = windows.TerminateJobObject(job, 1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, which
// x/sys/windows does not define.
type jobAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// activeProcesses returns how many processes of job have not ended.
func activeProcesses(job windows.Handle) (uint32, error) {
	var info jobAccounting
	err := windows.QueryInformationJobObject(job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
	return info.ActiveProcesses, err
}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not ended (STILL_ACTIVE).
const stillActive = 259

// processAlive reports whether process pid runs. A process we may not open
// counts as alive; one that ended with exit code 259 looks alive too,
// which only keeps ReapLeftovers from removing its directories.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == stillActive
}

// ReapLeftovers removes the temporary profiles and private TMPDIRs made by
// Launch (os.TempDir()/ProfilePrefix* and TempDirPrefix*) whose owner
// marker names a process that no longer exists; a directory without a
// marker (being created right now) or with a live owner is left alone. It
// kills nothing and returns 0: a browser dies with its job when its owner
// dies, so there is none left to kill. Launch calls it; calling it
// directly is safe too.
func ReapLeftovers() (int, error) {
	dead, err := deadOwnedDirs()
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	return 0, removeDirs(dead)
}

// tempDirEnv is the environment that makes dir the browser's temporary
// directory: Windows' GetTempPath reads TMP, then TEMP, not TMPDIR.
func tempDirEnv(dir string) []string { return []string{"TMP=" + dir, "TEMP=" + dir} }
