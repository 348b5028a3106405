package external_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/gateway"
	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
)

// fakeOpenAI is an OpenAI-compatible endpoint that, like vLLM with
// return_token_ids, returns the prompt's and the completion's token ids,
// and logprobs when asked. It counts the requests it answers.
type fakeOpenAI struct {
	calls atomic.Int64
	mu    sync.Mutex
	// keys are the Authorization headers it saw.
	keys map[string]int
	// bodies counts each request body (a call paid twice shows up as 2).
	bodies map[string]int
	// delay holds each answer; inflight and maxInflight count the requests
	// being answered at once.
	delay                 time.Duration
	inflight, maxInflight atomic.Int64
	// gate, when set, holds each answer until it is closed or the request
	// is cancelled (then it answers nothing); arrived gets each request as
	// it arrives.
	gate    chan struct{}
	arrived chan struct{}
}

func newFakeOpenAI(t testing.TB) (*fakeOpenAI, *httptest.Server) {
	f := &fakeOpenAI{keys: map[string]int{}, bodies: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model    string `json:"model"`
		Logprobs bool   `json:"logprobs"`
		N        int    `json:"n"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.calls.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(f.delay)
	if f.arrived != nil {
		f.arrived <- struct{}{}
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-r.Context().Done():
			return
		}
	}
	f.mu.Lock()
	f.keys[r.Header.Get("Authorization")]++
	f.bodies[string(body)]++
	f.mu.Unlock()
	last := req.Messages[len(req.Messages)-1].Content
	content := "echo: " + last
	var choices []map[string]any
	for i := range max(1, req.N) {
		ch := map[string]any{"index": i, "finish_reason": "stop", "token_ids": []int{101, 102, 103},
			"message": map[string]any{"role": "assistant", "content": content}}
		if req.Logprobs {
			ch["logprobs"] = map[string]any{"content": []map[string]any{
				{"token": "echo", "logprob": -0.25, "top_logprobs": []any{}},
				{"token": ":", "logprob": -0.5, "top_logprobs": []any{}},
				{"token": " x", "logprob": -1.0, "top_logprobs": []any{}}}}
		}
		choices = append(choices, ch)
	}
	resp := map[string]any{"id": "cmpl-fake", "object": "chat.completion", "model": req.Model,
		"prompt_token_ids": []int{1, 2, 3, len(req.Messages)}, "choices": choices,
		"usage": map[string]any{"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// session is an open gateway session held by an external run whose
// program only waits: the test plays the agent over HTTP.
type session struct {
	f      *flock
	runID  string
	url    string // OPENAI_BASE_URL
	token  string // OPENAI_API_KEY
	dir    string
	closed bool
}

// holdCommand writes the gateway's URL and token to gw.txt and waits
// for a file named done (then prints answer.txt's content as its answer).
const holdCommand = `printf '%s\n%s\n' "$OPENAI_BASE_URL" "$OPENAI_API_KEY" > gw.txt; while [ ! -e done ]; do sleep 0.02; done; printf '{"answer": "held"}\n'`

func openSession(t testing.TB, f *flock, settings map[string]any) *session {
	t.Helper()
	if settings == nil {
		settings = map[string]any{}
	}
	settings["command"] = holdCommand
	id := f.start("external", settings, "hold the session")
	dir := filepath.Join(f.app.Config.RunsDir(), id)
	var lines []string
	testkit.WaitWithin(t, 20*time.Second, "the program to write gw.txt", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "gw.txt"))
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return err == nil && len(lines) == 2
	})
	s := &session{f: f, runID: id, url: lines[0], token: lines[1], dir: dir}
	t.Cleanup(func() { s.finish(t) })
	return s
}

// finish lets the program end and waits for the external run.
func (s *session) finish(t testing.TB) state.Run {
	t.Helper()
	if !s.closed {
		s.closed = true
		writeFile(t, s.dir, "done", "")
	}
	return s.f.wait(s.runID, 30*time.Second)
}

func (s *session) chat(t testing.TB, body any, headers map[string]string) (int, []byte, http.Header) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + s.token}
	for k, v := range headers {
		h[k] = v
	}
	return post(t, s.url+"/chat/completions", body, h)
}

// TestGatewayAuthAndGuard checks that a session answers only its own
// token (401 otherwise, OpenAI-shaped), that the server's cross-site
// rules hold on the gateway route (a foreign Origin is 403, a text/plain
// body 415), and that the server's bearer token is neither needed nor
// enough there, while the rest of the API still requires it.
func TestGatewayAuthAndGuard(t *testing.T) {
	const serverToken = "server-token-0123456789"
	f := newFlock(t, func(c *configs.Server) { c.AuthToken = serverToken })
	s := openSession(t, f, nil)
	if !strings.HasPrefix(s.token, gateway.TokenPrefix) || strings.Contains(s.url, serverToken) {
		t.Fatalf("token %q url %q", s.token, s.url)
	}
	body := map[string]any{"model": "simulated", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	tests := []struct {
		name    string
		headers map[string]string
		body    any
		status  int
		errType string
	}{
		{"no token", map[string]string{"Authorization": ""}, body, 401, "authentication_error"},
		{"wrong token", map[string]string{"Authorization": "Bearer " + gateway.TokenPrefix + "nope"}, body, 401, "authentication_error"},
		{"server token", map[string]string{"Authorization": "Bearer " + serverToken}, body, 401, "authentication_error"},
		{"foreign origin", map[string]string{"Origin": "http://evil.example"}, body, 403, ""},
		{"text/plain body", map[string]string{"Content-Type": "text/plain"}, body, 415, ""},
		{"bad message role", nil, map[string]any{"messages": []any{map[string]any{"role": "robot", "content": "x"}}}, 400, "invalid_request_error"},
		{"no messages", nil, map[string]any{"model": "simulated"}, 400, "invalid_request_error"},
		{"session token", nil, body, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b, _ := s.chat(t, tt.body, tt.headers)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, b)
			}
			if strings.Contains(string(b), s.token) {
				t.Fatalf("the answer carries the session token: %s", b)
			}
			if tt.errType != "" {
				var e struct {
					Error struct {
						Message, Type string
					}
				}
				if json.Unmarshal(b, &e) != nil || e.Error.Type != tt.errType || e.Error.Message == "" {
					t.Fatalf("error = %s, want type %s", b, tt.errType)
				}
			}
		})
	}
	// The rest of the API still wants the server's token.
	req, _ := http.NewRequest("GET", f.base+"/runs", nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("GET /runs without the server token: %d", resp.StatusCode)
	}
	// /v1/models lists the session's models.
	req, _ = http.NewRequest("GET", s.url+"/models", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err = httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(mb), `"id":"simulated"`) {
		t.Fatalf("models: %d %s", resp.StatusCode, mb)
	}
	// Once the program has ended, its token opens nothing.
	s.finish(t)
	if code, b, _ := s.chat(t, body, nil); code != 401 {
		t.Fatalf("after the end: %d %s", code, b)
	}
}

// TestGatewayTokenIDsAndLogprobs drives the gateway against a fake
// OpenAI-compatible endpoint that returns token ids and logprobs: the
// answer carries them (logprobs only when asked), the journal keeps them,
// the episode's steps hold prompt and completion token ids and logprobs,
// the provider key never reaches the agent, and n > 1 answers n choices.
func TestGatewayTokenIDsAndLogprobs(t *testing.T) {
	fake, srv := newFakeOpenAI(t)
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-provider-secret-key")
	f := newFlock(t)
	s := openSession(t, f, map[string]any{"model": "fake",
		"models": map[string]any{"fake": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0,
			"input_price": 2.0, "output_price": 4.0}}})
	if strings.Contains(s.token, "sk-provider") {
		t.Fatal("the agent got the provider key")
	}
	msgs := []any{map[string]any{"role": "system", "content": "be brief"}, map[string]any{"role": "user", "content": "one"}}
	code, b, h := s.chat(t, map[string]any{"model": "whatever", "messages": msgs, "logprobs": true}, map[string]string{gateway.HeaderStepID: "my-step-1"})
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var resp struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
			TokenIDs     []int  `json:"token_ids"`
			Logprobs     *struct {
				Content []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
		PromptTokenIDs []int `json:"prompt_token_ids"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	c := resp.Choices[0]
	if resp.Model != "fake" || c.Message.Content != "echo: one" || c.FinishReason != "stop" || len(c.TokenIDs) != 3 ||
		c.Logprobs == nil || len(c.Logprobs.Content) != 3 || c.Logprobs.Content[1].Logprob != -0.5 ||
		len(resp.PromptTokenIDs) != 4 || resp.Usage.TotalTokens != 14 || h.Get(gateway.HeaderTraceID) == "" ||
		resp.ID != "chatcmpl-"+h.Get(gateway.HeaderTraceID) {
		t.Fatalf("answer %s (trace header %q)", b, h.Get(gateway.HeaderTraceID))
	}
	// Without logprobs asked, none come back; n = 2 gives two choices.
	code, b, _ = s.chat(t, map[string]any{"messages": append(msgs, map[string]any{"role": "user", "content": "two"}), "n": 2}, nil)
	if code != 200 || strings.Contains(string(b), `"logprobs":{`) || strings.Count(string(b), `"echo: two"`) != 2 {
		t.Fatalf("second call: %d %s", code, b)
	}
	fake.mu.Lock()
	for k := range fake.keys {
		if k != "Bearer sk-provider-secret-key" {
			t.Errorf("the endpoint saw Authorization %q", k)
		}
	}
	fake.mu.Unlock()
	end := s.finish(t)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("external run: %s %s", end.Status, end.Error)
	}
	// Usage and cost (11 prompt and 3 completion tokens per call, at 2 and
	// 4 $/M) reach the external run, once.
	if wantCost := 2 * (11*2.0 + 3*4.0) / 1e6; end.Usage.Tokens != 28 || math.Abs(end.Usage.Cost-wantCost) > 1e-12 {
		t.Fatalf("external run usage %+v, want 28 tokens and $%g", end.Usage, wantCost)
	}
	var ep grading.Episode
	b, err := os.ReadFile(filepath.Join(s.dir, "episode.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ep); err != nil {
		t.Fatal(err)
	}
	if err := ep.Validate(); err != nil {
		t.Fatal(err)
	}
	steps := ep.Trajectories[0].Steps
	if len(steps) != 2 || ep.Artifacts.Answer != "held" {
		t.Fatalf("episode %s", b)
	}
	s0 := steps[0]
	if fmt.Sprint(s0.PromptTokenIDs) != "[1 2 3 2]" || fmt.Sprint(s0.CompletionTokenIDs) != "[101 102 103]" ||
		fmt.Sprint(s0.Logprobs) != "[-0.25 -0.5 -1]" || s0.ModelResponse != "echo: one" ||
		len(s0.ChatCompletions) != 3 || s0.Info["step_id"] != "my-step-1" {
		t.Fatalf("step 0 = %+v", s0)
	}
	if steps[1].Logprobs != nil || fmt.Sprint(steps[1].CompletionTokenIDs) != "[101 102 103]" || steps[1].Info["n"] != float64(2) {
		t.Fatalf("step 1 = %+v", steps[1])
	}
	// The journal holds both calls as generate ops, with their token data,
	// and never the provider key.
	var sessionRun string
	var x struct {
		SessionRuns []string `json:"session_runs"`
	}
	ops, _ := f.app.Store.Ops(t.Context(), s.runID, "", 10)
	for _, op := range ops {
		if op.Request.Kind == operations.KindExternal && op.Result != nil {
			raw, _ := json.Marshal(op.Result.Data)
			_ = json.Unmarshal(raw, &x)
		}
	}
	if len(x.SessionRuns) != 1 {
		t.Fatalf("session runs %v", x.SessionRuns)
	}
	sessionRun = x.SessionRuns[0]
	sops, _ := f.app.Store.Ops(t.Context(), sessionRun, "", 100)
	gens := 0
	for _, op := range sops {
		raw, _ := json.Marshal(op)
		if bytes.Contains(raw, []byte("sk-provider-secret-key")) {
			t.Fatalf("the journal holds the provider key: %s", raw)
		}
		for _, g := range operations.Generates(op.Request, op.Result) {
			gens++
			if r := operations.Generate.Result(g.Result); r == nil || len(r.PromptTokenIDs) != 4 || len(r.Outputs[0].TokenIDs) != 3 {
				t.Fatalf("journaled call %s", raw)
			}
		}
	}
	if gens != 2 || fake.calls.Load() != 2 {
		t.Fatalf("%d generates journaled, %d endpoint calls; want 2 and 2", gens, fake.calls.Load())
	}
}

// TestGatewayStreamingAndTools streams a tool call and a text answer as
// SSE chunks with OpenAI's shapes (role chunk, deltas, tool-call deltas
// with index, finish, usage chunk, [DONE]).
func TestGatewayStreamingAndTools(t *testing.T) {
	f := newFlock(t)
	script := writeFile(t, f.dir, "script.jsonl",
		`{"match": "weather", "content": "", "tool_calls": [{"id": "call_w", "name": "get_weather", "arguments": {"city": "Paris"}}]}`+"\n"+
			`{"match": "sunny", "content": "It is sunny in Paris.", "reasoning": "the tool said so"}`+"\n")
	s := openSession(t, f, map[string]any{"model": "s", "models": map[string]any{"s": map[string]any{"provider": "scripted", "script": script}}})
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	msgs := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "What is the weather in Paris?"}}}}
	chunks := s.stream(t, map[string]any{"messages": msgs, "tools": tools, "tool_choice": "auto", "stream": true,
		"stream_options": map[string]any{"include_usage": true}})
	var name, args, finish, id string
	sawUsage := false
	for _, c := range chunks {
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", c.Object)
		}
		if c.Usage != nil {
			sawUsage = true
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || *tc.Index != 0 {
					t.Fatalf("tool call delta without index 0: %+v", tc)
				}
				if tc.ID != "" {
					id = tc.ID
				}
				name += tc.Function.Name
				args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if name != "get_weather" || args != `{"city":"Paris"}` || finish != "tool_calls" || id != "call_w" || !sawUsage {
		t.Fatalf("streamed tool call %q %q finish %q id %q usage %v", name, args, finish, id, sawUsage)
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
		"function": map[string]any{"name": name, "arguments": args}}}},
		map[string]any{"role": "tool", "tool_call_id": id, "content": "sunny"})
	chunks = s.stream(t, map[string]any{"messages": msgs, "tools": tools, "stream": true})
	var text, reasoning string
	for _, c := range chunks {
		if c.Usage != nil {
			t.Fatal("usage chunk without include_usage")
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			reasoning += ch.Delta.ReasoningContent
		}
	}
	if text != "It is sunny in Paris." || reasoning != "the tool said so" {
		t.Fatalf("streamed text %q reasoning %q", text, reasoning)
	}
}

