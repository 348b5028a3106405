package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/state"
)

// httpApp opens an App on a real bbolt file and serves its API over real
// HTTP. The operator's read root contains the data directory, as the CLI's
// current directory contains ./flock-data.
func httpApp(t *testing.T) (a *App, base, dir string) {
	t.Helper()
	dir = t.TempDir()
	cfg := configs.Server{DataDir: filepath.Join(dir, "flock-data"), Mode: "simulated", ReadRoots: []string{dir}}
	a = openWith(t, cfg)
	srv, err := server.New(a.Config, a.Executor, a.Executor.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return a, ts.URL, dir
}

// start posts a start request and returns the status code and the body.
func start(t *testing.T, base string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(base+"/start_workflow", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestHTTPRunCannotReadOutsideWorkDir starts react runs over HTTP whose
// system_prompt_file names /etc/passwd, the database, another run's file
// and a symlink out of the work dir, and a scripted model whose script is
// /etc/passwd: every one is refused with an error naming the path and
// read_roots, and no file content reaches the op journal.
func TestHTTPRunCannotReadOutsideWorkDir(t *testing.T) {
	a, base, dir := httpApp(t)
	ctx := context.Background()
	// A first run leaves a secret in its work directory.
	code, body := start(t, base, map[string]any{"workflow": "react", "task": "t",
		"settings": map[string]any{"model": "simulated", "system_prompt": "s", "max_turns": 1}})
	if code != http.StatusCreated {
		t.Fatalf("start: %d %v", code, body)
	}
	first := body["run_id"].(string)
	if _, err := a.Executor.Wait(ctx, first); err != nil {
		t.Fatal(err)
	}
	h, _ := a.Store.Run(ctx, first)
	theirs := filepath.Join(h.WorkDir, "secret.txt")
	if err := os.WriteFile(theirs, []byte("OTHER-RUN-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := a.Config.DBPath()
	dbAbs, _ := filepath.Abs(db)
	tests := []struct{ name, path, why string }{
		{"/etc/passwd", "/etc/passwd", "read_roots"},
		{"the database", dbAbs, "data directory"},
		{"the database, relative", "../../flock.db", "data directory"},
		{"another run's file", theirs, "data directory"},
		{"outside every root", outside, "read_roots"},
		{"dot-dot", "../../../../../../../../etc/passwd", "read_roots"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := start(t, base, map[string]any{"workflow": "react", "task": "t",
				"settings": map[string]any{"model": "simulated", "system_prompt_file": tt.path, "max_turns": 1}})
			if code != http.StatusCreated {
				t.Fatalf("start: %d %v", code, body)
			}
			id := body["run_id"].(string)
			end, err := a.Executor.Wait(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if end.Status != state.StatusFailed || !strings.Contains(end.Error, "system_prompt_file: read_file: /") || !strings.Contains(end.Error, tt.why) {
				t.Fatalf("run %s: %s %q, want failed naming the path and %s", id, end.Status, end.Error, tt.why)
			}
			ops, err := a.Store.Ops(ctx, id, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			journal, _ := json.Marshal(ops)
			for _, secret := range []string{"root:", "OTHER-RUN-SECRET", "OUTSIDE-SECRET"} {
				if strings.Contains(string(journal), secret) {
					t.Fatalf("the op journal holds %q: %s", secret, journal)
				}
			}
			for _, op := range ops {
				if op.Result != nil && operations.ReadFile.Result(*op.Result) != nil && operations.ReadFile.Result(*op.Result).Content != "" {
					t.Fatalf("op %s read %d bytes", op.ID, operations.ReadFile.Result(*op.Result).Bytes)
				}
			}
		})
	}
	// A scripted model's script is opened in the server process: refused at start.
	for _, script := range []string{"/etc/passwd", dbAbs} {
		code, body = start(t, base, map[string]any{"workflow": "react", "task": "t",
			"settings": map[string]any{"model": "m", "models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}}}})
		msg, _ := json.Marshal(body)
		if code != http.StatusBadRequest || !strings.Contains(string(msg), script) || strings.Contains(string(msg), "root:") {
			t.Fatalf("scripted %s: %d %s, want 400 naming the path", script, code, msg)
		}
	}
	// A file beneath the read root (outside the data dir) is readable.
	prompt := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(prompt, []byte("You are terse."), 0o644); err != nil {
		t.Fatal(err)
	}
	code, body = start(t, base, map[string]any{"workflow": "react", "task": "t",
		"settings": map[string]any{"model": "simulated", "system_prompt_file": prompt, "max_turns": 1}})
	if code != http.StatusCreated {
		t.Fatalf("start: %d %v", code, body)
	}
	end, err := a.Executor.Wait(ctx, body["run_id"].(string))
	if err != nil || strings.Contains(end.Error, "system_prompt_file") {
		t.Fatalf("read root prompt: %v %s %q", err, end.Status, end.Error)
	}
}
