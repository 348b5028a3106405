package external_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/state"
)

// installOpenAINode installs the official OpenAI SDK for Node in a temp
// directory and returns its node_modules; it skips with a clear message
// when node or npm is absent (or, under scripts/test.sh, fails).
func installOpenAINode(t *testing.T) (node, modules string) {
	t.Helper()
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		if os.Getenv("FLOCK_TEST_SCRIPT") != "" {
			t.Fatal("node and npm are required for the OpenAI Node SDK check (scripts/test.sh installs nodejs and npm)")
		}
		t.Skip("node or npm not found: the OpenAI Node SDK check needs both (apt-get install nodejs npm)")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "openai", "--no-audit", "--no-fund", "--silent", "--prefix", dir)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install openai: %v\n%s", err, out)
	}
	return node, filepath.Join(dir, "node_modules")
}

// TestOpenAINodeSDK is the real-client check: an agent written with the
// official OpenAI SDK for Node (npm install openai) runs as an external
// agent and calls the gateway non-streaming with a tool, streaming with
// usage, through the SDK's stream helper (tool-call deltas assembled),
// lists the models and sees a wrong key refused with 401.
func TestOpenAINodeSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("npm install skipped in -short mode")
	}
	node, modules := installOpenAINode(t)
	f := newFlock(t)
	script := writeFile(t, f.dir, "script.jsonl", strings.Join([]string{
		`{"match": "2+3? (again)", "tool_calls": [{"id": "call_h", "name": "calculator", "arguments": {"expression": "2+3"}}]}`,
		`{"match": "What is 2+3?", "tool_calls": [{"id": "call_1", "name": "calculator", "arguments": {"expression": "2+3"}}], "usage": {"prompt_tokens": 30, "completion_tokens": 8}}`,
		`{"match": "5", "content": "The answer is 5.", "usage": {"prompt_tokens": 50, "completion_tokens": 5}}`,
	}, "\n")+"\n")
	_, file, _, _ := runtimeCaller()
	agent := filepath.Join(filepath.Dir(file), "testdata", "sdk_agent.js")
	id := f.start("external", map[string]any{"command": []string{node, agent}, "model": "scripted",
		"env":    map[string]string{"NODE_PATH": modules},
		"models": map[string]any{"scripted": map[string]any{"provider": "scripted", "script": script}}}, "What is 2+3?")
	end := f.wait(id, 60*time.Second)
	dir := filepath.Join(f.app.Config.RunsDir(), id)
	if end.Status != state.StatusSucceeded {
		b, _ := os.ReadFile(filepath.Join(dir, "episode.json"))
		t.Fatalf("external run %s: %s %s\n%s", end.Status, end.EndReason, end.Error, b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		First struct {
			ID, Finish, Tool, Args string
			Usage                  struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Stream struct {
			Text, Finish string
			Chunks       int
			Usage        *struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Helper struct{ Tool, Args string }
		Models []string
		BadKey struct {
			Status int
			Type   string
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.First.Finish != "tool_calls" || got.First.Tool != "calculator" || got.First.Args != `{"expression":"2+3"}` ||
		got.First.Usage.TotalTokens != 38 || !strings.HasPrefix(got.First.ID, "chatcmpl-") {
		t.Errorf("non-streaming: %+v", got.First)
	}
	if got.Stream.Text != "The answer is 5." || got.Stream.Finish != "stop" || got.Stream.Usage == nil ||
		got.Stream.Usage.TotalTokens != 55 || got.Stream.Chunks < 3 {
		t.Errorf("streaming: %+v", got.Stream)
	}
	if got.Helper.Tool != "calculator" || got.Helper.Args != `{"expression":"2+3"}` {
		t.Errorf("stream helper: %+v", got.Helper)
	}
	if len(got.Models) != 1 || got.Models[0] != "scripted" {
		t.Errorf("models: %v", got.Models)
	}
	if got.BadKey.Status != 401 {
		t.Errorf("wrong key: %+v", got.BadKey)
	}
	var ep grading.Episode
	eb, _ := os.ReadFile(filepath.Join(dir, "episode.json"))
	if err := json.Unmarshal(eb, &ep); err != nil {
		t.Fatal(err)
	}
	steps := ep.Trajectories[0].Steps
	if ep.Artifacts.Answer != "The answer is 5." || len(steps) != 3 || steps[1].ModelResponse != "The answer is 5." ||
		steps[0].ID != strings.TrimPrefix(got.First.ID, "chatcmpl-") {
		t.Fatalf("episode %s", eb)
	}
}
