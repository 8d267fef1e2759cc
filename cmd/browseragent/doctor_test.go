package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/browseragent/browseragent/cdp"
)

func TestDoctorFindsBrowser(t *testing.T) {
	if os.Getenv(cdp.EnvChrome) != "" {
		t.Setenv(cdp.EnvChrome, "") // the test is about discovery
	}
	want, err := cdp.FindChrome()
	if err != nil {
		t.Skipf("no browser on this machine: %v", err)
	}
	r := cli(t, []string{cdp.EnvChrome + "="}, "doctor")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"browser:  " + want, "version:", "used   " + want, "sockets:"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}

	r = cli(t, []string{cdp.EnvChrome + "="}, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v:\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if !rep.OK || rep.Browser != want || !strings.ContainsAny(rep.Version, "0123456789") || rep.VersionFrom != "--version" || len(rep.Places) < 2 {
		t.Errorf("report %+v", rep)
	}
}

func TestDoctorEnvMissing(t *testing.T) {
	r := cli(t, []string{cdp.EnvChrome + "=/nonexistent"}, "doctor")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"browser:  none found", `BROWSERAGENT_CHROME="/nonexistent": no such file`, "no other place is tried"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "/nonexistent") {
		t.Errorf("stderr does not say why: %s", r.stderr)
	}

	r = cli(t, []string{cdp.EnvChrome + "=/nonexistent"}, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 {
		t.Fatalf("exit %d, %v:\n%s", r.code, err, r.stdout)
	}
	if rep.OK || rep.Browser != "" || !strings.Contains(rep.Error, "no such file") || len(rep.Places) != 1 {
		t.Errorf("report %+v", rep)
	}
}

// A browser that fails --version is found but not usable.
func TestDoctorBrokenBrowser(t *testing.T) {
	if _, err := os.Stat("/bin/false"); err != nil {
		t.Skip("no /bin/false")
	}
	r := cli(t, []string{cdp.EnvChrome + "=/bin/false"}, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "browser:  /bin/false") || !strings.Contains(r.stdout, "--version failed") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestDoctorLaunch(t *testing.T) {
	if _, err := cdp.FindChrome(); err != nil {
		t.Skipf("no browser on this machine: %v", err)
	}
	r := cli(t, nil, "doctor", "--launch")
	if r.code != 0 || !strings.Contains(r.stdout, "(from launch)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
