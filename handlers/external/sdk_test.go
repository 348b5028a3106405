package external_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
)

// TestOpenAINodeSDK is the real-client check: an agent written with the
// official OpenAI SDK for Node (npm install openai) runs as an external
// agent and calls the gateway non-streaming with a tool, streaming with
// usage, through the SDK's stream helper (tool-call deltas assembled),
// lists the models and sees a wrong key refused with 401.
func TestOpenAINodeSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("npm install skipped in -short mode")
	}
	node, modules := testkit.NPMInstall(t, "openai")
	f := newFlock(t)
	script := writeFile(t, f.dir, "script.jsonl", strings.Join([]string{
		`{"match": "2+3? (again)", "tool_calls": [{"id": "call_h", "name": "calculator", "arguments": {"expression": "2+3"}}]}`,
		`{"match": "What is 2+3?", "tool_calls": [{"id": "call_1", "name": "calculator", "arguments": {"expression": "2+3"}}], "usage": {"prompt_tokens": 30, "completion_tokens": 8}}`,
		`{"match": "5", "content": "The answer is 5.", "usage": {"prompt_tokens": 50, "completion_tokens": 5}}`,
	}, "\n")+"\n")
	_, file, _, _ := runtimeCaller()
	agent := filepath.Join(filepath.Dir(file), "testdata", "sdk_agent.js")
	id := f.start("external", map[string]any{"command": []string{node, agent}, "model": "scripted",
		"env":    map[string]string{"NODE_PATH": modules},
		"models": map[string]any{"scripted": map[string]any{"provider": "scripted", "script": script}}}, "What is 2+3?")
	end := f.wait(id, 60*time.Second)
	dir := filepath.Join(f.app.Config.RunsDir(), id)
	if end.Status != state.StatusSucceeded {
		b, _ := os.ReadFile(filepath.Join(dir, "episode.json"))
		t.Fatalf("external run %s: %s %s\n%s", end.Status, end.EndReason, end.Error, b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		First struct {
			ID, Finish, Tool, Args string
			Usage                  struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Stream struct {
			Text, Finish string
			Chunks       int
			Usage        *struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		Helper struct{ Tool, Args string }
		Models []string
		BadKey struct {
			Status int
			Type   string
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.First.Finish != "tool_calls" || got.First.Tool != "calculator" || got.First.Args != `{"expression":"2+3"}` ||
		got.First.Usage.TotalTokens != 38 || !strings.HasPrefix(got.First.ID, "chatcmpl-") {
		t.Errorf("non-streaming: %+v", got.First)
	}
	if got.Stream.Text != "The answer is 5." || got.Stream.Finish != "stop" || got.Stream.Usage == nil ||
		got.Stream.Usage.TotalTokens != 55 || got.Stream.Chunks < 3 {
		t.Errorf("streaming: %+v", got.Stream)
	}
	if got.Helper.Tool != "calculator" || got.Helper.Args != `{"expression":"2+3"}` {
		t.Errorf("stream helper: %+v", got.Helper)
	}
	if len(got.Models) != 1 || got.Models[0] != "scripted" {
		t.Errorf("models: %v", got.Models)
	}
	if got.BadKey.Status != 401 {
		t.Errorf("wrong key: %+v", got.BadKey)
	}
	var ep grading.Episode
	eb, _ := os.ReadFile(filepath.Join(dir, "episode.json"))
	if err := json.Unmarshal(eb, &ep); err != nil {
		t.Fatal(err)
	}
	steps := ep.Trajectories[0].Steps
	if ep.Artifacts.Answer != "The answer is 5." || len(steps) != 3 || steps[1].ModelResponse != "The answer is 5." ||
		steps[0].ID != strings.TrimPrefix(got.First.ID, "chatcmpl-") {
		t.Fatalf("episode %s", eb)
	}
}

// TestOpenAIAgentsSDK is the Responses API's real-client check: an agent
// written with the OpenAI Agents SDK for JavaScript (npm @openai/agents)
// on its default settings, which call POST /v1/responses, runs as an
// external agent: a function tool round trip (function_call, then
// function_call_output) not streamed and streamed, then a run continuing
// the first by previous_response_id. Each call is journaled as a
// generate of the session run, and the episode holds one step per call.
func TestOpenAIAgentsSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("npm install skipped in -short mode")
	}
	node, modules := testkit.NPMInstall(t, "@openai/agents", "zod")
	f := newFlock(t)
	script := writeFile(t, f.dir, "script.jsonl", strings.Join([]string{
		`{"match": "What is 2+3?", "tool_calls": [{"id": "call_a", "name": "calculator", "arguments": {"expression": "2+3"}}], "usage": {"prompt_tokens": 30, "completion_tokens": 8}}`,
		`{"match": "5", "content": "The answer is 5.", "usage": {"prompt_tokens": 50, "completion_tokens": 5}}`,
		`{"match": "4*5", "tool_calls": [{"id": "call_b", "name": "calculator", "arguments": {"expression": "4*5"}}]}`,
		`{"match": "20", "content": "The answer is 20.", "reasoning": "the calculator said 20"}`,
		`{"match": "doubled", "content": "Doubled, it is 10."}`,
	}, "\n")+"\n")
	_, file, _, _ := runtimeCaller()
	agent := filepath.Join(filepath.Dir(file), "testdata", "agents_sdk_agent.js")
	id := f.start("external", map[string]any{"command": []string{node, agent}, "model": "scripted",
		// No tracing export: it would send the session's token to OpenAI.
		"env":    map[string]string{"NODE_PATH": modules, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
		"models": map[string]any{"scripted": map[string]any{"provider": "scripted", "script": script}}}, "What is 2+3?")
	end := f.wait(id, 90*time.Second)
	dir := filepath.Join(f.app.Config.RunsDir(), id)
	if end.Status != state.StatusSucceeded {
		x := externalResult(t, f, id)
		t.Fatalf("external run %s: %s %s\n%s", end.Status, end.EndReason, end.Error, x.Stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "agents_sdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plain struct {
			Final          string
			LastResponseID string `json:"lastResponseId"`
			Items          []string
		}
		Stream struct {
			Final, Text   string
			Events, Items []string
		}
		Chained   struct{ Final string }
		ToolCalls []string
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	wantItems := "tool_call_item tool_call_output_item message_output_item"
	if got.Plain.Final != "The answer is 5." || !strings.HasPrefix(got.Plain.LastResponseID, "resp_") ||
		strings.Join(got.Plain.Items, " ") != wantItems {
		t.Errorf("not streamed: %+v", got.Plain)
	}
	if got.Stream.Final != "The answer is 20." || got.Stream.Text != "The answer is 20." ||
		strings.Join(got.Stream.Items, " ") != "tool_call_item tool_call_output_item reasoning_item message_output_item" ||
		!slices.Contains(got.Stream.Events, "response.completed") || !slices.Contains(got.Stream.Events, "response.function_call_arguments.done") ||
		!slices.Contains(got.Stream.Events, "response.reasoning_summary_text.delta") {
		t.Errorf("streamed: %+v", got.Stream)
	}
	if got.Chained.Final != "Doubled, it is 10." || strings.Join(got.ToolCalls, ",") != "2+3,4*5" {
		t.Errorf("chained %+v, tool calls %v", got.Chained, got.ToolCalls)
	}

	// Journaled as generates of the session run, exactly as chat calls.
	x := externalResult(t, f, id)
	gens := sessionCalls(t, f, x.SessionRuns[0])
	if len(gens) != 5 || x.Calls != 5 {
		t.Fatalf("%d calls journaled (%d in the result), want 5", len(gens), x.Calls)
	}
	second := gens[1].Request.Messages
	if len(second) != 4 || second[0].Role != "system" || second[2].ToolCalls[0].ID != "call_a" || second[3].ToolCallID != "call_a" ||
		second[3].Content != "5" || len(gens[1].Request.Tools) != 1 || gens[1].Request.Tools[0].Name != "calculator" {
		t.Errorf("the tool round trip journaled as %+v", gens[1].Request)
	}
	// The chained run's prompt holds the first run's conversation.
	chained := gens[4].Request.Messages
	var roles []string
	for _, m := range chained {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,assistant,user" || chained[4].Content != "The answer is 5." ||
		chained[5].Content != "And doubled?" {
		t.Errorf("previous_response_id gave the prompt %v: %+v", roles, chained)
	}
	var ep grading.Episode
	eb, _ := os.ReadFile(filepath.Join(dir, "episode.json"))
	if err := json.Unmarshal(eb, &ep); err != nil {
		t.Fatal(err)
	}
	if steps := ep.Trajectories[0].Steps; len(steps) != 5 || steps[1].ModelResponse != "The answer is 5." ||
		steps[3].Reasoning != "the calculator said 20" {
		t.Fatalf("episode %s", eb)
	}
}
