package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/testkit"
)

// TestRateLimitWaitShows drives the real server against an endpoint that
// answers its first call with 429 and Retry-After: 2: while the generate
// waits, GET /runs/{id} says why and for how long; then the run finishes.
func TestRateLimitWaitShows(t *testing.T) {
	var calls atomic.Int32
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "2")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"finish_reason":"stop",
			"message":{"role":"assistant","content":"<answer>42</answer>"}}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	}))
	defer llm.Close()
	t.Setenv("FLOCK_TEST_KEY", "sk-test-0123456789abcdef")
	p := startServer(t, t.TempDir(), freePort(t))

	settings := map[string]any{"model": "gpt-test", "max_turns": 1, "tools": []string{},
		"models": map[string]any{"gpt-test": map[string]any{"base_url": llm.URL + "/v1", "api_key_env": "FLOCK_TEST_KEY", "max_retry_wait_s": 10}}}
	b, _ := json.Marshal(settings)
	started, err := p.c.Start(t.Context(), api.StartRequest{Workflow: "react", Task: "what is 6*7?", Settings: b})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var h head
	testkit.CheckFor(t, testkit.DefaultTimeout, func() error {
		if h = p.run(started.RunID); len(h.Waiting) == 0 && h.Status == "running" {
			return fmt.Errorf("no wait shown on the run head: %+v\n%s", h, p.out)
		}
		return nil
	})
	if len(h.Waiting) != 1 {
		t.Fatalf("no wait shown on the run head: %+v\n%s", h, p.out)
	}
	w := h.Waiting[0]
	if !strings.Contains(w.Message, "rate limited by gpt-test") || !strings.Contains(w.Message, "retrying in ") || w.Until.IsZero() {
		t.Fatalf("wait = %+v", w)
	}
	if end := waitEnded(t, p, started.RunID, 30*time.Second); end.Status != "succeeded" {
		t.Fatalf("run: %+v\n%s", end, p.out)
	}
	if strings.Contains(p.out.String(), "sk-test-0123456789abcdef") {
		t.Fatal("the API key reached the server's output")
	}
}