type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent string  `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// openStream posts a streaming request to the session's path and returns
// the answer, failing t unless it is 200 with an event stream; the caller
// closes its body.
func (s *session) openStream(t *testing.T, path string, body any) *http.Response {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.url+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream %s: %d %s: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp
}

// stream posts a streaming request and reads its SSE chunks up to [DONE].
func (s *session) stream(t *testing.T, body any) []chunk {
	t.Helper()
	resp := s.openStream(t, "/chat/completions", body)
	defer resp.Body.Close()
	var out []chunk
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("SSE line %q", line)
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		out = append(out, c)
	}
	if !done {
		t.Fatal("the stream did not end with [DONE]")
	}
	return out
}

// TestGatewayRunLimit checks that the run's token limit applies to the
// agent's calls: once the session's run has spent it, calls get a 429
// naming limits.tokens, and the external run ends over its limit.
func TestGatewayRunLimit(t *testing.T) {
	f := newFlock(t)
	s := openSession(t, f, map[string]any{"model": "simulated", "limits": map[string]any{"tokens": 60}})
	msgs := []any{map[string]any{"role": "user", "content": strings.Repeat("a long question ", 20)}}
	code, b, _ := s.chat(t, map[string]any{"messages": msgs}, nil)
	if code != 200 {
		t.Fatalf("first call: %d %s", code, b)
	}
	var last []byte
	testkit.WaitWithin(t, 10*time.Second, "a call refused by the run's limit", func() bool {
		code, last, _ = s.chat(t, map[string]any{"messages": msgs}, nil)
		return code == 429
	})
	if !strings.Contains(string(last), "limits.tokens") || !strings.Contains(string(last), `"type":"insufficient_quota"`) {
		t.Fatalf("429 body %s", last)
	}
	end := s.finish(t)
	if end.Status == state.StatusSucceeded {
		t.Fatalf("external run succeeded over its limit: %+v", end)
	}
	if end.EndReason != "limit_tokens" {
		t.Fatalf("end reason %q (%s)", end.EndReason, end.Error)
	}
}

// TestGatewayModelLimits checks that flock's per-model limits govern the
// agent's calls: with max_concurrency 1, parallel calls reach the
// endpoint one at a time; with requests_per_minute 1 and a short
// max_retry_wait_s, a second call is refused with a 429 naming the limit.
func TestGatewayModelLimits(t *testing.T) {
	fake, srv := newFakeOpenAI(t)
	fake.delay = 200 * time.Millisecond
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-provider-secret-key")
	f := newFlock(t)
	model := func(extra map[string]any) map[string]any {
		m := map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	s := openSession(t, f, map[string]any{"model": "one", "models": map[string]any{
		"free": model(nil),
		"one":  model(map[string]any{"max_concurrency": 1}),
		"slow": model(map[string]any{"requests_per_minute": 1, "max_retry_wait_s": 0.2})}})
	parallel := func(model string) []int {
		var wg sync.WaitGroup
		codes := make([]int, 3)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, _ = s.chat(t, map[string]any{"model": model, "messages": []any{
					map[string]any{"role": "user", "content": fmt.Sprintf("%s %d", model, i)}}}, nil)
			}()
		}
		wg.Wait()
		return codes
	}
	// Without a limit, parallel calls overlap at the endpoint (the control).
	if codes := parallel("free"); fmt.Sprint(codes) != "[200 200 200]" || fake.maxInflight.Load() < 2 {
		t.Fatalf("free: codes %v, %d in flight at most; want 200s and at least 2", codes, fake.maxInflight.Load())
	}
	fake.maxInflight.Store(0)
	if codes := parallel("one"); fmt.Sprint(codes) != "[200 200 200]" || fake.maxInflight.Load() != 1 {
		t.Fatalf("max_concurrency 1: codes %v, %d in flight at most; want 200s and 1", codes, fake.maxInflight.Load())
	}
	msg := func(c string) map[string]any {
		return map[string]any{"model": "slow", "messages": []any{map[string]any{"role": "user", "content": c}}}
	}
	if code, b, _ := s.chat(t, msg("first"), nil); code != 200 {
		t.Fatalf("first slow call: %d %s", code, b)
	}
	code, b, _ := s.chat(t, msg("second"), nil)
	if code != 429 || !strings.Contains(string(b), "requests_per_minute") || !strings.Contains(string(b), `"type":"rate_limit_exceeded"`) {
		t.Fatalf("second slow call: %d %s", code, b)
	}
}

// TestGatewayOneCommitPerCall checks the cost of a call in the journal: a
// sequential agent's call is one commit of the store (its prompt and
// answer journaled together, in the gateway_wait op's result), and the
// prompt is stored once: the session run's journal holds each call's
// request in one place only.
func TestGatewayOneCommitPerCall(t *testing.T) {
	fake, srv := newFakeOpenAI(t)
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-test")
	f := newFlock(t)
	s := openSession(t, f, map[string]any{"model": "fake",
		"models": map[string]any{"fake": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0}}})
	stats := f.app.Store.(state.StatsReporter).Stats
	call := func(i int) {
		body := map[string]any{"model": "fake", "messages": []any{
			map[string]any{"role": "user", "content": fmt.Sprintf("unique prompt number %d", i)}}}
		if code, b, _ := s.chat(t, body, nil); code != 200 {
			t.Fatalf("call %d: %d %s", i, code, b)
		}
	}
	call(0) // the session run is at its steady state after the first call
	before := stats().Commits
	const n = 5
	for i := 1; i <= n; i++ {
		call(i)
	}
	// The last reply is sent once its commit is done; nothing else of the
	// session writes while the program waits.
	if got := stats().Commits - before; got != n {
		t.Fatalf("%d sequential calls made %d commits, want %d", n, got, n)
	}
	if fake.calls.Load() != n+1 {
		t.Fatalf("endpoint calls %d", fake.calls.Load())
	}
	end := s.finish(t)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("external run %s: %s", end.Status, end.Error)
	}
	x := externalResult(t, f, s.runID)
	if len(x.SessionRuns) != 1 {
		t.Fatalf("session runs %v", x.SessionRuns)
	}
	for i := 0; i <= n; i++ {
		// Quoted: the fake's reply ("echo: ...") holds the text too.
		prompt := []byte(fmt.Sprintf("%q", fmt.Sprintf("unique prompt number %d", i)))
		held := 0
		for _, op := range mustOps(t, f, x.SessionRuns[0]) {
			raw, _ := json.Marshal(op)
			held += bytes.Count(raw, prompt)
		}
		if held != 1 {
			t.Fatalf("prompt %d is journaled %d times, want once", i, held)
		}
	}
}

// externalResult returns the result of external run id's external op.
func externalResult(t testing.TB, f *flock, id string) operations.ExternalResult {
	t.Helper()
	var x operations.ExternalResult
	for _, op := range mustOps(t, f, id) {
		if op.Request.Kind == operations.KindExternal && op.Result != nil {
			raw, _ := json.Marshal(op.Result.Data)
			_ = json.Unmarshal(raw, &x)
		}
	}
	return x
}

// sessionCalls returns the model calls session run id journaled, in
// order.
func sessionCalls(t testing.TB, f *flock, id string) []operations.Generated {
	t.Helper()
	var gens []operations.Generated
	for _, op := range mustOps(t, f, id) {
		gens = append(gens, operations.Generates(op.Request, op.Result)...)
	}
	return gens
}

// mustOps reads the first page of run id's journal.
func mustOps(t testing.TB, f *flock, id string) []state.Op {
	t.Helper()
	ops, err := f.app.Store.Ops(t.Context(), id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestGatewayPauseRequeues pauses a session run while its gateway_wait
// op is answering a call: the op's result is not journaled, so the call
// goes back to the session's queue, and once the run is resumed the next
// op answers it: the agent gets its answer instead of waiting forever.
func TestGatewayPauseRequeues(t *testing.T) {
	fake, srv := newFakeOpenAI(t)
	fake.gate, fake.arrived = make(chan struct{}), make(chan struct{}, 4)
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-test")
	f := newFlock(t)
	s := openSession(t, f, map[string]any{"model": "fake",
		"models": map[string]any{"fake": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0}}})
	type answer struct {
		code int
		body []byte
	}
	done := make(chan answer, 1)
	go func() {
		code, b, _ := post(t, s.url+"/chat/completions", map[string]any{"model": "fake",
			"messages": []any{map[string]any{"role": "user", "content": "held call"}}}, map[string]string{"Authorization": "Bearer " + s.token})
		done <- answer{code, b}
	}()
	within := func(what string, c <-chan struct{}) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	within("the call to reach the endpoint", fake.arrived)
	sessionRun := s.url[len(f.base+"/gateway/") : len(s.url)-len("/v1")]
	ctx := t.Context()
	if err := f.app.Executor.Pause(ctx, sessionRun); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 20*time.Second, "the session run to be paused", func() bool {
		r, err := f.app.Store.Run(ctx, sessionRun)
		return err == nil && r.Status == state.StatusPaused
	})
	if err := f.app.Executor.Resume(ctx, sessionRun); err != nil {
		t.Fatal(err)
	}
	within("the resumed run's op to answer the call again", fake.arrived)
	close(fake.gate)
	var a answer
	select {
	case a = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the held call was never answered after the resume")
	}
	if a.code != 200 || !bytes.Contains(a.body, []byte("echo: held call")) {
		t.Fatalf("the held call got %d %s", a.code, a.body)
	}
}
