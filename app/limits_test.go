package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/workflows"
)

// TestServerModelLimitsReachGenerate: the operator's per-model limits in
// the server settings hold across runs, whatever the runs' own settings
// declare (one asks for 5, one for nothing).
func TestServerModelLimitsReachGenerate(t *testing.T) {
	var mu sync.Mutex
	in, peak, total := 0, 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		in++
		total++
		peak = max(peak, in)
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // an endpoint that takes its time
		mu.Lock()
		in--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"test-model","choices":[{"index":0,"finish_reason":"tool_calls",
			"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"submit","arguments":"{\"answer\":\"42\"}"}}]}}],
			"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("FLOCK_TEST_KEY", "sk-test-0123456789")
	cfg := configs.Server{DataDir: t.TempDir(), Mode: "live", WorkflowDirs: []string{"../configs/workflows"},
		Models: map[string]configs.ModelLimits{"test-model": {MaxConcurrency: 1}}}
	a := openWith(t, cfg)
	var ids []string
	for _, own := range []string{`,"max_concurrency":5`, ``, `,"max_concurrency":1`} {
		settings := fmt.Sprintf(`{"model":"m","max_turns":1,"models":{"m":{"name":"test-model","base_url":%q,"api_key_env":"FLOCK_TEST_KEY"%s}}}`, srv.URL+"/v1", own)
		run, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "bash-agent", Task: "answer", Settings: json.RawMessage(settings)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, id := range ids {
		head, err := a.Executor.Wait(ctx, id)
		if err != nil || head.Status != "succeeded" {
			t.Fatalf("run %s: %+v, %v", id, head, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != 1 || total != 3 {
		t.Fatalf("peak in flight = %d (want the server's 1), requests = %d", peak, total)
	}
}
