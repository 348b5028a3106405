package generate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/generate/simulated"
	"github.com/flockrun/flock/operations"
)

func TestOpenAIReplyMapping(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		check func(t *testing.T, g *operations.GenerateResult)
	}{
		{
			name: "tool calls parsed, invalid arguments kept raw",
			reply: `{"model":"test-model","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"thinking",
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},
				{"id":"call_2","type":"function","function":{"name":"submit","arguments":"{not json"}}]}}],
				"usage":{"prompt_tokens":12,"completion_tokens":7}}`,
			check: func(t *testing.T, g *operations.GenerateResult) {
				o := g.Outputs[0]
				want := []operations.ToolCall{{ID: "call_1", Name: "bash", Arguments: `{"command":"ls"}`}, {ID: "call_2", Name: "submit", Arguments: "{not json"}}
				if len(o.ToolCalls) != 2 || o.ToolCalls[0] != want[0] || o.ToolCalls[1] != want[1] {
					t.Fatalf("tool calls = %+v", o.ToolCalls)
				}
				if o.FinishReason != "tool_calls" || o.Content != "thinking" || g.Model != "test-model" {
					t.Fatalf("output = %+v", o)
				}
				if g.Usage.PromptTokens != 12 || g.Usage.CompletionTokens != 7 {
					t.Fatalf("usage = %+v", g.Usage)
				}
			},
		},
		{
			name:  "reasoning_content kept",
			reply: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"42","reasoning_content":"six times seven"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
			check: func(t *testing.T, g *operations.GenerateResult) {
				if g.Outputs[0].Reasoning != "six times seven" || g.Outputs[0].Content != "42" {
					t.Fatalf("output = %+v", g.Outputs[0])
				}
			},
		},
		{
			name:  "vllm reasoning and token ids kept",
			reply: `{"prompt_token_ids":[1,2],"choices":[{"index":0,"finish_reason":"stop","token_ids":[5,6,7],"message":{"role":"assistant","content":"ok","reasoning":"because"}}],"usage":{"prompt_tokens":1,"completion_tokens":3}}`,
			check: func(t *testing.T, g *operations.GenerateResult) {
				o := g.Outputs[0]
				if o.Reasoning != "because" || len(o.TokenIDs) != 3 || o.TokenIDs[2] != 7 {
					t.Fatalf("output = %+v", o)
				}
				if len(g.PromptTokenIDs) != 2 || g.PromptTokenIDs[1] != 2 {
					t.Fatalf("prompt token ids = %v", g.PromptTokenIDs)
				}
			},
		},
		{
			name: "logprobs kept",
			reply: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"},
				"logprobs":{"content":[{"token":"hi","logprob":-0.5,"top_logprobs":[{"token":"hi","logprob":-0.5},{"token":"yo","logprob":-1.5}]}]}}],
				"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
			check: func(t *testing.T, g *operations.GenerateResult) {
				lp := g.Outputs[0].Logprobs
				if len(lp) != 1 || lp[0].Token != "hi" || lp[0].Logprob != -0.5 || len(lp[0].Top) != 2 || lp[0].Top[1].Token != "yo" {
					t.Fatalf("logprobs = %+v", lp)
				}
			},
		},
		{
			name:  "refusal used when content is empty",
			reply: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","refusal":"I can't"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
			check: func(t *testing.T, g *operations.GenerateResult) {
				if g.Outputs[0].Content != "I can't" {
					t.Fatalf("output = %+v", g.Outputs[0])
				}
			},
		},
		{
			name:  "missing usage estimated",
			reply: `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"twelve chars"}}]}`,
			check: func(t *testing.T, g *operations.GenerateResult) {
				if g.Usage.PromptTokens == 0 || g.Usage.CompletionTokens != 3 {
					t.Fatalf("usage = %+v", g.Usage)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.reply))
			})
			h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
			g := mustGen(t, handle(t, h, liveSettings(fs, nil), operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
			if g.DurationMS < 0 {
				t.Fatalf("duration = %d", g.DurationMS)
			}
			tt.check(t, g)
		})
	}
}

