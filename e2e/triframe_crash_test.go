package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
)

// fakeModel is an OpenAI-compatible endpoint that plays a tiny triframe
// policy (advise, act with bash a few times, then submit; rate every
// option) and counts the requests it answers by a key also computable
// from the journal.
type fakeModel struct {
	mu   sync.Mutex
	seen map[string]int
}

type chatReq struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// requestKey identifies a generate request: model, tool names, message
// count and the last message.
func requestKey(model string, tools []string, n int, last string) string {
	return fmt.Sprintf("%s|%s|%d|%s", model, strings.Join(tools, ","), n, last)
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req chatReq
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var tools []string
	for _, t := range req.Tools {
		tools = append(tools, t.Function.Name)
	}
	last := ""
	toolMsgs := 0
	for _, m := range req.Messages {
		last = m.Content
		if m.Role == "tool" {
			toolMsgs++
		}
	}
	f.mu.Lock()
	f.seen[requestKey(req.Model, tools, len(req.Messages), last)]++
	f.mu.Unlock()
	time.Sleep(40 * time.Millisecond) // a model that takes a moment

	has := func(name string) bool {
		for _, t := range tools {
			if t == name {
				return true
			}
		}
		return false
	}
	var name string
	var args any
	switch {
	case has("rate_options"):
		name, args = "rate_options", map[string]any{"ratings": []map[string]any{
			{"option_index": 0, "rating": 1.0, "comment": "fine"}, {"option_index": 1, "rating": 0.5, "comment": "ok"}}}
	case has("advise"):
		name, args = "advise", map[string]any{"advice": "Take one small step at a time."}
	case toolMsgs >= 6:
		name, args = "submit", map[string]any{"answer": "done"}
	default:
		name, args = "bash", map[string]any{"command": fmt.Sprintf("echo step %d >> steps.txt", toolMsgs)}
	}
	a, _ := json.Marshal(args)
	resp := map[string]any{
		"id": "x", "object": "chat.completion", "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
			"role": "assistant", "content": "",
			"tool_calls": []map[string]any{{"id": fmt.Sprintf("call_%d", toolMsgs), "type": "function",
				"function": map[string]any{"name": name, "arguments": string(a)}}}}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// TestTriframeCrashResume kills the server with SIGKILL in the middle of a
// triframe run against a live (fake) model endpoint, restarts it, and
// checks that the run completes and that no generate whose result had been
// journaled was sent to the model again.
func TestTriframeCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	fm := &fakeModel{seen: map[string]int{}}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	t.Setenv("FLOCK_FAKE_MODEL_KEY", "sk-fake-key-for-tests")

	data, addr := t.TempDir(), freePort(t)
	p := startServer(t, data, addr)
	entry := map[string]any{"model": "fake"}
	settings := map[string]any{
		"advisors": []any{entry}, "actors": []any{entry, entry}, "raters": []any{entry},
		"models": map[string]any{"fake": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_FAKE_MODEL_KEY", "max_retries": 0}},
		"limits": map[string]any{"actions": 50},
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "triframe", "settings": settings,
		"task": "Append six steps to steps.txt, then submit done."}, &started); code != 201 {
		t.Fatalf("start: %d", code)
	}
	ids := []string{started.RunID}
	for _, d := range []time.Duration{250, 400, 150} {
		time.Sleep(d * time.Millisecond)
		p.kill()
		before := journaled(t, data, ids)
		p = startServer(t, data, addr)
		waitProgress(t, p, ids, before)
	}
	h := waitEnded(t, p, started.RunID, 60*time.Second)
	if h.Status != "succeeded" || string(h.Result) != `"done"` {
		t.Fatalf("run ended %s (%s) result %s: %s\n%s", h.Status, h.EndReason, h.Result, h.Error, p.out.String())
	}
	p.kill()

	st := teststore.OpenAt(t, data)
	ops, err := st.Ops(t.Context(), started.RunID, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	journaledOnce := map[string]int{} // request key -> ops journaled without a re-dispatch
	redispatched := map[string]bool{}
	generates := 0
	for _, op := range ops {
		g := operations.Generate.Params(op.Request)
		if op.Request.Kind != operations.KindGenerate || op.Status != state.OpDone {
			continue
		}
		generates++
		var tools []string
		for _, tl := range g.Tools {
			tools = append(tools, tl.Name)
		}
		last := ""
		if n := len(g.Messages); n > 0 {
			last = g.Messages[n-1].Content
		}
		k := requestKey(g.Model, tools, len(g.Messages), last)
		if op.Attempts > 1 {
			redispatched[k] = true
		} else {
			journaledOnce[k]++
		}
	}
	if generates < 10 {
		t.Fatalf("only %d generates journaled", generates)
	}
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for k, n := range journaledOnce {
		if redispatched[k] {
			continue // an identical request was legitimately sent again
		}
		if fm.seen[k] != n {
			t.Errorf("request %q: journaled %d times, sent to the model %d times", k, n, fm.seen[k])
		}
	}
	t.Logf("%d generates journaled, %d request keys re-dispatched after a crash", generates, len(redispatched))
}
