package layout

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "github.com/browseragent/browseragent"

type pkg struct {
	ImportPath   string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// list runs `go list -deps=false -json` on the module's packages.
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: the module is not where the test expects it", len(pkgs))
	}
	return pkgs
}

// watchdogPackage reports whether path is one watchdog's package (or a
// package below it): watchdogs/<name>[/...], not the composition root.
func watchdogPackage(path string) (name string, ok bool) {
	rest, found := strings.CutPrefix(path, module+"/watchdogs/")
	if !found {
		return "", false
	}
	name, _, _ = strings.Cut(rest, "/")
	return name, true
}

func TestLayoutRules(t *testing.T) {
	var watchdogs, agentPkgs, drivers int
	for _, p := range list(t) {
		if self, ok := watchdogPackage(p.ImportPath); ok {
			watchdogs++
			// Tests included: a test that needs two watchdogs together
			// belongs to the composition root (package watchdogs).
			for _, imp := range concat(p.Imports, p.TestImports, p.XTestImports) {
				if other, ok := watchdogPackage(imp); ok && other != self {
					t.Errorf("%s imports another watchdog package, %s: watchdogs talk through events", p.ImportPath, imp)
				}
			}
		}
		if p.ImportPath == module+"/mcpserver" || p.ImportPath == module+"/control" {
			drivers++
			// Other programs drive the browser through an agent.Driver, so
			// that the approver, secrets and trace apply to every call.
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, "github.com/chromedp/cdproto") || imp == module+"/cdp" || strings.HasPrefix(imp, module+"/watchdogs") {
					t.Errorf("%s imports %s: it drives the browser through agent.Driver only", p.ImportPath, imp)
				}
			}
		}
		if p.ImportPath == module+"/agent" || strings.HasPrefix(p.ImportPath, module+"/agent/") {
			agentPkgs++
			// Deps: not even through another package may the agent reach CDP.
			for _, dep := range concat(p.Imports, p.Deps) {
				if strings.HasPrefix(dep, "github.com/chromedp/cdproto") || dep == module+"/cdp" {
					t.Errorf("%s depends on %s: the agent acts through events only", p.ImportPath, dep)
					break
				}
			}
		}
	}
	if watchdogs < 10 || agentPkgs < 2 || drivers != 2 {
		t.Fatalf("found %d watchdog packages, %d agent packages and %d driver packages: the test checks nothing", watchdogs, agentPkgs, drivers)
	}
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
