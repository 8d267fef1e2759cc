package cdp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// deadOwnedDirs returns, cleaned, the temporary profiles and private
// TMPDIRs made by Launch (os.TempDir()/ProfilePrefix* and TempDirPrefix*)
// whose owner marker names a process that no longer exists. A directory
// without a marker (being created right now), with this process or a live
// one as owner, is left out.
func deadOwnedDirs() (map[string]bool, error) {
	tmp := os.TempDir()
	var dirs []string
	for _, prefix := range []string{ProfilePrefix, TempDirPrefix} {
		m, err := filepath.Glob(filepath.Join(tmp, prefix+"*"))
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, m...)
	}
	dead := map[string]bool{}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || owner == os.Getpid() || processAlive(owner) {
			continue
		}
		dead[filepath.Clean(d)] = true
	}
	return dead, nil
}

// removeDirs removes the directories of dead owners, each retrying briefly
// (removeAllRetry) while a process that was just killed still holds or
// writes files there.
func removeDirs(dirs map[string]bool) error {
	var errs []error
	for d := range dirs {
		if err := removeAllRetry(context.Background(), d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// psProcess is one line of `ps -axww -o pid=,pgid=,command=`.
type psProcess struct {
	pid, pgid int
	command   string // the command line, its arguments joined by spaces
}

// parsePS parses the output of `ps -axww -o pid=,pgid=,command=`: per
// line, blank-padded PID and PGID columns, then the command line to the
// end of the line. Lines that do not parse (none should) are skipped.
func parsePS(out string) []psProcess {
	var ps []psProcess
	for _, line := range strings.Split(out, "\n") {
		pidS, rest, ok := strings.Cut(strings.TrimLeft(line, " \t"), " ")
		if !ok {
			continue
		}
		pgidS, cmd, ok := strings.Cut(strings.TrimLeft(rest, " \t"), " ")
		if !ok {
			continue
		}
		pid, err1 := strconv.Atoi(pidS)
		pgid, err2 := strconv.Atoi(pgidS)
		cmd = strings.TrimSpace(cmd)
		if err1 != nil || err2 != nil || pid <= 0 || cmd == "" {
			continue
		}
		ps = append(ps, psProcess{pid: pid, pgid: pgid, command: cmd})
	}
	return ps
}

// commandUses reports whether a command line as ps prints it (arguments
// joined by spaces, so not splittable exactly) names one of the dead
// directories as an argument or an option's value: DIR must start the
// line or follow a space or '=', and end it or be followed by a space or a
// path separator (--user-data-dir=DIR, --database=DIR/Crashpad). The
// directories' random names make a false match of another program's
// arguments practically impossible.
func commandUses(command string, dead map[string]bool) bool {
	for d := range dead {
		for from := 0; ; {
			i := strings.Index(command[from:], d)
			if i < 0 {
				break
			}
			i += from
			end := i + len(d)
			before := i == 0 || command[i-1] == ' ' || command[i-1] == '='
			after := end == len(command) || command[end] == ' ' || command[end] == filepath.Separator
			if before && after {
				return true
			}
			from = i + 1
		}
	}
	return false
}
