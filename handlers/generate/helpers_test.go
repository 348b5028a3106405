package generate

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
)

const testKey = "sk-test-SECRET-0123456789abcdef"

// newTestHandler returns a live handler with fast backoff, env from vars
// and logs captured in the returned buffer.
func newTestHandler(tb testing.TB, vars map[string]string) (*Handler, *testkit.Buffer) {
	tb.Helper()
	return newTestHandlerWith(tb, vars, nil)
}

// newTestHandlerWith is newTestHandler with tweak applied to the options.
func newTestHandlerWith(tb testing.TB, vars map[string]string, tweak func(*Options)) (*Handler, *testkit.Buffer) {
	tb.Helper()
	logs := &testkit.Buffer{}
	opts := Options{
		Getenv:      func(k string) string { return vars[k] },
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
	}
	if tweak != nil {
		tweak(&opts)
	}
	h := New(opts)
	tb.Cleanup(func() { h.Close() })
	return h, logs
}

// fakeServer is an OpenAI-compatible test endpoint. reply is called for
// every request with the 1-based request number and the decoded body.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	auth     []string
	inFlight int
	maxIn    int
}

func newFakeServer(tb testing.TB, reply func(w http.ResponseWriter, n int, body map[string]any)) *fakeServer {
	tb.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		fs.mu.Lock()
		fs.bodies = append(fs.bodies, body)
		fs.auth = append(fs.auth, r.Header.Get("Authorization"))
		n := len(fs.bodies)
		fs.inFlight++
		fs.maxIn = max(fs.maxIn, fs.inFlight)
		fs.mu.Unlock()
		defer func() {
			fs.mu.Lock()
			fs.inFlight--
			fs.mu.Unlock()
		}()
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "bad path "+r.URL.Path, http.StatusNotFound)
			return
		}
		reply(w, n, body)
	}))
	tb.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) requests() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.bodies)
}

func (fs *fakeServer) body(i int) map[string]any {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.bodies[i]
}

// writeJSON writes v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// textCompletion is a one-choice reply.
func textCompletion(content string) map[string]any {
	return map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	}
}

func apiError(msg string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "test_error"}}
}

// liveSettings declares model "m" at fs with the given tweaks.
func liveSettings(fs *fakeServer, tweak func(*configs.Model)) *configs.RunSettings {
	retries := 3
	m := configs.Model{Provider: "openai", Name: "test-model", BaseURL: fs.URL + "/v1", MaxRetries: &retries, TimeoutS: 5}
	if tweak != nil {
		tweak(&m)
	}
	s := &configs.RunSettings{Models: map[string]configs.Model{"m": m}}
	s.ApplyDefaults()
	return s
}

func genReq(g operations.GenerateRequest) operations.Request {
	return operations.Request{Kind: operations.KindGenerate, Params: &g, Meta: map[string]string{"purpose": "test"}}
}

func userMsg(s string) []operations.Message {
	return []operations.Message{{Role: operations.RoleUser, Content: s}}
}

func handle(tb testing.TB, h *Handler, s *configs.RunSettings, g operations.GenerateRequest) operations.Result {
	tb.Helper()
	return h.Handle(context.Background(), handlers.Env{RunID: "run1", Settings: s}, genReq(g))
}

// mustGen returns the generate payload, failing on an error result.
func mustGen(tb testing.TB, r operations.Result) *operations.GenerateResult {
	tb.Helper()
	if r.Error != "" {
		tb.Fatalf("unexpected error result: %s", r.Error)
	}
	if operations.Generate.Result(r) == nil {
		tb.Fatal("no generate result")
	}
	return operations.Generate.Result(r)
}

// onlyCall returns o's one tool call, failing when it has another number.
func onlyCall(tb testing.TB, o operations.Output) operations.ToolCall {
	tb.Helper()
	if len(o.ToolCalls) != 1 {
		tb.Fatalf("want one tool call, got %+v", o)
	}
	return o.ToolCalls[0]
}
