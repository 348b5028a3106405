package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/testkit"
)

var (
	runIDPattern   = regexp.MustCompile(`\b0[0-9a-z]{15}\b`)
	secondsPattern = regexp.MustCompile(`\d+\.\d+s\b`)
)

// normalized is a command's output with what differs between two runs of
// it replaced: run ids, the data directory, durations.
func normalized(out, data string) string {
	out = strings.ReplaceAll(out, data, "DATA")
	out = runIDPattern.ReplaceAllString(out, "RUN")
	return secondsPattern.ReplaceAllString(out, "Ns")
}

// serverFileOf reads the server file of a data directory.
func serverFileOf(t testing.TB, data string) (url, token string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(data, "server.json")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("server file: %v", err)
	}
	var f struct{ URL, Token string }
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("server file %s: %v", b, err)
	}
	return f.URL, f.Token, fi.Mode().Perm()
}

// reactSettings is a react agent on a scripted model whose script lies
// beside the settings file: a file the run must be allowed to read.
func reactSettings(t testing.TB) (settings string) {
	dir := testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"script.jsonl": `{"tool_calls":[{"id":"c1","name":"bash","arguments":"{\"command\":\"echo handed over; exit 0\"}"}]}` + "\n" +
			`{"tool_calls":[{"id":"c2","name":"submit","arguments":"{\"answer\":\"done\"}"}]}` + "\n",
		"react.json": `{"workflow_type": "react", "model": "m", "tools": ["bash", "submit"],
			"models": {"m": {"provider": "scripted", "script": "script.jsonl"}}}`,
	})
	return filepath.Join(dir, "react.json")
}

// TestRunHandedToServer: while `flock serve` holds a data directory,
// `flock run` on it hands its run to that server and prints exactly what
// it prints alone (the transcript, the result line, the exit code); the
// file its settings name (a scripted model's script, outside the server's
// read roots) is readable by that run only, a plain HTTP client cannot
// grant it, and the run is the server's (its API and viewer list it).
func TestRunHandedToServer(t *testing.T) {
	settings := reactSettings(t)
	task := "Say something, then submit."
	alone := t.TempDir()
	code0, out0, err0 := flock(t, "run", "--settings", settings, "--task", task, "--data", alone)
	if code0 != 0 {
		t.Fatalf("alone: exit %d\n%s\n%s", code0, out0, err0)
	}

	data := t.TempDir()
	p := startServer(t, data, freePort(t))
	url, token, mode := serverFileOf(t, data)
	if mode != 0o600 || url != p.base || len(token) < 32 {
		t.Fatalf("server file: url %s (server %s), mode %v, token of %d bytes", url, p.base, mode, len(token))
	}
	code1, out1, err1 := flock(t, "run", "--settings", settings, "--task", task, "--data", data)
	if code1 != 0 {
		t.Fatalf("handed over: exit %d\n%s\n%s\nserver:\n%s", code1, out1, err1, p.out)
	}
	if a, b := normalized(out0, alone), normalized(out1, data); a != b {
		t.Fatalf("the handed-over run prints\n%s\nwhere alone it prints\n%s", b, a)
	}
	if !strings.Contains(out1, "[submission] done") || !strings.Contains(err1, "flock run: the flock server at "+p.base) {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out1, err1)
	}
	id := runIDPattern.FindString(out1)
	if h := p.run(id); h.Status != "succeeded" || h.Workflow != "react" {
		t.Fatalf("the server's run %s: %+v", id, h)
	}

	// A failing run exits 1, as alone.
	failing := filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"fail.json": `{"workflow_type": "script", "commands": ["echo one", "exit 3", "echo never"]}`}), "fail.json")
	code, out, errs := flock(t, "run", "--settings", failing, "--data", data)
	if code != 1 || !strings.Contains(out, "failed (command_failed: exit 3)") || !strings.Contains(out, "$ exit 3  → exit 3") {
		t.Fatalf("failing run: exit %d\n%s\n%s", code, out, errs)
	}

	// Only the operator token of the server file opens the operator routes,
	// and plain clients get no grants: the same settings sent over HTTP
	// are refused, since the script lies outside the server's read roots.
	raw, _ := os.ReadFile(settings)
	for _, tok := range []string{"", "not-the-operator-token-0123456789"} {
		c, _ := client.New(p.base, client.WithToken(tok))
		if _, err := c.Operator(context.Background()); !isStatus(err, http.StatusUnauthorized) {
			t.Fatalf("GET /operator with token %q: %v", tok, err)
		}
		_, err := c.Handover(context.Background(), api.Handover{Settings: raw, ReadRoots: []string{filepath.Dir(settings)}})
		if !isStatus(err, http.StatusUnauthorized) {
			t.Fatalf("POST /operator/runs with token %q: %v", tok, err)
		}
	}
	abs := strings.Replace(string(raw), `"script.jsonl"`, fmt.Sprintf("%q", filepath.Join(filepath.Dir(settings), "script.jsonl")), 1)
	if _, err := p.c.Start(context.Background(), api.StartRequest{Settings: json.RawMessage(abs)}); !isStatus(err, http.StatusBadRequest) ||
		!strings.Contains(err.Error(), "read_roots") {
		t.Fatalf("a plain start reading the operator's file: %v", err)
	}
	keyName := `{"workflow_type": "react", "model": "m", "models": {"m": {"api_key_env": "FLOCK_KEY_0123456789abcdef0123456789abcdef"}}}`
	if _, err := p.c.Start(context.Background(), api.StartRequest{Settings: json.RawMessage(keyName)}); !isStatus(err, http.StatusBadRequest) ||
		!strings.Contains(err.Error(), "FLOCK_KEY_") {
		t.Fatalf("a plain start naming a command-line key: %v", err)
	}
	// The server removes its file when it shuts down.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	if _, err := os.Stat(filepath.Join(data, "server.json")); !os.IsNotExist(err) {
		t.Fatalf("server file after shutdown: %v", err)
	}
}

