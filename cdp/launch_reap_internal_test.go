package cdp

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParsePS(t *testing.T) {
	out := "    1     1 /sbin/launchd\n" +
		"  812   812 /Applications/Google Chrome.app/Contents/MacOS/Google Chrome --user-data-dir=/tmp/p x\n" +
		"99999   812 \t/bin/helper   --a  \n" +
		"\n" +
		"junk\n" +
		"   12 \n" +
		"  abc   1 cmd\n" +
		"   13    13 \n"
	want := []psProcess{
		{1, 1, "/sbin/launchd"},
		{812, 812, "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome --user-data-dir=/tmp/p x"},
		{99999, 812, "/bin/helper   --a"},
	}
	if got := parsePS(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("parsePS:\n got %+v\nwant %+v", got, want)
	}
}

func TestCommandUses(t *testing.T) {
	d := filepath.Join(string(filepath.Separator)+"tmp", "browseragent-profile-123")
	sep := string(filepath.Separator)
	dead := map[string]bool{d: true}
	for cmd, want := range map[string]bool{
		"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome --user-data-dir=" + d + " about:blank": true,
		"chrome_crashpad_handler --database=" + d + sep + "Crashpad --url=x":                                 true,
		"helper --user-data-dir=" + d:                       true,  // at the end
		"helper " + d + sep + "file":                        true,  // a plain argument
		d + sep + "bin":                                     true,  // at the start
		"helper --user-data-dir=" + d + "4":                 false, // another directory with d as prefix
		"helper --user-data-dir=x" + d:                      false,
		"helper --user-data-dir=" + d + "-other " + d + "9": false,
		"helper --x=" + d + "0 --user-data-dir=" + d:        true, // a later occurrence matches
		"unrelated": false,
		"":          false,
	} {
		if got := commandUses(cmd, dead); got != want {
			t.Errorf("commandUses(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// TestDeadOwnedDirs checks which directories ReapLeftovers may take, on
// every OS: those of Launch's prefixes whose owner has ended.
func TestDeadOwnedDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.TempDir on Unix
	t.Setenv("TMP", tmp)    // and on Windows
	t.Setenv("TEMP", tmp)
	if filepath.Clean(os.TempDir()) != filepath.Clean(tmp) {
		t.Skipf("os.TempDir() = %s, not set from the environment here", os.TempDir())
	}
	// A dead owner: this test binary, run to do nothing, then reaped.
	ended := exec.Command(os.Args[0], "-test.run=^$")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, owner string) string {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	deadPID := strconv.Itoa(ended.Process.Pid) + "\n"
	deadProfile := mk(ProfilePrefix+"dead", deadPID)
	deadTmp := mk(TempDirPrefix+"dead", deadPID)
	mk(ProfilePrefix+"self", strconv.Itoa(os.Getpid()))
	mk(ProfilePrefix+"live", strconv.Itoa(os.Getppid()))
	mk(ProfilePrefix+"unmarked", "")
	mk(ProfilePrefix+"garbled", "not a pid")
	mk("other-dead", deadPID)

	got, err := deadOwnedDirs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{deadProfile: true, deadTmp: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("deadOwnedDirs() = %v, want %v", got, want)
	}
	if err := removeDirs(got); err != nil {
		t.Fatal(err)
	}
	for d := range want {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s not removed: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, ProfilePrefix+"live")); err != nil {
		t.Errorf("a live owner's directory was removed: %v", err)
	}
}

// TestParsePSReal reads this very process from the system's ps, where
// there is one taking the options ReapLeftovers gives it outside Linux.
func TestParsePSReal(t *testing.T) {
	out, err := exec.Command("/bin/ps", "-axww", "-o", "pid=,pgid=,command=").Output()
	if err != nil {
		t.Skipf("no usable /bin/ps here: %v", err)
	}
	for _, p := range parsePS(string(out)) {
		if p.pid == os.Getpid() {
			if !strings.HasPrefix(p.command, os.Args[0]) {
				t.Fatalf("own command line %q, want it to start with %q", p.command, os.Args[0])
			}
			return
		}
	}
	t.Fatalf("own PID %d not in ps output:\n%s", os.Getpid(), out)
}
