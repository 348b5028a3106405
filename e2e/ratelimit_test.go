package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

	var started struct {
		RunID string `json:"run_id"`
	}
	settings := map[string]any{"model": "gpt-test", "max_turns": 1, "tools": []string{},
		"models": map[string]any{"gpt-test": map[string]any{"base_url": llm.URL + "/v1", "api_key_env": "FLOCK_TEST_KEY", "max_retry_wait_s": 10}}}
	if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "react", "task": "what is 6*7?", "settings": settings}, &started); code != 201 {
		t.Fatalf("start: %d", code)
	}
	var h struct {
		Status  string `json:"status"`
		Waiting []struct {
			OpID    string    `json:"op_id"`
			Reason  string    `json:"reason"`
			Until   time.Time `json:"until"`
			Message string    `json:"message"`
		} `json:"waiting"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.do("GET", "/runs/"+started.RunID, nil, &h)
		if len(h.Waiting) > 0 || h.Status != "running" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
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
