package external_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
)

// responses posts a Responses API request to the session.
func (s *session) responses(t *testing.T, body any) (int, []byte) {
	t.Helper()
	code, b, _ := post(t, s.url+"/responses", body, map[string]string{"Authorization": "Bearer " + s.token})
	return code, b
}

// responseEvent is one event of a streamed response.
type responseEvent struct {
	name string
	data map[string]any
}

// streamResponses posts a streamed Responses request and returns its
// events (SSE "event:" names with their JSON data).
func (s *session) streamResponses(t *testing.T, body map[string]any) []responseEvent {
	t.Helper()
	resp := s.openStream(t, "/responses", body)
	defer resp.Body.Close()
	var out []responseEvent
	var name string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("event data %q: %v", line, err)
			}
			out = append(out, responseEvent{name, d})
		}
	}
	return out
}

// TestGatewayResponsesAPI drives POST /v1/responses on the wire: a
// function tool called (a function_call item with its call_id), its
// output sent back as a function_call_output item continuing the
// response by previous_response_id, the streamed answer with a reasoning
// item (the Responses API's event types, in order, numbered), the
// journaled generates (one per call, the chained conversation as chat
// messages) and the requests refused with 400 naming the field.
func TestGatewayResponsesAPI(t *testing.T) {
	f := newFlock(t)
	script := writeFile(t, f.dir, "script.jsonl",
		`{"match": "weather in Paris", "tool_calls": [{"id": "call_w", "name": "get_weather", "arguments": {"city": "Paris"}}], "usage": {"prompt_tokens": 20, "completion_tokens": 5}}`+"\n"+
			`{"match": "sunny", "content": "It is sunny in Paris.", "reasoning": "the tool said sunny", "usage": {"prompt_tokens": 30, "completion_tokens": 6}}`+"\n"+
			`{"match": "cloudy", "content": "Cloudy in Rome.", "usage": {"prompt_tokens": 7, "completion_tokens": 3}}`+"\n")
	s := openSession(t, f, map[string]any{"model": "s", "models": map[string]any{"s": map[string]any{"provider": "scripted", "script": script}}})
	tools := []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather of a city.", "strict": true,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}

	code, b := s.responses(t, map[string]any{"model": "s", "instructions": "You answer about weather.",
		"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "What is the weather in Paris?"}}}},
		"tools": tools, "tool_choice": "auto", "store": false, "include": []any{}, "parallel_tool_calls": nil})
	if code != 200 {
		t.Fatalf("first: %d %s", code, b)
	}
	var first struct {
		ID, Object, Status string
		Output             []map[string]any
		Usage              struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			TotalTokens  int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal(b, &first); err != nil {
		t.Fatal(err)
	}
	if first.Object != "response" || first.Status != "completed" || !strings.HasPrefix(first.ID, "resp_") || len(first.Output) != 1 ||
		first.Usage.InputTokens != 20 || first.Usage.OutputTokens != 5 || first.Usage.TotalTokens != 25 {
		t.Fatalf("first response %s", b)
	}
	fc := first.Output[0]
	if fc["type"] != "function_call" || fc["call_id"] != "call_w" || fc["name"] != "get_weather" || fc["arguments"] != `{"city":"Paris"}` ||
		fc["status"] != "completed" {
		t.Fatalf("function_call item %v", fc)
	}

	// The tool's output continues the first response; streamed.
	events := s.streamResponses(t, map[string]any{"model": "s", "instructions": "You answer about weather.", "stream": true,
		"previous_response_id": first.ID, "tools": tools,
		"input": []any{map[string]any{"type": "function_call_output", "call_id": "call_w", "output": "sunny"}}})
	var names []string
	var text, reasoning string
	var done map[string]any
	for i, ev := range events {
		if ev.name != ev.data["type"] || ev.data["sequence_number"] != float64(i) {
			t.Fatalf("event %d: name %q, data %v", i, ev.name, ev.data)
		}
		names = append(names, ev.name)
		switch ev.name {
		case "response.output_text.delta":
			text += ev.data["delta"].(string)
		case "response.reasoning_summary_text.delta":
			reasoning += ev.data["delta"].(string)
		case "response.completed":
			done = ev.data["response"].(map[string]any)
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("events\n%v\nwant\n%v", names, want)
	}
	if text != "It is sunny in Paris." || reasoning != "the tool said sunny" || done == nil || done["status"] != "completed" ||
		done["previous_response_id"] != first.ID || len(done["output"].([]any)) != 2 {
		t.Fatalf("streamed: text %q reasoning %q done %v", text, reasoning, done)
	}

	// A whole turn sent back as items: its reasoning, the function call
	// and its output (as text parts) make one assistant message and one
	// tool message.
	code, b = s.responses(t, map[string]any{"model": "s", "input": []any{
		map[string]any{"type": "message", "role": "user", "content": "Weather in Rome?"},
		map[string]any{"type": "reasoning", "id": "rs_x", "summary": []any{map[string]any{"type": "summary_text", "text": "call the tool"}}},
		map[string]any{"type": "function_call", "id": "fc_x", "call_id": "call_r", "name": "get_weather", "arguments": `{"city":"Rome"}`, "status": "completed"},
		map[string]any{"type": "function_call_output", "call_id": "call_r", "output": []any{map[string]any{"type": "input_text", "text": "cloudy"}}},
	}})
	if code != 200 || !strings.Contains(string(b), "Cloudy in Rome.") {
		t.Fatalf("third: %d %s", code, b)
	}

	// Refusals.
	for _, tt := range []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"unknown previous response", map[string]any{"input": "hi", "previous_response_id": "resp_nope"}, "previous_response_id"},
		{"hosted tool", map[string]any{"input": "hi", "tools": []any{map[string]any{"type": "web_search"}}}, "tools[0].type"},
		{"image input", map[string]any{"input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "data:"}}}}}, "input[0].content"},
		{"item reference", map[string]any{"input": []any{map[string]any{"type": "item_reference", "id": "x"}}}, "input[0].type"},
		{"background", map[string]any{"input": "hi", "background": true}, "background"},
		{"chat field", map[string]any{"input": "hi", "messages": []any{}}, "messages"},
		{"no input", map[string]any{"model": "s"}, "input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, b := s.responses(t, tt.body)
			var e struct {
				Error struct{ Param, Type string }
			}
			_ = json.Unmarshal(b, &e)
			if code != 400 || e.Error.Param != tt.param || e.Error.Type != "invalid_request_error" {
				t.Fatalf("%d %s, want 400 naming %s", code, b, tt.param)
			}
		})
	}

	end := s.finish(t)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("external run %s: %s", end.Status, end.Error)
	}
	x := externalResult(t, f, s.runID)
	gens := sessionCalls(t, f, x.SessionRuns[0])
	if len(gens) != 3 {
		t.Fatalf("%d calls journaled, want 3", len(gens))
	}
	third := gens[2].Request.Messages
	if len(third) != 3 || third[1].Role != "assistant" || third[1].Reasoning != "call the tool" || third[1].ToolCalls[0].ID != "call_r" ||
		third[2].Role != "tool" || third[2].Content != "cloudy" {
		t.Fatalf("third call journaled as %+v", third)
	}
	msgs := gens[1].Request.Messages
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" || msgs[2].ToolCalls[0].ID != "call_w" || msgs[3].ToolCallID != "call_w" ||
		msgs[3].Content != "sunny" || len(gens[1].Request.Tools) != 1 || operations.Generate.Result(gens[1].Result).Outputs[0].Reasoning != "the tool said sunny" {
		t.Fatalf("second call journaled as %+v", gens[1].Request)
	}
	if x.Calls != 3 || x.Usage.Tokens != 71 {
		t.Fatalf("external result %+v", x)
	}
}
