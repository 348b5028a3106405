package testkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/procgroup"
)

// npmTimeout bounds one npm install; NPMInstall shortens it to a quarter
// of what is left before the test binary's -timeout, so that a stalled
// registry fails the test with npm's output instead of the binary
// panicking with every goroutine's stack.
const npmTimeout = 4 * time.Minute

// NPMInstall installs npm packages (the real clients some tests drive:
// the OpenAI SDK for Node, the OpenAI Agents SDK) into a temporary
// directory and returns the node binary and that directory's
// node_modules, for NODE_PATH. Without node or npm it skips, or fails
// under scripts/test.sh (FLOCK_TEST_SCRIPT or FLOCK_TEST_REQUIRE_BINARIES
// set), which installs both.
func NPMInstall(tb testing.TB, packages ...string) (node, modules string) {
	tb.Helper()
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		if os.Getenv("FLOCK_TEST_SCRIPT") != "" || os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			tb.Fatal("node and npm are required for the tests of real Node clients (scripts/test.sh installs nodejs and npm)")
		}
		tb.Skip("node or npm not found: the tests of real Node clients need both (apt-get install nodejs npm)")
	}
	dir := tb.TempDir()
	limit := npmTimeout
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := t.Deadline(); ok {
			limit = min(limit, time.Until(d)/4)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if out, err := npmInstall(ctx, npm, dir, packages); err != nil {
		tb.Fatalf("npm install %s: %v\n%s", strings.Join(packages, " "), err, out)
	}
	return node, filepath.Join(dir, "node_modules")
}

// npmInstall runs npm install into dir and returns its combined output.
// It runs under procgroup.Run: a child npm started (a lifecycle script, a
// git fetch) that outlives it and keeps the output pipe open cannot hold
// the test forever.
func npmInstall(ctx context.Context, npm, dir string, packages []string) ([]byte, error) {
	args := append([]string{"install"}, packages...)
	args = append(args, "--no-audit", "--no-fund", "--silent", "--prefix", dir)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := procgroup.Run(cmd, 5*time.Second)
	if err != nil && ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("did not finish in time (registry or network stalled?): %w: %v", context.Cause(ctx), err)
	}
	if err != nil && errors.Is(err, exec.ErrWaitDelay) {
		return out.Bytes(), fmt.Errorf("a process npm started kept its output open after npm exited: %w", err)
	}
	return out.Bytes(), err
}
