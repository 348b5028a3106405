package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/testkit"
)

// triframeSettings are triframe settings on the simulated model.
func triframeSettings(extra map[string]any) json.RawMessage {
	s := map[string]any{
		"advisors": []any{map[string]any{"model": "simulated"}},
		"actors":   []any{map[string]any{"model": "simulated"}},
		"raters":   []any{map[string]any{"model": "simulated"}},
		"limits":   map[string]any{"actions": 12, "seconds": 120},
	}
	for k, v := range extra {
		s[k] = v
	}
	b, _ := json.Marshal(s)
	return b
}

func operatorClient(t *testing.T) *client.Client {
	t.Helper()
	_, base, _ := httpApp(t)
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTriframeAskHuman: triframe with ask_human on the simulated model
// asks a person to approve each chosen action (human op, choices approve
// and reject); a rejection is a warning to the agent and the action does
// not run; approvals let the run go on to its end.
func TestTriframeAskHuman(t *testing.T) {
	c := operatorClient(t)
	ctx := t.Context()
	st, err := c.Start(ctx, api.StartRequest{Workflow: "triframe", Task: "What is 6 times 7?",
		Settings: triframeSettings(map[string]any{"ask_human": true})})
	if err != nil {
		t.Fatal(err)
	}
	id := st.RunID
	answered := 0
	deadline := time.Now().Add(20 * time.Second)
	for {
		run, err := c.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != "running" {
			if run.Status != "succeeded" {
				t.Fatalf("run ended %s: %s %s", run.Status, run.EndReason, run.Error)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s after %d answers", run.Status, answered)
		}
		qs, err := c.Questions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(qs) == 0 {
			testkit.WaitFor(t, "a question or the end", func() bool {
				q, _ := c.Questions(ctx, id)
				r, _ := c.Run(ctx, id)
				return len(q) > 0 || r.Status != "running"
			})
			continue
		}
		q := qs[0]
		if q.Kind != "human" || strings.Join(q.Choices, ",") != "approve,reject" || !strings.HasPrefix(q.Question, "Approve the agent's next action?") {
			t.Fatalf("question %+v", q)
		}
		ans := "approve"
		if answered == 0 {
			ans = "reject"
		}
		if err := c.Answer(ctx, id, q.OpID, ans); err != nil {
			t.Fatalf("answer %d: %v", answered, err)
		}
		answered++
	}
	if answered < 2 {
		t.Fatalf("answered %d questions", answered)
	}
	ents, err := c.Entries(ctx, id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	rejected := false
	for _, e := range ents.Entries {
		rejected = rejected || e.Type == "warning" && strings.Contains(string(e.Data), "The operator rejected the action")
	}
	if !rejected {
		t.Errorf("no warning about the rejected action in the log")
	}
}

// TestTriframeIntervention: in intervention mode the run waits before its
// first action; the operator replaces it with a submission of their own,
// which the run executes (it ends submitted with the operator's answer).
func TestTriframeIntervention(t *testing.T) {
	c := operatorClient(t)
	ctx := t.Context()
	st, err := c.Start(ctx, api.StartRequest{Workflow: "triframe", Task: "What is 6 times 7?",
		Settings: triframeSettings(map[string]any{"intervention": true})})
	if err != nil {
		t.Fatal(err)
	}
	var qs []api.Question
	testkit.WaitFor(t, "the intervention", func() bool {
		qs, err = c.Questions(ctx, st.RunID)
		return err == nil && len(qs) == 1
	})
	if qs[0].Kind != "intervention" || !strings.Contains(string(qs[0].Action), `"name"`) {
		t.Fatalf("question %+v", qs[0])
	}
	err = c.Intervene(ctx, st.RunID, api.InterveneRequest{Action: json.RawMessage(`{"name":"submit","arguments":{"answer":"operator says 42"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	run, err := c.Wait(ctx2, st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "succeeded" || run.EndReason != "submitted" || !strings.Contains(string(run.Result), "operator says 42") {
		t.Fatalf("run %s %s result %s", run.Status, run.EndReason, run.Result)
	}
	ents, _ := c.Entries(ctx, st.RunID, 0, 1000)
	replaced := false
	for _, e := range ents.Entries {
		replaced = replaced || e.Type == "choice" && strings.Contains(string(e.Data), "replaced by the operator")
	}
	if !replaced {
		t.Errorf("no choice entry saying the operator replaced the action")
	}
}
