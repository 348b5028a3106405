package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/plugin"
)

// graph is the part of GET /workflows the tests look at.
type graph struct {
	Name        string              `json:"name"`
	Source      string              `json:"source"`
	Start       string              `json:"start"`
	Transitions map[string][]string `json:"transitions"`
}

func listWorkflows(t *testing.T, p *proc) map[string]graph {
	t.Helper()
	var out struct {
		Workflows []graph `json:"workflows"`
	}
	if code := p.do("GET", "/workflows", nil, &out); code != 200 {
		t.Fatalf("GET /workflows: %d", code)
	}
	m := map[string]graph{}
	for _, g := range out.Workflows {
		m[g.Name] = g
	}
	return m
}

// requirePlugins skips the test when this toolchain cannot build plugins.
func requirePlugins(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("Go plugins are not supported on %s", runtime.GOOS)
	}
	out, err := exec.Command("go", "env", "CGO_ENABLED").Output()
	if err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Skip("Go plugins need cgo (CGO_ENABLED=1 and a C compiler); skipping")
	}
	if !plugin.Supported {
		t.Skip("this test binary was built without plugin support")
	}
}

// buildPlugin builds the main package pkg as a plugin into out. It uses
// the same `go` and the same environment (GOFLAGS, CGO_ENABLED) as
// TestMain's build of the flock binary: a plugin loads only into a host
// built with the same toolchain, flags and module versions.
func buildPlugin(t *testing.T, pkg, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-buildmode=plugin", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build plugin %s: %v\n%s", pkg, err, b)
	}
}

// startFails runs `flock serve` with extra flags, expects it to exit
// with an error within a minute, and returns its output.
func startFails(t *testing.T, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"serve", "--addr", freePort(t), "--data", t.TempDir()}, extra...)
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("flock did not exit:\n%s", out)
	}
	if err == nil {
		t.Fatalf("flock started without error:\n%s", out)
	}
	return string(out)
}

func TestPluginFanout(t *testing.T) {
	requirePlugins(t)
	plugins := t.TempDir()
	so := filepath.Join(plugins, "fanout.so")
	buildPlugin(t, "github.com/flockrun/flock/examples/plugins/fanout/plugin", so)

	files := t.TempDir()
	want := 0
	for i := 1; i <= 5; i++ {
		lines := strings.Repeat("x\n", i*3)
		want += i * 3
		if err := os.WriteFile(filepath.Join(files, fmt.Sprintf("f%d.txt", i)), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	p := startServer(t, t.TempDir(), freePort(t), "--plugins", plugins)
	g, ok := listWorkflows(t, p)["fanout"]
	if !ok || g.Source != "plugin:"+so || g.Start != "list" {
		t.Fatalf("GET /workflows fanout = %+v (found %v)", g, ok)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	code := p.do("POST", "/start_workflow", map[string]any{"workflow": "fanout", "settings": map[string]any{
		"items_command": "ls -1 " + files + "/*.txt",
		"command":       `wc -l < "$ITEM"`,
		"parallel":      3,
		"reduce":        "sum",
	}}, &started)
	if code != 201 {
		t.Fatalf("start: %d", code)
	}
	h := waitEnded(t, p, started.RunID, 60*time.Second)
	var res struct {
		Items     int     `json:"items"`
		Succeeded int     `json:"succeeded"`
		Sum       float64 `json:"sum"`
	}
	if err := json.Unmarshal(h.Result, &res); err != nil || h.Status != "succeeded" {
		t.Fatalf("run ended %+v (%v)\n%s", h, err, p.out.String())
	}
	if res.Items != 5 || res.Succeeded != 5 || int(res.Sum) != want {
		t.Fatalf("result = %s, want 5 items summing to %d", h.Result, want)
	}

	// Bad settings are refused at start by the plugin's CheckSettings.
	var bad struct {
		Error string `json:"error"`
	}
	if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "fanout", "settings": map[string]any{"items": []string{"a"}}}, &bad); code != 400 || !strings.Contains(bad.Error, "command") {
		t.Fatalf("bad settings: %d %+v", code, bad)
	}
}

// TestPluginWrongAPIVersion builds a plugin that declares another
// APIVersion and checks that start-up fails naming the file, both
// versions and the rebuild hint.
func TestPluginWrongAPIVersion(t *testing.T) {
	requirePlugins(t)
	// The plugin's source must live inside the module so that it builds
	// against the same module versions as the host.
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.MkdirTemp("testdata", "badplugin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.RemoveAll(src)
		os.Remove("testdata") // only if empty
	})
	const code = `package main

import "github.com/flockrun/flock/phases"

var APIVersion = "flock.phases/v0"

func Register(r *phases.Registry) error { return nil }

func main() {}
`
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	so := filepath.Join(plugins, "old.so")
	buildPlugin(t, "./"+filepath.ToSlash(src), so)

	out := startFails(t, "--plugins", plugins)
	for _, want := range []string{so, "plugin API version mismatch", `"flock.phases/v0"`, `"` + phases.APIVersion + `"`,
		"go build -buildmode=plugin", "go version -m"} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up error lacks %q:\n%s", want, out)
		}
	}
}

// TestPluginNotAPlugin checks the plugin.Open failure path: the error
// names the file, keeps the loader's message and gives the rebuild hint.
func TestPluginNotAPlugin(t *testing.T) {
	requirePlugins(t)
	plugins := t.TempDir()
	so := filepath.Join(plugins, "broken.so")
	if err := os.WriteFile(so, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := startFails(t, "--plugins", plugins)
	for _, want := range []string{"load plugin " + so, "cannot open plugin", "go version -m"} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up error lacks %q:\n%s", want, out)
		}
	}
}
