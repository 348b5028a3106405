package e2e

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

// TestOperatorAcrossKill drives the operator controls of the real binary:
// `flock serve` (simulated mode, a bearer token) runs triframe with
// ask_human; `flock runs questions` lists its question; the server is
// killed with SIGKILL while the run waits; a new server on the same data
// directory resumes the run, still waiting, and `flock runs answer`
// answers it over HTTP; the run goes on to its end (approving whatever it
// asks next), and `flock runs fork --step 3` forks it into a run that
// finishes too.
func TestOperatorAcrossKill(t *testing.T) {
	const token = "operator-e2e-token-0123456789"
	data := t.TempDir()
	addr := freePort(t)
	p := startServer(t, data, addr, "--mode", "simulated", "--auth-token", token)
	c, err := client.New(p.base, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	settings := json.RawMessage(`{"actors":[{"model":"simulated"}],"raters":[{"model":"simulated"}],"ask_human":true,"limits":{"actions":10,"seconds":120}}`)
	st, err := c.Start(ctx, api.StartRequest{Workflow: "triframe", Task: "What is 6 times 7?", Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	id := st.RunID
	runs := func(args ...string) (int, string, string) {
		t.Helper()
		return flock(t, append(append([]string{"runs"}, args...), "--server", p.base, "--token", token)...)
	}
	question := func() (api.Question, bool) {
		code, out, _ := runs("questions", id)
		if code != 0 || !strings.Contains(out, `"op_id"`) {
			return api.Question{}, false
		}
		var q api.Question
		err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &q)
		return q, err == nil
	}
	var q api.Question
	testkit.WaitWithin(t, 30*time.Second, "the run's first question", func() bool {
		var ok bool
		q, ok = question()
		return ok
	})

	p.kill()
	p = startServer(t, data, addr, "--mode", "simulated", "--auth-token", token)
	q2, ok := question()
	if !ok || q2.OpID != q.OpID {
		t.Fatalf("after the restart: question %+v (%v), want %s", q2, ok, q.OpID)
	}
	if code, out, errs := runs("answer", id, q.OpID, "approve"); code != 0 || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("answer: %d %s %s", code, out, errs)
	}
	if code, _, errs := runs("answer", id, q.OpID, "approve"); code != 1 || !strings.Contains(errs, "answered already") {
		t.Errorf("second answer: %d %s", code, errs)
	}
	// finish approves whatever run id asks until it ends.
	finish := func(id string) api.Run {
		t.Helper()
		var r api.Run
		testkit.WaitWithin(t, 60*time.Second, "the end of run "+id, func() bool {
			if qs, err := c.Questions(ctx, id); err == nil && len(qs) > 0 {
				_ = c.Answer(ctx, id, qs[0].OpID, "approve")
			}
			r, err = c.Run(ctx, id)
			return err == nil && r.Status != "running"
		})
		return r
	}
	if r := finish(id); r.Status != "succeeded" {
		t.Fatalf("run %s: %s %s", r.Status, r.EndReason, r.Error)
	}
	code, out, errs := runs("fork", id, "--step", "3")
	if code != 0 {
		t.Fatalf("fork: %d %s", code, errs)
	}
	f := api.Forked{RunID: strings.TrimSuffix(out, "\n")}
	if f.RunID == "" || strings.ContainsAny(f.RunID, "{}\" \n") {
		t.Fatalf("fork output %q, want the new run's id on a line", out)
	}
	r := finish(f.RunID)
	if r.Status != "succeeded" || r.ForkedFrom == nil || r.ForkedFrom.Run != id || r.ForkedFrom.Step != 3 {
		t.Fatalf("fork %+v", r)
	}
}
