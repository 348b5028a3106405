package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/state"
)

// countingModel is an OpenAI-compatible endpoint answering with reply and
// counting the requests it got.
type countingModel struct {
	*httptest.Server
	requests atomic.Int32
}

func newCountingModel(t *testing.T, reply func(w http.ResponseWriter, n int32)) *countingModel {
	t.Helper()
	f := &countingModel{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply(w, f.requests.Add(1))
	}))
	t.Cleanup(f.Close)
	return f
}

// answer writes an OpenAI-shaped status and body.
func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

// submitting is a chat completion that submits 42.
const submitting = `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
	"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"submit","arguments":"{\"answer\":\"42\"}"}}]}}],
	"usage":{"prompt_tokens":10,"completion_tokens":5}}`

// agentSettings are an agent workflow's settings with every model call
// going to "m" at baseURL.
func agentSettings(workflow, baseURL string) map[string]any {
	s := map[string]any{"models": map[string]any{"m": map[string]any{"base_url": baseURL, "api_key_env": "FLOCK_E2E_MODEL_KEY"}}}
	switch workflow {
	case "react":
		s["model"], s["max_turns"] = "m", 3
	case "triframe":
		for _, role := range []string{"advisors", "actors", "raters"} {
			s[role] = []any{map[string]any{"model": "m"}}
		}
	case "modular":
		s["generator"] = map[string]any{"model": "m"}
	}
	return s
}

// runCLI runs `flock run` of workflow with settings on a fresh data
// directory and returns its exit code, its output and the directory.
func runCLI(t *testing.T, workflow string, settings map[string]any) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out, errs := flock(t, "run", "--workflow", workflow, "--settings", path, "--task", "What is 6*7?", "--data", data)
	return code, out + errs, data
}

// TestModelFailuresEndTheRunAtOnce drives `flock run` against endpoints
// that cannot answer (a host that does not resolve, a refused port, 401,
// 404, 400, a 429 asking for an hour): each run makes exactly one request
// and ends at once with end reason model_error (or rate_limited) and one
// line naming the model, the endpoint's host and the cause, on the run
// head, in the run's final event and on the command line. The agents do
// not re-plan around it: react, triframe and modular each stop after one
// call. A 500 followed by a 200 is retried and the run succeeds.
func TestModelFailuresEndTheRunAtOnce(t *testing.T) {
	t.Setenv("FLOCK_E2E_MODEL_KEY", "sk-e2e-model-key-0123456789")
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	status := func(code int, header, body string) func(w http.ResponseWriter, _ int32) {
		return func(w http.ResponseWriter, _ int32) {
			if k, v, ok := strings.Cut(header, ": "); ok {
				w.Header().Set(k, v)
			}
			answer(w, code, body)
		}
	}
	tests := []struct {
		name     string
		workflow string
		host     string // the endpoint's host; "" is the fake endpoint's
		reply    func(w http.ResponseWriter, n int32)
		reason   string
		cause    string
	}{
		{name: "unresolvable host", workflow: "react", host: "flock-e2e-no-such-host.invalid",
			reason: "model_error", cause: "cannot resolve host flock-e2e-no-such-host.invalid"},
		{name: "refused port", workflow: "react", host: refused, reason: "model_error", cause: "connection refused"},
		{name: "401", workflow: "react", reply: status(401, "", `{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}`),
			reason: "model_error", cause: "HTTP 401 (the endpoint refused the API key in $FLOCK_E2E_MODEL_KEY)"},
		{name: "401 triframe", workflow: "triframe", reply: status(401, "", `{"error":{"message":"Incorrect API key provided"}}`),
			reason: "model_error", cause: "HTTP 401"},
		{name: "401 modular", workflow: "modular", reply: status(401, "", `{"error":{"message":"Incorrect API key provided"}}`),
			reason: "model_error", cause: "HTTP 401"},
		{name: "404", workflow: "react", reply: status(404, "", `{"error":{"message":"The model m does not exist"}}`),
			reason: "model_error", cause: `HTTP 404 (no model "m" or no chat completions at base_url)`},
		{name: "400", workflow: "react", reply: status(400, "", `{"error":{"message":"messages: field required"}}`),
			reason: "model_error", cause: "HTTP 400 (the endpoint rejected the request)"},
		{name: "429 for an hour", workflow: "triframe", reply: status(429, "Retry-After: 3600", `{"error":{"message":"slow down"}}`),
			reason: "rate_limited", cause: "the endpoint asked to wait 3600 s, more than models.m.max_retry_wait_s (60 s) allows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newCountingModel(t, func(w http.ResponseWriter, n int32) {
				if tt.reply != nil {
					tt.reply(w, n)
				}
			})
			host := strings.TrimPrefix(fake.URL, "http://")
			if tt.host != "" {
				host = tt.host
			}
			code, out, data := runCLI(t, tt.workflow, agentSettings(tt.workflow, "http://"+host+"/v1"))
			if n := fake.requests.Load(); tt.reply != nil && n != 1 {
				t.Errorf("the endpoint got %d requests, want 1", n)
			}
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			wantLine := regexp.MustCompile(`(?m)^error: model "m" at ` + regexp.QuoteMeta(host) + `: .*` + regexp.QuoteMeta(tt.cause) + `.*$`)
			if !strings.Contains(out, "failed ("+tt.reason+")") || !wantLine.MatchString(out) {
				t.Fatalf("output lacks the end reason %s and one error line naming the model, %s and %q:\n%s", tt.reason, host, tt.cause, out)
			}
			if strings.Contains(out, "sk-e2e-model-key") {
				t.Fatal("the key reached the output")
			}

			st := teststore.OpenAt(t, data)
			defer st.Close()
			ctx := context.Background()
			runs, _, err := st.Runs(ctx, state.RunFilter{Limit: 10})
			if err != nil || len(runs) != 1 {
				t.Fatalf("runs %v %v", runs, err)
			}
			h := runs[0]
			if h.Status != state.StatusFailed || h.EndReason != tt.reason || !strings.Contains(h.Error, tt.cause) ||
				!strings.Contains(h.Error, `model "m" at `+host) || strings.ContainsAny(h.Error, "\n\r") {
				t.Fatalf("head %s (%s): %q", h.Status, h.EndReason, h.Error)
			}
			evs, err := st.Events(ctx, h.ID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			last := evs[len(evs)-1]
			var end struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal(last.Data, &end)
			if last.Type != "run" || last.Message != tt.reason || end.Error != h.Error {
				t.Fatalf("final event %+v", last)
			}
			coded := 0
			for _, ev := range evs {
				var d struct {
					Code string `json:"code"`
				}
				if ev.Type == "op" && ev.Kind == "generate" && json.Unmarshal(ev.Data, &d) == nil && d.Code == tt.reason {
					coded++
				}
			}
			if coded == 0 {
				t.Fatalf("no generate event carries code %s: %+v", tt.reason, evs)
			}
		})
	}

	t.Run("500 then 200", func(t *testing.T) {
		fake := newCountingModel(t, func(w http.ResponseWriter, n int32) {
			if n == 1 {
				answer(w, 500, `{"error":{"message":"boom"}}`)
				return
			}
			answer(w, 200, submitting)
		})
		code, out, _ := runCLI(t, "react", agentSettings("react", fake.URL+"/v1"))
		if code != 0 || fake.requests.Load() != 2 || !strings.Contains(out, "succeeded") {
			t.Fatalf("exit %d after %d requests:\n%s", code, fake.requests.Load(), out)
		}
	})
}

