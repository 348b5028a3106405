package generate

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/operations"
)

// TestResponsesAPIEndpoint checks a model whose settings say its endpoint
// has the Responses API (api: responses): the generate is sent as POST
// /responses with the conversation as input items, inline function tools,
// the reasoning effort with a summary asked, logprobs through include and
// top_logprobs, extras as they are; the answer's reasoning, text,
// logprobs, function call and usage come back as the generate's output,
// and an answer cut by its token cap finishes with "length".
func TestResponsesAPIEndpoint(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	var paths []string
	reply := map[string]any{"id": "resp_1", "object": "response", "status": "completed", "model": "test-model",
		"output": []any{
			map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{map[string]any{"type": "summary_text", "text": "need the weather"}}},
			map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": []any{
				map[string]any{"type": "output_text", "text": "Checking.", "annotations": []any{}, "logprobs": []any{
					map[string]any{"token": "Checking", "logprob": -0.5, "top_logprobs": []any{map[string]any{"token": "Looking", "logprob": -1.5}}},
					map[string]any{"token": ".", "logprob": -0.25, "top_logprobs": []any{map[string]any{"token": "!", "logprob": -2.0}}}}}}},
			map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "get_weather", "arguments": `{"city":"Oslo"}`, "status": "completed"}},
		"usage": map[string]any{"input_tokens": 40, "output_tokens": 12, "total_tokens": 52}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		bodies, paths = append(bodies, body), append(paths, r.URL.Path)
		n := len(bodies)
		mu.Unlock()
		if n == 2 {
			writeJSON(w, http.StatusOK, map[string]any{"id": "resp_2", "object": "response", "status": "incomplete",
				"incomplete_details": map[string]any{"reason": "max_output_tokens"}, "model": "test-model",
				"output": []any{map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "Par"}}}},
				"usage":  map[string]any{"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}})
			return
		}
		writeJSON(w, http.StatusOK, reply)
	}))
	t.Cleanup(srv.Close)
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	retries := 0
	s := &configs.RunSettings{Models: map[string]configs.Model{"m": {Provider: "openai", Name: "test-model", BaseURL: srv.URL + "/v1",
		MaxRetries: &retries, TimeoutS: 5, API: configs.APIResponses}}}
	s.ApplyDefaults()
	temp := 0.5
	g := operations.GenerateRequest{Model: "m", Temperature: &temp, MaxTokens: 100, ReasoningEffort: "low", Logprobs: true, TopLogprobs: 1,
		ToolChoice: "get_weather", Extra: map[string]json.RawMessage{"top_k": json.RawMessage("3")},
		Tools: []operations.Tool{{Name: "get_weather", Description: "Weather.", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Messages: []operations.Message{
			{Role: operations.RoleSystem, Content: "Be brief."},
			{Role: operations.RoleUser, Content: "Weather in Oslo?"},
			{Role: operations.RoleAssistant, ToolCalls: []operations.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
			{Role: operations.RoleTool, ToolCallID: "call_1", Content: "rain"},
		}}
	got := mustGen(t, handle(t, h, s, g))
	b := bodies[0]
	if paths[0] != "/v1/responses" {
		t.Fatalf("path %s", paths[0])
	}
	wantInput := []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": "Weather in Oslo?"},
		map[string]any{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": `{"city":"Oslo"}`},
		map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "rain"},
	}
	if !reflect.DeepEqual(b["input"], wantInput) {
		t.Errorf("input %v", b["input"])
	}
	wantTools := []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather.", "parameters": map[string]any{"type": "object"}}}
	if !reflect.DeepEqual(b["tools"], wantTools) || !reflect.DeepEqual(b["tool_choice"], map[string]any{"type": "function", "name": "get_weather"}) {
		t.Errorf("tools %v, tool_choice %v", b["tools"], b["tool_choice"])
	}
	if !reflect.DeepEqual(b["reasoning"], map[string]any{"effort": "low", "summary": "auto"}) || b["top_logprobs"] != float64(1) ||
		!reflect.DeepEqual(b["include"], []any{"message.output_text.logprobs"}) || b["max_output_tokens"] != float64(100) ||
		b["store"] != false || b["top_k"] != float64(3) || b["temperature"] != 0.5 || b["model"] != "test-model" || b["messages"] != nil {
		t.Errorf("request %v", b)
	}
	o := got.Outputs[0]
	want := operations.Output{Content: "Checking.", Reasoning: "need the weather", FinishReason: "tool_calls",
		ToolCalls: []operations.ToolCall{{ID: "call_9", Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		Logprobs: []operations.Logprob{{Token: "Checking", Logprob: -0.5, Top: []operations.TopProb{{Token: "Looking", Logprob: -1.5}}},
			{Token: ".", Logprob: -0.25, Top: []operations.TopProb{{Token: "!", Logprob: -2.0}}}}}
	if !reflect.DeepEqual(o, want) || got.Usage.PromptTokens != 40 || got.Usage.CompletionTokens != 12 {
		t.Fatalf("result %+v, usage %+v", o, got.Usage)
	}

	cut := mustGen(t, handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("capital of France?"), MaxTokens: 1}))
	if cut.Outputs[0].Content != "Par" || cut.Outputs[0].FinishReason != "length" {
		t.Fatalf("incomplete answer %+v", cut.Outputs[0])
	}
}
