package external_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/state"
)

// vllmFake is a vLLM-style endpoint: it returns the prompt's and the
// completion's token ids only when the request has return_token_ids:
// true, and logprobs (with top_logprobs alternatives) only when asked. It
// keeps every request body.
type vllmFake struct {
	mu     sync.Mutex
	bodies []map[string]any
}

// Token data the fake answers with: prompt ids derive from the prompt's
// length, completion ids and logprobs are fixed.
var (
	fakeCompletionIDs = []int{1521, 25, 1630}
	fakeLogprobs      = []float64{-0.125, -0.5, -2.25}
)

func fakePromptIDs(last string) []int { return []int{151644, 872, len(last)} }

func (f *vllmFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	msgs, _ := body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	ch := map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "echo: " + last}}
	resp := map[string]any{"id": "cmpl-vllm", "object": "chat.completion", "model": body["model"], "choices": []any{ch},
		"usage": map[string]any{"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}}
	if body["return_token_ids"] == true {
		resp["prompt_token_ids"] = fakePromptIDs(last)
		ch["token_ids"] = fakeCompletionIDs
	}
	if body["logprobs"] == true {
		top, _ := body["top_logprobs"].(float64)
		var content []any
		for i, lp := range fakeLogprobs {
			var alts []any
			for k := range int(top) {
				alts = append(alts, map[string]any{"token": fmt.Sprintf("alt%d", k), "logprob": lp - 1 - float64(k)})
			}
			content = append(content, map[string]any{"token": fmt.Sprintf("t%d", i), "logprob": lp, "top_logprobs": alts})
		}
		ch["logprobs"] = map[string]any{"content": content}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (f *vllmFake) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		return nil
	}
	return f.bodies[i]
}

// TestGatewayForwardsTokenData runs a standard-library Python agent
// against a vLLM-style endpoint through the gateway. The fields it sets
// that flock does not interpret (seed, top_k, chat_template_kwargs) and
// return_token_ids, logprobs and top_logprobs reach the endpoint as they
// were sent; the token ids and logprobs the endpoint returns reach the
// agent, streamed and not, and the episode's steps carry them exactly,
// one for one with the tokens; a call that asks for nothing gets nothing;
// fields the gateway cannot journal (functions, a stream option other
// than include_usage) are refused with 400 naming them.
func TestGatewayForwardsTokenData(t *testing.T) {
	py := needPython(t)
	fake := &vllmFake{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-test")
	f := newFlock(t)
	_, file, _, _ := runtimeCaller()
	agent := filepath.Join(filepath.Dir(file), "testdata", "vllm_agent.py")
	id := f.start("external", map[string]any{"command": []string{py, agent}, "model": "qwen",
		"models": map[string]any{"qwen": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0}}},
		"collect token data")
	end := f.wait(id, 60*time.Second)
	dir := filepath.Join(f.app.Config.RunsDir(), id)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("external run %s: %s %s", end.Status, end.EndReason, end.Error)
	}
	// The endpoint saw the asks and the extras, as the agent sent them.
	for i, q := range []string{"first", "second"} {
		b := fake.body(i)
		want := map[string]any{"return_token_ids": true, "logprobs": true, "top_logprobs": float64(2), "seed": float64(7),
			"top_k": float64(5), "chat_template_kwargs": map[string]any{"enable_thinking": false}}
		for k, v := range want {
			if !reflect.DeepEqual(b[k], v) {
				t.Errorf("%s call: the endpoint got %s = %v, want %v (body %v)", q, k, b[k], v, b)
			}
		}
		if b["stream"] == true {
			t.Errorf("%s call: the upstream call was streamed", q)
		}
	}
	if b := fake.body(2); b["return_token_ids"] != nil || b["logprobs"] != nil || b["seed"] != nil {
		t.Errorf("the plain call sent %v", b)
	}
	if b := fake.body(3); b != nil {
		t.Errorf("a refused request reached the endpoint: %v", b)
	}

	raw, err := os.ReadFile(filepath.Join(dir, "seen.json"))
	if err != nil {
		t.Fatal(err)
	}
	var seen struct {
		First struct {
			PromptTokenIDs []int `json:"prompt_token_ids"`
			Choices        []struct {
				TokenIDs []int `json:"token_ids"`
				Logprobs struct {
					Content []struct {
						Logprob     float64 `json:"logprob"`
						TopLogprobs []struct {
							Logprob float64 `json:"logprob"`
						} `json:"top_logprobs"`
					} `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		StreamPromptTokenIDs [][]int   `json:"stream_prompt_token_ids"`
		StreamTokenIDs       []int     `json:"stream_token_ids"`
		StreamLogprobs       []float64 `json:"stream_logprobs"`
		Third                struct {
			PromptTokenIDs []int `json:"prompt_token_ids"`
			Choices        []struct {
				TokenIDs []int `json:"token_ids"`
			} `json:"choices"`
		}
		Functions     [2]json.RawMessage `json:"functions"`
		StreamOptions [2]json.RawMessage `json:"stream_options"`
	}
	if err := json.Unmarshal(raw, &seen); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	first := seen.First.Choices[0]
	var lps []float64
	for _, c := range first.Logprobs.Content {
		lps = append(lps, c.Logprob)
		if len(c.TopLogprobs) != 2 {
			t.Errorf("top_logprobs %+v", c.TopLogprobs)
		}
	}
	if !reflect.DeepEqual(seen.First.PromptTokenIDs, fakePromptIDs("first question")) ||
		!reflect.DeepEqual(first.TokenIDs, fakeCompletionIDs) || !reflect.DeepEqual(lps, fakeLogprobs) {
		t.Errorf("non-streamed answer: prompt %v, completion %v, logprobs %v", seen.First.PromptTokenIDs, first.TokenIDs, lps)
	}
	if len(seen.StreamPromptTokenIDs) != 1 || !reflect.DeepEqual(seen.StreamPromptTokenIDs[0], fakePromptIDs("second question")) ||
		!reflect.DeepEqual(seen.StreamTokenIDs, fakeCompletionIDs) || !reflect.DeepEqual(seen.StreamLogprobs, fakeLogprobs) {
		t.Errorf("streamed answer: prompt %v, completion %v, logprobs %v", seen.StreamPromptTokenIDs, seen.StreamTokenIDs, seen.StreamLogprobs)
	}
	if seen.Third.PromptTokenIDs != nil || seen.Third.Choices[0].TokenIDs != nil {
		t.Errorf("the plain call got token ids: %+v", seen.Third)
	}
	for name, got := range map[string][2]json.RawMessage{"functions": seen.Functions, "stream_options.continuous_usage_stats": seen.StreamOptions} {
		var e struct {
			Error struct{ Param string }
		}
		_ = json.Unmarshal(got[1], &e)
		if string(got[0]) != "400" || e.Error.Param != name {
			t.Errorf("%s: %s %s, want 400 naming it", name, got[0], got[1])
		}
	}

	// The episode's steps carry the endpoint's token data exactly.
	var ep grading.Episode
	eb, _ := os.ReadFile(filepath.Join(dir, "episode.json"))
	if err := json.Unmarshal(eb, &ep); err != nil {
		t.Fatal(err)
	}
	steps := ep.Trajectories[0].Steps
	if len(steps) != 3 {
		t.Fatalf("episode steps %d: %s", len(steps), eb)
	}
	for i, q := range []string{"first question", "second question"} {
		s := steps[i]
		if !reflect.DeepEqual(s.PromptTokenIDs, fakePromptIDs(q)) || !reflect.DeepEqual(s.CompletionTokenIDs, fakeCompletionIDs) ||
			!reflect.DeepEqual(s.Logprobs, fakeLogprobs) {
			t.Errorf("step %d: prompt %v completion %v logprobs %v", i, s.PromptTokenIDs, s.CompletionTokenIDs, s.Logprobs)
		}
	}
	if s := steps[2]; s.PromptTokenIDs != nil || s.CompletionTokenIDs != nil || s.Logprobs != nil {
		t.Errorf("plain step carries token data: %+v", s)
	}
}