// TestEventStreamShowsAWaitInProgress starts a run whose model answers
// 429 with Retry-After 30 (within max_retry_wait_s), waits until the run
// head says it waits, and only then connects to the run's event stream:
// the client learns at once that the run waits, and for what, although
// the "waiting" event was sent before it came.
func TestEventStreamShowsAWaitInProgress(t *testing.T) {
	t.Setenv("FLOCK_E2E_MODEL_KEY", "sk-e2e-model-key-0123456789")
	fake := newCountingModel(t, func(w http.ResponseWriter, n int32) {
		if n == 1 {
			w.Header().Set("Retry-After", "30")
			answer(w, 429, `{"error":{"message":"slow down"}}`)
			return
		}
		answer(w, 200, submitting)
	})
	p := startServer(t, t.TempDir(), freePort(t))
	id := p.start("react", agentSettings("react", fake.URL+"/v1"))
	testkit.WaitWithin(t, 30*time.Second, "the run head to show the wait", func() bool {
		h := p.run(id)
		return len(h.Waiting) == 1 || h.Status != "running"
	})
	if h := p.run(id); len(h.Waiting) != 1 {
		t.Fatalf("head %+v", h)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		seen = append(seen, data)
		var ev struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Message string `json:"message"`
			OpID    string `json:"op_id"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "op" && ev.Status == "waiting" {
			if !strings.Contains(ev.Message, "rate limited by m (HTTP 429), retrying in ") || ev.OpID == "" {
				t.Fatalf("waiting event %s", data)
			}
			if _, err := p.c.Cancel(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			return
		}
		if ev.Type == "run" && (ev.Status == "succeeded" || ev.Status == "failed") {
			break
		}
	}
	t.Fatalf("the stream never said the run waits:\n%s", strings.Join(seen, "\n"))
}
