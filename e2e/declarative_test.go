package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDeclarativeWorkflows serves the shipped workflow files and runs them
// over HTTP with real shells and the simulated model.
func TestDeclarativeWorkflows(t *testing.T) {
	dir, err := filepath.Abs("../configs/workflows")
	if err != nil {
		t.Fatal(err)
	}
	p := startServer(t, t.TempDir(), freePort(t), "--workflows", dir)
	listed := listWorkflows(t, p)
	for _, name := range []string{"retry-until-green", "bash-agent", "parallel-commands"} {
		g, ok := listed[name]
		if !ok || g.Source != "file:"+filepath.Join(dir, name+".yaml") {
			t.Fatalf("GET /workflows %s = %+v (found %v)", name, g, ok)
		}
	}
	if got := listed["retry-until-green"].Transitions["check"]; strings.Join(got, ",") != "ask,fix" {
		t.Fatalf("retry-until-green check -> %v", got)
	}

	tests := []struct {
		name     string
		body     map[string]any
		status   string
		reason   string
		result   string
		contains string
	}{
		{name: "retry until green",
			body: map[string]any{"workflow": "retry-until-green", "settings": map[string]any{
				"test_command": "test -f fixed && echo PASS", "fix_command": "touch fixed", "max_attempts": 3}},
			status: "succeeded", reason: "tests_pass", result: `{"attempts":2,"exit_code":0,"passed":true}`},
		{name: "parallel commands",
			body: map[string]any{"workflow": "parallel-commands", "settings": map[string]any{
				"commands": []string{"echo one", "echo two; exit 5", "pwd"}}},
			status: "failed", reason: "1 of 3 commands failed", result: `{"commands":3,"exit_codes":[0,5,0],"failed":1}`},
		{name: "bash agent",
			body:   map[string]any{"workflow": "bash-agent", "task": "create hello.txt containing hi and submit its word count"},
			status: "succeeded", reason: "submitted", result: `"1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var started struct {
				RunID string `json:"run_id"`
			}
			if code := p.do("POST", "/start_workflow", tt.body, &started); code != 201 {
				t.Fatalf("start: %d", code)
			}
			h := waitEnded(t, p, started.RunID, 60*time.Second)
			if string(h.Status) != tt.status || h.EndReason != tt.reason || compactJSON(t, h.Result) != tt.result {
				t.Fatalf("run ended %s %q result %s error %q; want %s %q %s", h.Status, h.EndReason, h.Result, h.Error,
					tt.status, tt.reason, tt.result)
			}
		})
	}

	// A missing required setting is refused at start.
	var bad struct {
		Error string `json:"error"`
	}
	if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "retry-until-green", "settings": map[string]any{}}, &bad); code != 400 ||
		!strings.Contains(bad.Error, "test_command") {
		t.Fatalf("missing setting: %d %+v", code, bad)
	}
}

// TestDeclarativeBadFileFailsStartup checks that a broken workflow file
// stops the server at start-up with the file, line and expression error.
func TestDeclarativeBadFileFailsStartup(t *testing.T) {
	dir := t.TempDir()
	src := "name: broken\nphases:\n  - name: a\n    transitions:\n      - if: vars.n >>> 1\n        next: a\n"
	path := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := startFails(t, "--workflows", dir)
	if !strings.Contains(out, path+":5:") || !strings.Contains(out, `expression "vars.n >>> 1"`) {
		t.Fatalf("start-up error does not name file, line and expression:\n%s", out)
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