// TestHandoverRefusalNamesServer: a run the server refuses at the
// hand-over is refused by that server, and the command says so; a key
// variable set in the command's shell but not in the server's environment
// is named as the server's to set (it read "environment variable X is
// not set" while X was set where the person typed the command).
func TestHandoverRefusalNamesServer(t *testing.T) {
	const env = "FLOCK_E2E_KEY_HERE_ONLY"
	t.Setenv(env, "")
	data := t.TempDir()
	p := startServer(t, data, freePort(t))
	settings := filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"react.json": `{"workflow_type": "react", "model": "m", "tools": ["bash", "submit"],
			"models": {"m": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "` + env + `"}}}`,
	}), "react.json")
	// Set for the command only: the server started without it.
	t.Setenv(env, "sk-e2e-here-only-5d1c")
	code, out, errs := flock(t, "run", "--settings", settings, "--task", "t", "--data", data)
	want := []string{
		"flock run: the flock server at " + p.base,
		"that holds " + data + " refused the run: ",
		`model "m": environment variable ` + env + " is not set",
		env + " is set here, but the server reads its own environment",
	}
	for _, w := range want {
		if code != 1 || !strings.Contains(errs, w) {
			t.Fatalf("exit %d, want 1 with %q in stderr:\n%s%s", code, w, out, errs)
		}
	}
	if strings.Contains(out+errs, "sk-e2e-here-only") {
		t.Fatalf("the key was printed:\n%s%s", out, errs)
	}
}

// isStatus reports whether err is the server's answer with status code.
func isStatus(err error, code int) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Status == code
}

