package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/testkit"
)

// arithModel is an OpenAI-compatible endpoint playing the example agent's
// model: a calculator call for "What is A?", then the tool's output as the
// answer. It counts every request it answers.
type arithModel struct {
	mu    sync.Mutex
	calls int
}

func (m *arithModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := countChat(w, r, &m.mu, &m.calls)
	if !ok {
		return
	}
	writeArithReply(w, req, "x")
}

// chatRequest is what the fake endpoints read of a chat completion request.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// countChat reads a chat completion request and counts it in calls
// (guarded by mu); anything else is answered 400 and not counted.
func countChat(w http.ResponseWriter, r *http.Request, mu *sync.Mutex, calls *int) (chatRequest, bool) {
	body, _ := io.ReadAll(r.Body)
	req, ok := decodeChat(body)
	if !ok {
		http.Error(w, "bad request", 400)
		return req, false
	}
	mu.Lock()
	*calls++
	mu.Unlock()
	return req, true
}

// decodeChat decodes a chat completion request with at least one message.
func decodeChat(body []byte) (chatRequest, bool) {
	var req chatRequest
	err := json.Unmarshal(body, &req)
	return req, err == nil && len(req.Messages) > 0
}

// writeArithReply answers as the example agent's model: a calculator call
// for "What is A?" (the last message is the user's), else the last
// message (the tool's output) as the answer.
func writeArithReply(w http.ResponseWriter, req chatRequest, id string) {
	last := req.Messages[len(req.Messages)-1]
	msg := map[string]any{"role": "assistant", "content": last.Content}
	finish := "stop"
	if last.Role == "user" {
		expr := strings.TrimSuffix(strings.TrimPrefix(last.Content, "What is "), "?")
		args, _ := json.Marshal(map[string]string{"expression": expr})
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "calculator", "arguments": string(args)}}}}
		finish = "tool_calls"
	}
	writeChatReply(w, id, req.Model, finish, msg)
}

// writeChatReply answers a chat completion with message msg, 25 tokens.
func writeChatReply(w http.ResponseWriter, id, model, finish string, msg map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
}

func exampleAgent(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	p, _ := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "examples", "external", "agent.py"))
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func needPython3(t *testing.T) string {
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("FLOCK_TEST_SCRIPT") != "" {
			t.Fatal("python3 is required (scripts/test.sh installs it)")
		}
		t.Skip("python3 not found")
	}
	return p
}