func TestOpenAIRequestMapping(t *testing.T) {
	temp0 := 0.0
	temp07 := 0.7
	params := json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)
	base := operations.GenerateRequest{
		Model: "m",
		Messages: []operations.Message{
			{Role: operations.RoleSystem, Content: "sys"},
			{Role: operations.RoleUser, Content: "do it"},
			{Role: operations.RoleAssistant, Content: "", Reasoning: "secret thoughts", ToolCalls: []operations.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}},
			{Role: operations.RoleTool, Content: "a.txt", ToolCallID: "c1"},
		},
		Tools: []operations.Tool{{Name: "bash", Description: "run", Parameters: params}, {Name: "score"}},
	}
	tests := []struct {
		name  string
		tweak func(g *operations.GenerateRequest, m *configs.Model)
		check func(t *testing.T, body map[string]any)
	}{
		{
			name: "messages and tools",
			check: func(t *testing.T, b map[string]any) {
				msgs := b["messages"].([]any)
				if len(msgs) != 4 {
					t.Fatalf("messages = %v", msgs)
				}
				a := msgs[2].(map[string]any)
				tc := a["tool_calls"].([]any)[0].(map[string]any)
				fn := tc["function"].(map[string]any)
				if tc["id"] != "c1" || tc["type"] != "function" || fn["name"] != "bash" || fn["arguments"] != `{"command":"ls"}` {
					t.Fatalf("assistant tool call = %v", tc)
				}
				if _, ok := a["reasoning_content"]; ok {
					t.Fatal("reasoning must not be sent back")
				}
				if tm := msgs[3].(map[string]any); tm["role"] != "tool" || tm["tool_call_id"] != "c1" {
					t.Fatalf("tool message = %v", tm)
				}
				tools := b["tools"].([]any)
				f0 := tools[0].(map[string]any)["function"].(map[string]any)
				if f0["name"] != "bash" || f0["parameters"].(map[string]any)["required"].([]any)[0] != "command" {
					t.Fatalf("tool 0 = %v", f0)
				}
				f1 := tools[1].(map[string]any)["function"].(map[string]any)
				if f1["parameters"].(map[string]any)["type"] != "object" {
					t.Fatalf("tool without parameters = %v", f1)
				}
				for _, k := range []string{"tool_choice", "n", "temperature", "max_tokens", "max_completion_tokens", "logprobs"} {
					if _, ok := b[k]; ok {
						t.Errorf("%s sent though unset", k)
					}
				}
			},
		},
		{
			name:  "tool_choice auto",
			tweak: func(g *operations.GenerateRequest, _ *configs.Model) { g.ToolChoice = "auto" },
			check: func(t *testing.T, b map[string]any) {
				if b["tool_choice"] != "auto" {
					t.Fatalf("tool_choice = %v", b["tool_choice"])
				}
			},
		},
		{
			name:  "tool_choice required",
			tweak: func(g *operations.GenerateRequest, _ *configs.Model) { g.ToolChoice = "required" },
			check: func(t *testing.T, b map[string]any) {
				if b["tool_choice"] != "required" {
					t.Fatalf("tool_choice = %v", b["tool_choice"])
				}
			},
		},
		{
			name:  "tool_choice by name",
			tweak: func(g *operations.GenerateRequest, _ *configs.Model) { g.ToolChoice = "bash" },
			check: func(t *testing.T, b map[string]any) {
				tc := b["tool_choice"].(map[string]any)
				if tc["type"] != "function" || tc["function"].(map[string]any)["name"] != "bash" {
					t.Fatalf("tool_choice = %v", tc)
				}
			},
		},
		{
			name: "sampling fields",
			tweak: func(g *operations.GenerateRequest, _ *configs.Model) {
				g.N, g.Temperature, g.MaxTokens, g.Stop = 2, &temp07, 100, []string{"END"}
				g.ReasoningEffort, g.Logprobs, g.TopLogprobs = "low", true, 3
			},
			check: func(t *testing.T, b map[string]any) {
				if b["n"] != 2.0 || math.Abs(b["temperature"].(float64)-0.7) > 1e-6 || b["max_tokens"] != 100.0 ||
					b["stop"].([]any)[0] != "END" || b["reasoning_effort"] != "low" || b["logprobs"] != true || b["top_logprobs"] != 3.0 {
					t.Fatalf("body = %v", b)
				}
			},
		},
		{
			name:  "temperature zero is sent",
			tweak: func(g *operations.GenerateRequest, _ *configs.Model) { g.Temperature = &temp0 },
			check: func(t *testing.T, b map[string]any) {
				v, ok := b["temperature"].(float64)
				if !ok || v > 1e-6 {
					t.Fatalf("temperature = %v", b["temperature"])
				}
			},
		},
		{
			name: "reasoning model gets max_completion_tokens",
			tweak: func(g *operations.GenerateRequest, m *configs.Model) {
				g.MaxTokens = 50
				m.Name = "o3-mini"
			},
			check: func(t *testing.T, b map[string]any) {
				if b["max_completion_tokens"] != 50.0 || b["max_tokens"] != nil || b["model"] != "o3-mini" {
					t.Fatalf("body = %v", b)
				}
			},
		},
		{
			name: "tool image to a vision model",
			tweak: func(g *operations.GenerateRequest, m *configs.Model) {
				m.Vision = true
				g.Messages = withImages(g.Messages)
			},
			check: func(t *testing.T, b map[string]any) {
				msgs := b["messages"].([]any)
				roles := []string{}
				for _, m := range msgs {
					roles = append(roles, m.(map[string]any)["role"].(string))
				}
				// The images follow both answers of the assistant's turn.
				if strings.Join(roles, " ") != "system user assistant tool tool user" {
					t.Fatalf("roles = %v", roles)
				}
				if c := msgs[3].(map[string]any)["content"]; c != "[PNG image 1x1, 1 KB]" {
					t.Fatalf("tool content = %v", c)
				}
				parts := msgs[5].(map[string]any)["content"].([]any)
				intro := parts[0].(map[string]any)
				img := parts[1].(map[string]any)
				if intro["type"] != "text" || intro["text"] != "The image returned by vm:screenshot (call c1):" || img["type"] != "image_url" ||
					img["image_url"].(map[string]any)["url"] != "data:image/png;base64,"+onePixelPNG || len(parts) != 2 {
					t.Fatalf("image message = %v", parts)
				}
			},
		},
		{
			name:  "tool image to a text-only model",
			tweak: func(g *operations.GenerateRequest, _ *configs.Model) { g.Messages = withImages(g.Messages) },
			check: func(t *testing.T, b map[string]any) {
				msgs := b["messages"].([]any)
				if len(msgs) != 5 || strings.Contains(string(mustJSON(b)), "image_url") {
					t.Fatalf("messages = %v", msgs)
				}
				if c := msgs[3].(map[string]any)["content"]; c != "[PNG image 1x1, 1 KB]\n[1 image not shown: this model takes text only]" {
					t.Fatalf("tool content = %q", c)
				}
			},
		},
		{
			name: "only the latest images",
			tweak: func(g *operations.GenerateRequest, m *configs.Model) {
				m.Vision = true
				img := operations.Image{MediaType: "image/png", Data: onePixelPNG}
				g.Messages = append(g.Messages[:2:2], operations.Message{Role: operations.RoleUser, Content: "look",
					Images: []operations.Image{img, img, img, img, img}})
			},
			check: func(t *testing.T, b map[string]any) {
				msgs := b["messages"].([]any)
				parts := msgs[2].(map[string]any)["content"].([]any)
				if len(parts) != 1+3 || !strings.HasSuffix(parts[0].(map[string]any)["text"].(string), "[2 older image(s) not shown: only the latest 3 are sent]") {
					t.Fatalf("user message = %v", parts)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
				writeJSON(w, 200, textCompletion("ok"))
			})
			h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
			g := base
			s := liveSettings(fs, nil)
			m := s.Models["m"]
			if tt.tweak != nil {
				tt.tweak(&g, &m)
			}
			s.Models["m"] = m
			r := handle(t, h, s, g)
			if r.Error != "" {
				t.Fatal(r.Error)
			}
			if fs.auth[0] != "Bearer "+testKey {
				t.Fatalf("authorization = %q", fs.auth[0])
			}
			tt.check(t, fs.body(0))
		})
	}
}