// TestHandoverInterruptAndResume: Ctrl-C of a `flock run` whose run a
// server drives pauses the run there and says how to resume it; while it
// ran, the server listed it as running (the viewer shows it); `flock run
// --resume` then finishes it through the server.
func TestHandoverInterruptAndResume(t *testing.T) {
	data, gate := t.TempDir(), t.TempDir()
	p := startServer(t, data, freePort(t))
	settings := filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"slow.json": fmt.Sprintf(`{"workflow_type": "script", "commands": ["echo one", "touch %s/started; while [ ! -e %s/release ]; do sleep 0.05; done", "echo three"]}`, gate, gate)}),
		"slow.json")
	cmd := exec.Command(binary, "run", "--settings", settings, "--data", data)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	testkit.WaitWithin(t, 30*time.Second, "the second command to start", func() bool {
		_, err := os.Stat(filepath.Join(gate, "started"))
		return err == nil
	})
	runs, err := p.c.Runs(context.Background(), client.RunsQuery{Status: "running", Workflow: "script"})
	if err != nil || len(runs.Runs) != 1 {
		t.Fatalf("the server lists %+v (%v), want the running run", runs.Runs, err)
	}
	id := runs.Runs[0].ID
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("interrupted: %v\n%s\n%s", err, out.String(), errb.String())
	}
	want := fmt.Sprintf("run %s is paused in the flock server at %s and stays resumable: flock run --resume %s --data %s", id, p.base, id, data)
	if !strings.Contains(errb.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, errb.String())
	}
	if h := p.run(id); h.Status != "paused" {
		t.Fatalf("after Ctrl-C the run is %s", h.Status)
	}
	testkit.WriteFiles(t, gate, map[string]string{"release": ""})
	code, stdout, errs := flock(t, "run", "--resume", id, "--data", data)
	if code != 0 || !strings.Contains(stdout, "run "+id+" succeeded") || !strings.Contains(stdout, "$ echo three  → exit 0  three") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errs)
	}
}

// TestStaleServerFile: a server file left by a server killed with kill -9,
// or one whose address now belongs to another server, is not followed:
// `flock run` opens the data directory itself, runs, and removes the file.
func TestStaleServerFile(t *testing.T) {
	data := t.TempDir()
	p := startServer(t, data, freePort(t))
	p.kill()
	other := startServer(t, t.TempDir(), freePort(t))
	for name, url := range map[string]string{"dead": p.base, "another server's": other.base} {
		t.Run(name, func(t *testing.T) {
			testkit.WriteFiles(t, data, map[string]string{"server.json": fmt.Sprintf(`{"url": %q, "token": "0123456789abcdef0123456789abcdef", "pid": 1}`, url)})
			code, out, errs := flock(t, "run", "--workflow", "script", "--settings", "../configs/examples/script.json", "--data", data)
			if code != 0 || !strings.Contains(out, "succeeded (completed)") || strings.Contains(errs, "flock server at") {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			if _, err := os.Stat(filepath.Join(data, "server.json")); !os.IsNotExist(err) {
				t.Fatalf("the stale server file is still there: %v", err)
			}
		})
	}
}

// TestRolloutHandedToServer: `flock rollout` on a data directory a server
// holds hands the rollout over with its files: the benchmark and the
// script it names are read, and its output directory written, by that run
// on the server, and it prints the same summary as alone.
func TestRolloutHandedToServer(t *testing.T) {
	dir := testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"bench.jsonl":  `{"id": "a", "question": "What is 2+2?", "answer": "4"}` + "\n" + `{"id": "b", "question": "What is 3+3?", "answer": "6"}` + "\n",
		"script.jsonl": `{"match": "2+2", "content": "Final answer: 4"}` + "\n" + `{"match": "3+3", "content": "Final answer: 7"}` + "\n",
		"rollout.yaml": "data_path: bench.jsonl\nbenchmark_name: hand\nnum_chains: 1\nmax_concurrency: 2\nevaluation_metric: exact_match\n" +
			"models:\n  m: {provider: scripted, script: script.jsonl}\nagent:\n  workflow: react\n  settings: {model: m, max_turns: 2}\n",
	})
	cfg := filepath.Join(dir, "rollout.yaml")
	alone := t.TempDir()
	code0, out0, err0 := flock(t, "rollout", "--config", cfg, "--data", alone, "--output-dir", filepath.Join(dir, "out-alone"))
	if code0 != 0 {
		t.Fatalf("alone: exit %d\n%s\n%s", code0, out0, err0)
	}
	data := t.TempDir()
	p := startServer(t, data, freePort(t))
	code1, out1, err1 := flock(t, "rollout", "--config", cfg, "--data", data, "--output-dir", filepath.Join(dir, "out-server"))
	if code1 != 0 {
		t.Fatalf("handed over: exit %d\n%s\n%s\nserver:\n%s", code1, out1, err1, p.out)
	}
	summary := func(out, data string) string {
		out = normalized(out, data)
		out = regexp.MustCompile(`out-(alone|server)`).ReplaceAllString(out, "OUT")
		out = regexp.MustCompile(`\d{8}_\d{6}`).ReplaceAllString(out, "TS")
		out = regexp.MustCompile(`(?m)^time .*$`).ReplaceAllString(out, "time")
		// How many progress lines print depends on how the samples'
		// ends fall in time; the last one, with every sample, does not.
		progress := regexp.MustCompile(`^\d+/\d+ samples · `)
		lines := strings.Split(out, "\n")
		last := -1
		for i, l := range lines {
			if progress.MatchString(l) {
				last = i
			}
		}
		kept := lines[:0]
		for i, l := range lines {
			if i == last || !progress.MatchString(l) {
				kept = append(kept, l)
			}
		}
		return strings.Join(kept, "\n")
	}
	if a, b := summary(out0, alone), summary(out1, data); a != b {
		t.Fatalf("the handed-over rollout prints\n%s\nwhere alone it prints\n%s", b, a)
	}
	if !strings.Contains(out1, "correct       1 of 2 graded") {
		t.Fatalf("summary:\n%s", out1)
	}
	for _, out := range []string{"out-alone", "out-server"} {
		if m, _ := filepath.Glob(filepath.Join(dir, out, "results_hand_*.jsonl")); len(m) != 1 || testkit.CountLines(t, m[0]) != 2 {
			t.Fatalf("%s: results files %v", out, m)
		}
	}
}