// TestExternalRolloutKill9 runs a rollout of a Python agent (standard
// library only) against the gateway of a real `flock serve`, with the
// model a fake endpoint that counts its calls; it kills the server with
// SIGKILL while four agents are between their first and second model
// call, restarts it, and checks that the rollout completes, every agent
// that was interrupted ran again with its finished call replayed from
// the journal, and the endpoint answered exactly as many calls as the
// journal holds generates: no model call was paid twice.
func TestExternalRolloutKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	py := needPython3(t)
	model := &arithModel{}
	fake := httptest.NewServer(model)
	defer fake.Close()
	t.Setenv("FLOCK_FAKE_MODEL_KEY", "sk-fake-key-for-tests")

	dir := t.TempDir()
	pause := filepath.Join(dir, "pause")
	if err := os.MkdirAll(pause, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pause, "armed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var bench strings.Builder
	tasks := map[string]string{"a": "2+3", "b": "4*5", "c": "9-1", "d": "6*7"}
	for id, expr := range tasks {
		fmt.Fprintf(&bench, `{"id": %q, "question": "What is %s?", "answer": %q}`+"\n", id, expr, evalSimple(expr))
	}
	data := filepath.Join(dir, "bench.jsonl")
	if err := os.WriteFile(data, []byte(bench.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "flock.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"read_roots": [%q]}`, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir, addr := filepath.Join(dir, "data"), freePort(t)
	p := startServer(t, dataDir, addr, "--config", cfg)
	settings := map[string]any{
		"data_path": data, "output_dir": "results", "num_chains": 2, "max_concurrency": 4, "episodes": true,
		"agent": map[string]any{"workflow": "external", "settings": map[string]any{
			"command": []string{py, exampleAgent(t)}, "model": "fake", "env": map[string]string{"PAUSE_DIR": pause}}},
		"models": map[string]any{"fake": map[string]any{"base_url": fake.URL + "/v1", "api_key_env": "FLOCK_FAKE_MODEL_KEY", "max_retries": 0}},
	}
	id := p.start("rollout", settings)

	// Four agents (one per lane) are paused after their first call.
	testkit.CheckFor(t, 60*time.Second, func() error {
		if n := paused(t, pause); n < 4 {
			return fmt.Errorf("only %d agents paused\n%s", n, p.out.String())
		}
		return nil
	})
	if err := os.Remove(filepath.Join(pause, "armed")); err != nil {
		t.Fatal(err)
	}
	p.kill()
	p = startServer(t, dataDir, addr, "--config", cfg)
	end := waitEnded(t, p, id, 90*time.Second)
	if end.Status != "succeeded" {
		t.Fatalf("rollout %s: %s %s\n%s", end.Status, end.EndReason, end.Error, p.out.String())
	}
	var sum struct {
		Samples, Correct int
	}
	_ = json.Unmarshal(end.Result, &sum)
	if sum.Samples != 8 || sum.Correct != 8 {
		t.Fatalf("summary %s", end.Result)
	}
	// Each interrupted agent ran again and replayed its first call.
	var ext struct {
		Runs []api.Run `json:"runs"`
	}
	p.do("GET", "/runs?workflow=external&limit=100", nil, &ext)
	replayed := 0
	for _, r := range ext.Runs {
		var res struct {
			Calls, Replayed int
		}
		_ = json.Unmarshal(r.Result, &res)
		if r.Status != "succeeded" || res.Calls != 2 {
			t.Errorf("external run %s: %s, %d calls", r.ID, r.Status, res.Calls)
		}
		replayed += res.Replayed
	}
	if len(ext.Runs) != 8 || replayed != 4 {
		t.Fatalf("%d external runs, %d calls replayed; want 8 and 4", len(ext.Runs), replayed)
	}
	// Paid once: the endpoint's calls are exactly the calls the journal
	// holds answered (in the session runs' gateway_wait results).
	var sessions struct {
		Runs []api.Run `json:"runs"`
	}
	p.do("GET", "/runs?workflow=external.session&limit=100", nil, &sessions)
	journaled := 0
	for _, r := range sessions.Runs {
		for _, op := range p.ops(r.ID) {
			if op.Request.Type != "gateway_wait" || op.Status != "done" || op.Result == nil {
				continue
			}
			var w struct {
				Calls []struct {
					Result json.RawMessage `json:"result"`
				} `json:"calls"`
			}
			if err := json.Unmarshal(op.Result.Data, &w); err != nil {
				t.Fatalf("gateway_wait result %s: %v", op.Result.Data, err)
			}
			for _, c := range w.Calls {
				if len(c.Result) > 0 {
					journaled++
				}
			}
		}
	}
	model.mu.Lock()
	calls := model.calls
	model.mu.Unlock()
	if journaled != 16 || calls != 16 {
		t.Fatalf("endpoint answered %d calls, the journal holds %d generates; want 16 and 16", calls, journaled)
	}
}

// paused counts the agents that wrote their pause marker.
func paused(t *testing.T, dir string) int {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es) - 1 // less "armed"
}

func evalSimple(expr string) string {
	var a, b int
	var op byte
	fmt.Sscanf(expr, "%d", &a)
	i := strings.IndexAny(expr, "+-*")
	op = expr[i]
	fmt.Sscanf(expr[i+1:], "%d", &b)
	switch op {
	case '+':
		return fmt.Sprint(a + b)
	case '-':
		return fmt.Sprint(a - b)
	}
	return fmt.Sprint(a * b)
}

// TestAgentsSDKThroughFlockRun runs an agent written with the OpenAI
// Agents SDK for JavaScript (npm @openai/agents) on its default settings,
// the Responses API, as `flock run --workflow external` with the real
// binary: the gateway answers on flock run's private loopback listener, a
// function tool round trip goes through it streamed and not, and a run
// continues the first by previous_response_id. The command exits 0 with
// the agent's answer and the episode holds one step per call.
func TestAgentsSDKThroughFlockRun(t *testing.T) {
	if testing.Short() {
		t.Skip("npm install skipped in -short mode")
	}
	node, modules := testkit.NPMInstall(t, "@openai/agents", "zod")
	_, file, _, _ := runtime.Caller(0)
	agent, _ := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "handlers", "external", "testdata", "agents_sdk_agent.js"))
	dir := t.TempDir()
	script := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(script, []byte(strings.Join([]string{
		`{"match": "What is 2+3?", "tool_calls": [{"id": "call_a", "name": "calculator", "arguments": {"expression": "2+3"}}]}`,
		`{"match": "5", "content": "The answer is 5."}`,
		`{"match": "4*5", "tool_calls": [{"id": "call_b", "name": "calculator", "arguments": {"expression": "4*5"}}]}`,
		`{"match": "20", "content": "The answer is 20."}`,
		`{"match": "doubled", "content": "Doubled, it is 10."}`,
	}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{"command": []string{node, agent}, "model": "scripted",
		"env":    map[string]string{"NODE_PATH": modules, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
		"models": map[string]any{"scripted": map[string]any{"provider": "scripted", "script": script}}})
	sf := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(sf, settings, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(binary, "run", "--workflow", "external", "--settings", sf, "--task", "What is 2+3?", "--data", data)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flock run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "The answer is 5.") {
		t.Fatalf("flock run printed no answer:\n%s", out)
	}
	seen, _ := filepath.Glob(filepath.Join(data, "runs", "*", "agents_sdk.json"))
	if len(seen) != 1 {
		t.Fatalf("agents_sdk.json: %v\n%s", seen, out)
	}
	b, _ := os.ReadFile(seen[0])
	var got struct {
		Stream  struct{ Final string }
		Chained struct{ Final string }
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Stream.Final != "The answer is 20." || got.Chained.Final != "Doubled, it is 10." {
		t.Fatalf("the agent saw %s", b)
	}
	eb, _ := os.ReadFile(filepath.Join(filepath.Dir(seen[0]), "episode.json"))
	var ep struct {
		Trajectories []struct {
			Steps []struct {
				ModelResponse string `json:"model_response"`
			}
		}
	}
	if err := json.Unmarshal(eb, &ep); err != nil || len(ep.Trajectories) != 1 || len(ep.Trajectories[0].Steps) != 5 ||
		ep.Trajectories[0].Steps[4].ModelResponse != "Doubled, it is 10." {
		t.Fatalf("episode %s", eb)
	}
}
