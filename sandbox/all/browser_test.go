package all_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

// haveChromium looks for chromium as the browser backend does, without
// importing it (which would link it whatever sandbox/all does).
func haveChromium() error {
	for _, p := range []string{os.Getenv("FLOCK_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return nil
		}
	}
	return errors.New("no chromium (apt-get install chromium)")
}

// TestBrowserConfigExample is issue 23.7: the README's browser config
// (configs/sandbox/browser.json, resources.browser) was refused as an
// unknown backend because sandbox/all did not link the browser package.
// Through sandbox/all alone, the config parses; with chromium installed
// the service starts, lists the browser tools and a session loads a page.
func TestBrowserConfigExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "sandbox", "browser.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sandbox.ParseConfig(raw, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the README's browser config: %v", err)
	}
	if err := haveChromium(); err != nil {
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			t.Fatalf("chromium, which scripts/test.sh installs, is missing: %v", err)
		}
		t.Skipf("the rest needs chromium: %v", err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	var names []string
	for _, tl := range svc.Tools(false) {
		names = append(names, tl.FullName)
	}
	if !strings.Contains(strings.Join(names, " "), "browser:navigate") {
		t.Fatalf("tools %v", names)
	}
	c := sandbox.Caller{Worker: "w"}
	if env := svc.CreateSession(context.Background(), c, "browser", nil, ""); env.Code != 0 {
		t.Fatalf("create: %+v", env)
	}
	env := svc.Execute(context.Background(), c, sandbox.Action{Action: "browser:navigate", Params: map[string]any{"url": "about:blank"}})
	if env.Code != 0 {
		t.Fatalf("navigate: %d %s", env.Code, env.Message)
	}
}