// TestSynthesizeHandedToServer: `flock synthesize` on a data directory a
// server holds hands the synthesis over; without sandbox_server_url it runs
// on the server's sandbox service, says so, and writes the same summary and
// output files as alone; a server that hosts no sandbox is refused with
// the ways out.
func TestSynthesizeHandedToServer(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"sandbox.json": fmt.Sprintf(`{"apis": {"text2sql": {"databases": {"concert": %q}}, "rag": {"documents_dir": %q}}}`,
			filepath.Join(root, "configs/sandbox/data/concert.sqlite"), filepath.Join(root, "configs/sandbox/docs")),
		"synthesis.yaml": "seeds: [\"The concert database: its stadiums, concerts and singers.\"]\noutput_dir: out\nsandbox_config_path: sandbox.json\n" +
			"available_tools: [\"text2sql:*\", \"rag:search\"]\nmodel_name: simulated\nmax_depth: 4\nmin_depth: 3\nmax_selected_traj: 2\n",
	})
	cfg := filepath.Join(dir, "synthesis.yaml")
	synth := func(data, out string) (int, string, string) {
		return flock(t, "synthesize", "--config", cfg, "--mode", "simulated", "--quiet", "--data", data, "--output-dir", filepath.Join(dir, out))
	}
	alone := t.TempDir()
	code0, out0, err0 := synth(alone, "out-alone")
	if code0 != 0 {
		t.Fatalf("alone: exit %d\n%s\n%s", code0, out0, err0)
	}
	data := t.TempDir()
	p := startServer(t, data, freePort(t), "--mode", "simulated", "--sandbox-config", filepath.Join(dir, "sandbox.json"))
	code1, out1, err1 := synth(data, "out-server")
	if code1 != 0 || !strings.Contains(err1, "the synthesis uses the sandbox service of the flock server at "+p.base) {
		t.Fatalf("handed over: exit %d\n%s\n%s\nserver:\n%s", code1, out1, err1, p.out)
	}
	summary := func(out, data string) string {
		return regexp.MustCompile(`out-(alone|server)`).ReplaceAllString(normalized(out, data), "OUT")
	}
	if a, b := summary(out0, alone), summary(out1, data); a != b || !strings.Contains(a, "1 done") {
		t.Fatalf("the handed-over synthesis prints\n%s\nwhere alone it prints\n%s", b, a)
	}
	for _, out := range []string{"out-alone", "out-server"} {
		if n := testkit.CountLines(t, filepath.Join(dir, out, "trees.jsonl")); n != 1 {
			t.Fatalf("%s/trees.jsonl: %d lines", out, n)
		}
	}
	bare := t.TempDir()
	startServer(t, bare, freePort(t), "--mode", "simulated")
	code, out, errs := synth(bare, "out-bare")
	if code != 1 || !strings.Contains(errs, "hosts no sandbox, which this synthesis needs") || !strings.Contains(errs, "--sandbox-config") {
		t.Fatalf("a server with no sandbox: exit %d\n%s\n%s", code, out, errs)
	}
}
