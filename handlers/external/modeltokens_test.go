package external_test

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/state"
)

// TestModelSettingAsksForTokenData runs a rollout whose external agent
// (examples/external/agent.py, which asks for no token data) calls a
// vLLM-style endpoint through the gateway, the model declared with
// token_ids and top_logprobs: every call reaches the endpoint asking for
// token ids and logprobs, and every rLLM episode of the rollout's episodes
// file has steps carrying the endpoint's prompt and completion token ids
// and logprobs exactly, one logprob per completion token.
func TestModelSettingAsksForTokenData(t *testing.T) {
	py := needPython(t)
	fake := &vllmFake{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-test")
	f := newFlock(t)
	questions := map[string]string{"a": "What is 2+3?", "b": "What is 4+4?"}
	var bench strings.Builder
	for _, id := range []string{"a", "b"} {
		line, _ := json.Marshal(map[string]any{"id": id, "question": questions[id]})
		bench.WriteString(string(line) + "\n")
	}
	settings := map[string]any{
		"data_path": writeFile(t, f.dir, "bench.jsonl", bench.String()), "output_dir": "results",
		"num_chains": 1, "max_concurrency": 2, "evaluation_metric": "none", "episodes": true,
		"agent": map[string]any{"workflow": "external", "settings": map[string]any{"command": []string{py, agentPath(t)}, "model": "qwen"}},
		"models": map[string]any{"qwen": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY",
			"max_retries": 0, "token_ids": true, "top_logprobs": 2}},
	}
	id := f.start("rollout", settings, "")
	end := f.wait(id, 90*time.Second)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("rollout %s: %s %s", end.Status, end.EndReason, end.Error)
	}
	for i := range 2 {
		b := fake.body(i)
		if b["return_token_ids"] != true || b["logprobs"] != true || b["top_logprobs"] != float64(2) {
			t.Errorf("call %d: the endpoint got %v", i, b)
		}
	}
	if b := fake.body(2); b != nil {
		t.Errorf("a third call: %v", b)
	}

	var sum struct {
		Dir          string `json:"dir"`
		EpisodesFile string `json:"episodes_file"`
	}
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	eps := readEpisodes(t, filepath.Join(sum.Dir, filepath.Base(sum.EpisodesFile)))
	if len(eps) != 2 {
		t.Fatalf("%d episodes, want 2", len(eps))
	}
	for _, ep := range eps {
		if err := ep.Validate(); err != nil {
			t.Fatal(err)
		}
		steps := ep.Trajectories[0].Steps
		if len(steps) != 1 {
			t.Fatalf("episode %s: %d steps", ep.ID, len(steps))
		}
		s := steps[0]
		q := questions[strings.Split(ep.ID, ":")[0]]
		if !reflect.DeepEqual(s.PromptTokenIDs, fakePromptIDs(q)) || !reflect.DeepEqual(s.CompletionTokenIDs, fakeCompletionIDs) ||
			!reflect.DeepEqual(s.Logprobs, fakeLogprobs) || len(s.Logprobs) != len(s.CompletionTokenIDs) {
			t.Errorf("episode %s step: prompt %v completion %v logprobs %v", ep.ID, s.PromptTokenIDs, s.CompletionTokenIDs, s.Logprobs)
		}
	}
}
