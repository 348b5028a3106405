package handlers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules: the handler contract is a leaf (issue 27.1). Package
// handlers, which every operation handler and third-party kind imports,
// links none of the store, the sandbox service or the model gateway: it
// declares the ports a handler may ask for (Journal, Runs, Sandbox,
// Services) and the server wires the services in. No handler package
// links the store, the sandbox service or a YAML parser; only the
// external handler, the gateway's own operation handler, links the
// gateway.
func TestImportRules(t *testing.T) {
	deps := listDeps(t, "./handlers/...")
	for pkg, ds := range deps {
		rel := strings.TrimPrefix(pkg, module)
		for _, dep := range ds {
			top := topOf(dep)
			switch {
			case strings.Contains(dep, "go.etcd.io/bbolt"):
				t.Errorf("%s links %s", rel, dep)
			case strings.Contains(dep, "goccy/go-yaml"):
				t.Errorf("%s links %s: settings files are read (YAML converted) by configs/configfile, not by what handlers name", rel, dep)
			case top == "state" || top == "sandbox":
				t.Errorf("%s links %s", rel, dep)
			case top == "gateway" && rel != "handlers/external":
				t.Errorf("%s links %s: only handlers/external, which drives the gateway's sessions, may", rel, dep)
			}
		}
	}
	if len(deps) < 10 {
		t.Fatalf("go list found %d handler packages: %v", len(deps), deps)
	}
}

// TestSandboxLinksNoHandler: the sandbox's backends run commands and
// cells on the persistent shell and interpreter (internal/shell,
// internal/pyinterp), which the bash and python operations use too; no
// sandbox package links the handler contract or an operation handler,
// the one import that ran back up the layers (issue 27.1).
func TestSandboxLinksNoHandler(t *testing.T) {
	deps := listDeps(t, "./sandbox/...")
	for pkg, ds := range deps {
		for _, dep := range ds {
			if topOf(dep) == "handlers" {
				t.Errorf("%s links %s", strings.TrimPrefix(pkg, module), dep)
			}
		}
	}
	if _, ok := deps[module+"sandbox/code"]; !ok {
		t.Fatalf("go list found no sandbox/code among %d packages", len(deps))
	}
}

const module = "github.com/flockrun/flock/"

// topOf names the top-level package of flock's that dep is in ("" for
// a package of another module or the standard library).
func topOf(dep string) string {
	rel, ours := strings.CutPrefix(dep, module)
	if !ours {
		return ""
	}
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// listDeps answers the packages matching pattern, each with every package
// it links (go list -deps, without tests).
func listDeps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, pattern)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	return deps
}
