package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/testkit"
)

// keyModel is an OpenAI-compatible endpoint for a react agent: it answers
// "What is A?" with "Final answer: <A>", only to requests bearing key, and,
// until release is closed, holds every call open.
type keyModel struct {
	key     string
	release chan struct{}

	mu       sync.Mutex
	answered int
	held     int
	badKey   int
}

var whatIs = regexp.MustCompile(`What is ([0-9+*-]+)\?`)

func (m *keyModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("Authorization") != "Bearer "+m.key {
		m.mu.Lock()
		m.badKey++
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error": {"message": "invalid api key", "type": "invalid_request_error"}}`)
		return
	}
	m.mu.Lock()
	m.held++
	m.mu.Unlock()
	select {
	case <-m.release:
	case <-r.Context().Done():
		m.mu.Lock()
		m.held--
		m.mu.Unlock()
		return
	}
	m.mu.Lock()
	m.held--
	m.answered++
	m.mu.Unlock()
	answer := "unknown"
	if q := whatIs.FindSubmatch(body); q != nil {
		answer = evalSimple(string(q[1]))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-canary",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "Final answer: " + answer}}},
		"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
}

func (m *keyModel) counts() (held, answered, badKey int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held, m.answered, m.badKey
}

// TestRolloutLiteralKeyCanary runs an AgentFlow rollout config as AgentFlow
// documents it, with a literal api_key next to model_name and base_url:
// in-process, handed to a server, and killed then resumed. The endpoint
// gets the key on every call; a resume without it (flock run --resume, a
// restarted server) says to run the command again and loses nothing; the
// same command then finishes the run. Over HTTP the literal key stays
// refused and "${VAR}" works. The key is found nowhere: not in the data
// directories' files (flock.db's bytes included), the output directories,
// any command's stdout or stderr, the server's log, nor any run's export.
func TestRolloutLiteralKeyCanary(t *testing.T) {
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	canary := "sk-canary-" + hex.EncodeToString(rnd[:])
	model := &keyModel{key: canary, release: make(chan struct{})}
	close(model.release)
	fake := httptest.NewServer(model)
	defer fake.Close()

	dir := t.TempDir()
	config := func(name string, m *keyModel, url string) string {
		return filepath.Join(testkit.WriteFiles(t, dir, map[string]string{name: fmt.Sprintf(`{
  "benchmark_name": "canary",
  "data_path": "bench.jsonl",
  "output_dir": "out-%[1]s",
  "model_name": "gpt-canary",
  "api_key": %[2]q,
  "base_url": %[3]q,
  "max_turns": 2,
  "max_retries": 0,
  "max_workers": 2,
  "evaluation_metric": "exact_match",
  "save_trajectories": true
}`, strings.TrimSuffix(name, ".json"), canary, url+"/v1")}), name)
	}
	testkit.WriteFiles(t, dir, map[string]string{"bench.jsonl": `{"id": "a", "question": "What is 2+3?", "answer": "5"}` + "\n" +
		`{"id": "b", "question": "What is 6*7?", "answer": "42"}` + "\n"})
	var logs strings.Builder // every output of every command and server
	rollout := func(cfg, data string) (int, string, string) {
		code, out, errs := flock(t, "rollout", "--config", cfg, "--data", data)
		logs.WriteString(out + errs)
		return code, out, errs
	}
	checkDone := func(where, out string) {
		t.Helper()
		if !strings.Contains(out, "correct       2 of 2 graded") {
			t.Fatalf("%s:\n%s", where, out)
		}
	}

	// In this process.
	alone := filepath.Join(dir, "alone")
	if code, out, errs := rollout(config("alone.json", model, fake.URL), alone); code != 0 {
		t.Fatalf("in-process: exit %d\n%s\n%s", code, out, errs)
	} else {
		checkDone("in-process", out)
	}

	// Handed to a server (the key goes with the hand-over, to its memory).
	served := filepath.Join(dir, "served")
	p := startServer(t, served, freePort(t))
	if code, out, errs := rollout(config("served.json", model, fake.URL), served); code != 0 {
		t.Fatalf("handed over: exit %d\n%s\n%s", code, out, errs)
	} else {
		checkDone("handed over", out)
	}
	// Over HTTP a literal key stays refused, naming the key, never quoting
	// it; "${VAR}" works.
	settings := map[string]any{"data_path": filepath.Join(dir, "bench.jsonl"), "model_name": "gpt-canary", "base_url": fake.URL + "/v1", "api_key": canary}
	raw, _ := json.Marshal(settings)
	_, err := p.c.Start(context.Background(), api.StartRequest{Workflow: "rollout", Settings: raw})
	if !isStatus(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "api_key") || strings.Contains(err.Error(), canary) {
		t.Fatalf("a literal key over HTTP: %v", err)
	}
	settings["api_key"] = "${FLOCK_CANARY_KEY_VAR}"
	raw, _ = json.Marshal(settings)
	if _, err := p.c.Start(context.Background(), api.StartRequest{Workflow: "rollout", Settings: raw}); err != nil {
		t.Fatalf("${VAR} over HTTP: %v", err)
	}
	p.kill()
	logs.WriteString(p.out.String())

	// Killed while both calls are held, then resumed without the key, then
	// by the same command.
	slow := &keyModel{key: canary, release: make(chan struct{})}
	slowSrv := httptest.NewServer(slow)
	defer slowSrv.Close()
	crashed := filepath.Join(dir, "crashed")
	cfg := config("crashed.json", slow, slowSrv.URL)
	cmd, out := startFlock(t, "rollout", "--config", cfg, "--data", crashed)
	testkit.WaitWithin(t, 60*time.Second, "two calls held", func() bool { h, _, _ := slow.counts(); return h == 2 })
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	logs.WriteString(out.String())
	id := runIDPattern.FindString(out.String())
	close(slow.release)

	code, stdout, errs := flock(t, "run", "--resume", id, "--data", crashed)
	logs.WriteString(stdout + errs)
	if code != 1 || !strings.Contains(errs, "run that command again") {
		t.Fatalf("flock run --resume without the key: exit %d\n%s\n%s", code, stdout, errs)
	}
	p = startServer(t, crashed, freePort(t))
	testkit.WaitWithin(t, 30*time.Second, "the server to hold the run", func() bool { return p.run(id).Status == "paused" })
	evs, err := p.c.StoredEvents(context.Background(), id, 0, 1000)
	if err != nil || len(evs.Events) == 0 || !strings.Contains(evs.Events[len(evs.Events)-1].Message, "run that command again") {
		t.Fatalf("the paused run's last event: %+v (%v)", evs.Events, err)
	}
	code, stdout, errs = rollout(cfg, crashed)
	if code != 0 || !strings.Contains(stdout, "rollout "+id+": resuming the unfinished rollout of this command") {
		t.Fatalf("the same command: exit %d\n%s\n%s\nserver:\n%s", code, stdout, errs, p.out)
	}
	checkDone("resumed", stdout)
	// Every run's export, through the server.
	all, err := p.c.Runs(context.Background(), client.RunsQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all.Runs {
		code, export, errs := flock(t, "runs", "export", r.ID, "--data", crashed)
		if code != 0 {
			t.Fatalf("export %s: exit %d %s", r.ID, code, errs)
		}
		logs.WriteString(export)
	}
	p.kill()
	logs.WriteString(p.out.String())

	if _, _, bad := model.counts(); bad != 0 {
		t.Fatalf("the endpoint got %d calls without the key", bad)
	}
	if _, answered, bad := slow.counts(); bad != 0 || answered < 2 {
		t.Fatalf("the endpoint answered %d calls, %d without the key", answered, bad)
	}
	if strings.Contains(logs.String(), canary) {
		t.Fatalf("the key is in a command's output, a log or an export")
	}
	for _, root := range []string{alone, served, crashed, dir} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, ".json") && filepath.Dir(path) == dir {
				return nil // the config files themselves hold it
			}
			b, err := os.ReadFile(path)
			if err == nil && strings.Contains(string(b), canary) {
				t.Errorf("the key is in %s", path)
			}
			return nil
		})
	}
}
