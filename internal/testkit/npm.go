package testkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append([]string{"install"}, packages...)
	args = append(args, "--no-audit", "--no-fund", "--silent", "--prefix", dir)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm install %s: %v\n%s", strings.Join(packages, " "), err, out)
	}
	return node, filepath.Join(dir, "node_modules")
}
