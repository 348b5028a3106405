package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
)

// TestReplay records a triframe run on the simulated model, then reruns
// it with replay_from and the model declared as a script whose every line
// fails: every generate is a hit (the live model is never called, no
// tokens are paid) and the run ends as the recording did. A rerun with
// advising off changes the later prompts: those are misses that fall back
// to the live (simulated) model, and the first actor prompt, unchanged, is
// still a hit.
func TestReplay(t *testing.T) {
	_, base, dir := httpApp(t)
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	run := func(task string, settings map[string]any) api.Run {
		t.Helper()
		st, err := c.Start(ctx, api.StartRequest{Workflow: "triframe", Task: task, Settings: triframeSettings(settings)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Wait(ctx, st.RunID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	model := func(decl map[string]any) map[string]any {
		return map[string]any{
			"models":     map[string]any{"m": decl},
			"advisors":   []any{map[string]any{"model": "m"}},
			"actors":     []any{map[string]any{"model": "m"}},
			"raters":     []any{map[string]any{"model": "m"}},
			"limit_type": "action",
		}
	}
	simulated := map[string]any{"provider": "simulated"}
	// The recording: a scripted model advises, has the agent run a
	// command whose output does not depend on the run, then submit.
	recScript := filepath.Join(dir, "record.jsonl")
	lines := []string{
		`{"tool_calls":[{"name":"advise","arguments":{"advice":"Compute it with the shell."}}]}`,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"echo $((6*7))"}}]}`,
		`{"tool_calls":[{"name":"bash","arguments":{"command":"echo $((6*7))"}}]}`,
		`{"tool_calls":[{"name":"advise","arguments":{"advice":"Submit what the shell said."}}]}`,
		`{"tool_calls":[{"name":"submit","arguments":{"answer":"42"}}]}`,
		`{"tool_calls":[{"name":"submit","arguments":{"answer":"42"}}]}`,
	}
	if err := os.WriteFile(recScript, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := run("What is 6 times 7?", model(map[string]any{"provider": "scripted", "script": recScript}))
	if rec.Status != "succeeded" || rec.Usage.Tokens == 0 || string(rec.Result) != `"42"` {
		t.Fatalf("recording: %s %s %s, %d tokens, result %s", rec.Status, rec.EndReason, rec.Error, rec.Usage.Tokens, rec.Result)
	}
	ops, err := c.Ops(ctx, rec.ID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	generates := 0
	for _, op := range ops.Ops {
		if op.Request.Type == "generate" {
			generates++
		}
	}

	script := filepath.Join(dir, "fail.jsonl")
	if err := os.WriteFile(script, []byte(strings.Repeat(`{"error":"the live model was called"}`+"\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := model(map[string]any{"provider": "scripted", "script": script})
	s["replay_from"] = rec.ID
	re := run("What is 6 times 7?", s)
	if re.Status != "succeeded" || string(re.Result) != string(rec.Result) {
		t.Fatalf("replay: %s %s %s, result %s (recorded %s)", re.Status, re.EndReason, re.Error, re.Result, rec.Result)
	}
	if re.Usage.ReplayHits != generates || re.Usage.ReplayMisses != 0 || re.Usage.Tokens != 0 {
		t.Errorf("replay usage %+v, want %d hits, no misses, no tokens", re.Usage, generates)
	}
	// The op events say hit.
	evs, err := c.Events(ctx, re.ID, client.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for {
		ev, err := evs.Next()
		if err != nil {
			break
		}
		var d struct {
			Replay string `json:"replay"`
		}
		if ev.Type == "op" && json.Unmarshal(ev.Data, &d) == nil && d.Replay == "hit" {
			hits++
		}
	}
	evs.Close()
	if hits != generates {
		t.Errorf("%d op events say replay hit, want %d", hits, generates)
	}

	// Advising off: the later prompts differ (misses, answered live), the
	// first actor prompt does not (a hit).
	s = model(simulated)
	s["replay_from"] = rec.ID
	s["enable_advising"] = false
	mixed := run("What is 6 times 7?", s)
	if mixed.Status != "succeeded" || mixed.Usage.ReplayHits == 0 || mixed.Usage.ReplayMisses == 0 || mixed.Usage.Tokens == 0 {
		t.Errorf("changed rerun: %s %s, usage %+v; want hits and misses, tokens for the misses", mixed.Status, mixed.EndReason, mixed.Usage)
	}
	t.Logf("recorded %d generates; replay %+v; changed rerun %+v", generates, re.Usage, mixed.Usage)
}
