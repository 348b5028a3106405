package state_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestContractLinksNoStore: package state is the Store contract and the
// op codec (issue 27.1); the bbolt store is state/bolt, as the JetStream
// store is state/jetstream, so that naming the contract links neither.
func TestContractLinksNoStore(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case strings.Contains(dep, "bbolt"), strings.Contains(dep, "nats"),
			strings.HasPrefix(dep, "github.com/flockrun/flock/state/"):
			t.Errorf("state links %s", dep)
		}
	}
}