func TestNEmulation(t *testing.T) {
	var mu sync.Mutex
	count := 0
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		mu.Lock()
		count++
		c := count
		mu.Unlock()
		writeJSON(w, 200, textCompletion("answer "+string(rune('0'+c))))
	})
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	g := mustGen(t, handle(t, h, liveSettings(fs, nil), operations.GenerateRequest{Model: "m", Messages: userMsg("hi"), N: 3}))
	if len(g.Outputs) != 3 || fs.requests() != 3 {
		t.Fatalf("outputs = %d, requests = %d", len(g.Outputs), fs.requests())
	}
	if fs.body(0)["n"] != 3.0 {
		t.Fatalf("first request n = %v", fs.body(0)["n"])
	}
	for i := 1; i < 3; i++ {
		if _, ok := fs.body(i)["n"]; ok {
			t.Fatalf("emulated request %d carries n", i)
		}
	}
	if g.Usage.PromptTokens != 30 || g.Usage.CompletionTokens != 15 {
		t.Fatalf("usage not merged: %+v", g.Usage)
	}
	seen := map[string]bool{}
	for _, o := range g.Outputs {
		seen[o.Content] = true
	}
	if len(seen) != 3 {
		t.Fatalf("outputs = %+v", g.Outputs)
	}
}

func TestNHonouredByEndpoint(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, body map[string]any) {
		r := textCompletion("x")
		n := int(body["n"].(float64))
		var ch []any
		for i := range n {
			ch = append(ch, map[string]any{"index": i, "message": map[string]any{"role": "assistant", "content": "x"}, "finish_reason": "stop"})
		}
		r["choices"] = ch
		writeJSON(w, 200, r)
	})
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	g := mustGen(t, handle(t, h, liveSettings(fs, nil), operations.GenerateRequest{Model: "m", Messages: userMsg("hi"), N: 4}))
	if len(g.Outputs) != 4 || fs.requests() != 1 {
		t.Fatalf("outputs = %d, requests = %d", len(g.Outputs), fs.requests())
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		timeoutS  float64
		reply     func(w http.ResponseWriter, n int)
		wantErr   []string // substrings of Result.Error; nil means success
		wantReqs  int
		minElapse time.Duration
	}{
		{
			name: "429 then success honours Retry-After",
			reply: func(w http.ResponseWriter, n int) {
				if n == 1 {
					w.Header().Set("Retry-After", "1")
					writeJSON(w, 429, apiError("slow down"))
					return
				}
				writeJSON(w, 200, textCompletion("ok"))
			},
			wantReqs:  2,
			minElapse: 900 * time.Millisecond,
		},
		{
			name: "500 twice then success",
			reply: func(w http.ResponseWriter, n int) {
				if n <= 2 {
					writeJSON(w, 500, apiError("boom"))
					return
				}
				writeJSON(w, 200, textCompletion("ok"))
			},
			wantReqs: 3,
		},
		{
			name: "502 html page retried until exhausted",
			reply: func(w http.ResponseWriter, _ int) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				_, _ = w.Write([]byte("<html><body>Bad Gateway</body></html>"))
			},
			wantErr:  []string{`model "m"`, "127.0.0.1", "HTTP 502", "after 4 attempts", "Bad Gateway"},
			wantReqs: 4,
		},
		{
			name: "400 not retried",
			reply: func(w http.ResponseWriter, _ int) {
				writeJSON(w, 400, apiError("bad field messages"))
			},
			wantErr:  []string{"HTTP 400", "after 1 attempt, not retried", "bad field messages"},
			wantReqs: 1,
		},
		{
			name:     "per-request timeout retried",
			timeoutS: 0.2,
			reply: func(w http.ResponseWriter, n int) {
				if n == 1 {
					time.Sleep(time.Second)
				}
				writeJSON(w, 200, textCompletion("ok"))
			},
			wantReqs: 2,
		},
		{
			name: "html page with 200 is malformed",
			reply: func(w http.ResponseWriter, _ int) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<!DOCTYPE html><html>login</html>"))
			},
			wantErr:  []string{"malformed reply", "HTTP 200", "not retried", "<!DOCTYPE html>"},
			wantReqs: 1,
		},
		{
			name: "truncated json is malformed",
			reply: func(w http.ResponseWriter, _ int) {
				_, _ = w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assist`))
			},
			wantErr:  []string{"malformed reply"},
			wantReqs: 1,
		},
		{
			name: "zero choices is malformed",
			reply: func(w http.ResponseWriter, _ int) {
				writeJSON(w, 200, map[string]any{"choices": []any{}})
			},
			wantErr:  []string{"malformed reply: no choices"},
			wantReqs: 1,
		},
		{
			name: "wrong json shape is malformed",
			reply: func(w http.ResponseWriter, _ int) {
				_, _ = w.Write([]byte(`{"choices":"nope"}`))
			},
			wantErr:  []string{"malformed reply"},
			wantReqs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, n int, _ map[string]any) { tt.reply(w, n) })
			h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
			s := liveSettings(fs, func(m *configs.Model) {
				if tt.timeoutS > 0 {
					m.TimeoutS = tt.timeoutS
				}
			})
			start := time.Now()
			r := handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi")})
			elapsed := time.Since(start)
			if tt.wantErr == nil {
				g := mustGen(t, r)
				if g.Outputs[0].Content != "ok" {
					t.Fatalf("outputs = %+v", g.Outputs)
				}
			} else {
				if r.Error == "" {
					t.Fatal("expected an error result")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(r.Error, w) {
						t.Errorf("error %q lacks %q", r.Error, w)
					}
				}
			}
			if got := fs.requests(); got != tt.wantReqs {
				t.Errorf("requests = %d, want %d", got, tt.wantReqs)
			}
			if elapsed < tt.minElapse {
				t.Errorf("elapsed %s < %s", elapsed, tt.minElapse)
			}
			if r.Meta["purpose"] != "test" || r.Kind != operations.KindGenerate {
				t.Errorf("kind/meta not kept: %+v", r)
			}
		})
	}
}

// TestConnectionDroppedRetried checks that a connection closed before
// any answer (a reset, a proxy restarting) is retried, unlike a refused
// one (TestFailureCodes).
func TestConnectionDroppedRetried(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, n int, _ map[string]any) {
		if n == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		writeJSON(w, 200, textCompletion("ok"))
	})
	h, logs := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	r := handle(t, h, liveSettings(fs, nil), operations.GenerateRequest{Model: "m", Messages: userMsg("hi")})
	if g := mustGen(t, r); g.Outputs[0].Content != "ok" || fs.requests() != 2 {
		t.Fatalf("result %+v after %d requests", r, fs.requests())
	}
	if n := strings.Count(logs.String(), "generate: retrying"); n != 1 {
		t.Fatalf("retry logs = %d:\n%s", n, logs.String())
	}
}

func TestCancelStopsRetries(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		w.Header().Set("Retry-After", "30")
		writeJSON(w, 503, apiError("busy"))
	})
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := h.Handle(ctx, handlers.Env{RunID: "r", Settings: liveSettings(fs, nil)}, genReq(operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
	if time.Since(start) > 5*time.Second || !strings.Contains(r.Error, "cancelled") {
		t.Fatalf("error = %q after %s", r.Error, time.Since(start))
	}
}

func TestMissingKey(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{})
	s := &configs.RunSettings{Models: map[string]configs.Model{
		"gpt-4o":    {},
		"local":     {BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "LOCAL_KEY"},
		"sim":       {Provider: "simulated"},
		"scripted":  {Provider: "scripted", Script: "/nonexistent/script.jsonl"},
		"unchecked": {},
	}}
	s.ApplyDefaults()
	err := h.CheckSettings(s, []string{"gpt-4o", "local", "sim", "simulated", "scripted"})
	if err == nil {
		t.Fatal("expected errors")
	}
	for _, w := range []string{
		`model "gpt-4o": environment variable OPENAI_API_KEY is not set`,
		`model "local": environment variable LOCAL_KEY is not set`,
		`model "scripted": invalid script`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "sim\"") || !errors.Is(err, ErrMissingKey) || !errors.Is(err, ErrScript) {
		t.Errorf("unexpected error %v", err)
	}
	r := handle(t, h, s, operations.GenerateRequest{Model: "gpt-4o", Messages: userMsg("hi")})
	if !strings.Contains(r.Error, "environment variable OPENAI_API_KEY is not set") {
		t.Fatalf("handle error = %q", r.Error)
	}
	if err := New(Options{Mode: ModeSimulated, Getenv: func(string) string { return "" }}).CheckSettings(s, []string{"gpt-4o", "undeclared"}); err != nil {
		t.Fatalf("simulated mode needs no key: %v", err)
	}
	h2, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": "k"})
	if err := h2.CheckSettings(nil, []string{"gpt-4o", "simulated"}); err != nil {
		t.Fatalf("undeclared with key: %v", err)
	}
}

func TestUndeclaredModelUsesEnvironment(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		writeJSON(w, 200, textCompletion("from env"))
	})
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": fs.URL + "/v1/"})
	g := mustGen(t, handle(t, h, nil, operations.GenerateRequest{Model: "gpt-4o-mini", Messages: userMsg("hi")}))
	if g.Outputs[0].Content != "from env" || fs.body(0)["model"] != "gpt-4o-mini" {
		t.Fatalf("got %+v, body %v", g, fs.body(0))
	}
}

func TestCost(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		r := textCompletion("ok")
		r["usage"] = map[string]any{"prompt_tokens": 1000, "completion_tokens": 500}
		writeJSON(w, 200, r)
	})
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	s := liveSettings(fs, func(m *configs.Model) { m.InputPrice, m.OutputPrice = 2.5, 10 })
	g := mustGen(t, handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
	want := 1000*2.5/1e6 + 500*10/1e6
	if math.Abs(g.Usage.Cost-want) > 1e-12 {
		t.Fatalf("cost = %v, want %v", g.Usage.Cost, want)
	}
}

func TestConcurrencyLimiter(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		time.Sleep(20 * time.Millisecond)
		writeJSON(w, 200, textCompletion("ok"))
	})
	h, _ := newTestHandlerWith(t, map[string]string{"OPENAI_API_KEY": testKey}, func(o *Options) {
		o.ModelLimits = map[string]configs.ModelLimits{"test-model": {MaxConcurrency: 1}}
	})
	s := liveSettings(fs, nil)
	var wg sync.WaitGroup
	errs := make([]string, 6)
	for i := range errs {
		wg.Go(func() {
			// Two runs share the server's limiter; n=2 adds an emulated call each.
			env := handlers.Env{RunID: []string{"a", "b"}[i%2], Settings: s}
			r := h.Handle(context.Background(), env, genReq(operations.GenerateRequest{Model: "m", Messages: userMsg("hi"), N: 2}))
			errs[i] = r.Error
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	if fs.maxIn != 1 || fs.requests() != 12 {
		t.Fatalf("max in flight = %d, requests = %d", fs.maxIn, fs.requests())
	}
}

func TestBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	b := newBucket(60, clock) // one per second, burst 1
	if d := b.reserve(); d != 0 {
		t.Fatalf("first wait = %s", d)
	}
	if d := b.reserve(); d != time.Second {
		t.Fatalf("second wait = %s", d)
	}
	if d := b.reserve(); d != 2*time.Second {
		t.Fatalf("third wait = %s", d)
	}
	now = now.Add(10 * time.Second)
	if d := b.reserve(); d != 0 {
		t.Fatalf("after idle = %s", d)
	}
	b = newBucket(600, clock) // burst 10, then 100ms apart
	for i := range 10 {
		if d := b.reserve(); d != 0 {
			t.Fatalf("burst %d waits %s", i, d)
		}
	}
	if d := b.reserve(); d != 100*time.Millisecond {
		t.Fatalf("after burst = %s", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newBucket(1, time.Now).wait(ctx); err == nil {
		t.Fatal("wait on a cancelled ctx must fail")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"http date", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"milliseconds header wins", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"absent", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hd := http.Header{}
			for k, v := range tt.header {
				hd.Set(k, v)
			}
			got, ok := parseRetryAfter(hd, now)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("got %s %v, want %s %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSimulatedModeRoutesOpenAIModels(t *testing.T) {
	h := New(Options{Mode: ModeSimulated, Getenv: func(string) string { return "" }})
	s := &configs.RunSettings{Models: map[string]configs.Model{"gpt-4o": {BaseURL: "http://127.0.0.1:1/v1"}}}
	s.ApplyDefaults()
	g := mustGen(t, handle(t, h, s, operations.GenerateRequest{Model: "gpt-4o", Messages: userMsg("hello")}))
	if g.Model != simulated.Model || len(g.Outputs) != 1 || g.Outputs[0].Content == "" {
		t.Fatalf("got %+v", g)
	}
}

func TestBadRequests(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	tests := []struct {
		name string
		req  operations.Request
		want string
	}{
		{"no payload", operations.Request{Kind: operations.KindGenerate}, "missing operation params"},
		{"no model", genReq(operations.GenerateRequest{Messages: userMsg("x")}), "model is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.Handle(context.Background(), handlers.Env{}, tt.req)
			if !strings.Contains(r.Error, tt.want) {
				t.Fatalf("error = %q", r.Error)
			}
		})
	}
}

// onePixelPNG is a 1x1 PNG, base64.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// withImages answers the base request's tool call with a screenshot and
// adds a second call and answer in the same turn.
func withImages(msgs []operations.Message) []operations.Message {
	out := append([]operations.Message(nil), msgs[:2]...)
	out = append(out,
		operations.Message{Role: operations.RoleAssistant, ToolCalls: []operations.ToolCall{{ID: "c1", Name: "vm-screenshot", Arguments: "{}"}, {ID: "c2", Name: "bash", Arguments: `{"command":"ls"}`}}},
		operations.Message{Role: operations.RoleTool, ToolCallID: "c1", Content: "[PNG image 1x1, 1 KB]",
			Images: []operations.Image{{MediaType: "image/png", Data: onePixelPNG, Source: "vm:screenshot"}}},
		operations.Message{Role: operations.RoleTool, ToolCallID: "c2", Content: "a.txt"})
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
