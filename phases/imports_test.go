package phases_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules: phase packages stay pure and small to build as plugins
// (DESIGN.md §2): no package under phases/ links the store, the engine,
// the handlers, the sandbox, the gateway, the server or echo; and
// phases/settings, the settings decoder that phase packages and the
// sandbox backends use, links nothing but the standard library and
// internal/editdist.
func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	const module = "github.com/flockrun/flock/"
	forbidden := []string{"app", "cli", "cluster", "configs", "gateway", "handlers", "sandbox", "server", "state", "workflows"}
	pkgs, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(pkgs)) {
		deps, err := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(deps)) {
			rel, ours := strings.CutPrefix(dep, module)
			top, _, _ := strings.Cut(rel, "/")
			switch {
			case pkg == module+"phases/settings" && dep != pkg && rel != "internal/editdist":
				t.Errorf("phases/settings links %s: it may link only the standard library and internal/editdist", dep)
			case !ours && (strings.Contains(dep, "labstack/echo") || strings.Contains(dep, "bbolt")):
				t.Errorf("%s links %s", pkg, dep)
			case ours && contains(forbidden, top):
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
