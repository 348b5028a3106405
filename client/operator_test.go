package client_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	_ "github.com/flockrun/flock/handlers/human"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/workflows"
)

// TestClientOperator drives the operator routes through the Go client: a
// run asks a rating (scale 1..5) and then an intervention on an action;
// the client answers the rating, replaces the action, and forks the run
// from step 1 (where it asked the rating).
func TestClientOperator(t *testing.T) {
	dir := t.TempDir()
	st := teststore.OpenAt(t, dir)
	reg := phases.NewRegistry()
	reg.MustRegister(phases.Workflow{Name: "ask", Start: "rate", Phases: []phases.PhaseSpec{
		{Name: "rate", Next: []string{"act"}, Run: func(in phases.Input) (phases.Output, error) {
			return phases.Output{Ops: []operations.Request{operations.NewHuman(operations.HumanRequest{
				Question: "Rate it", Scale: &operations.Scale{Min: 1, Max: 5}})}, Next: "act"}, nil
		}},
		{Name: "act", Next: []string{"end"}, Run: func(in phases.Input) (phases.Output, error) {
			n, _ := operations.Human.Result(in.Results[0]).Number()
			b, _ := json.Marshal(n)
			return phases.Output{Set: map[string]json.RawMessage{"rating": b},
				Ops:  []operations.Request{operations.NewIntervention("", json.RawMessage(`{"name":"bash","arguments":{"command":"rm -rf /"}}`))},
				Next: "end"}, nil
		}},
		{Name: "end", Run: func(in phases.Input) (phases.Output, error) {
			d := operations.Intervention.Result(in.Results[0])
			res, _ := json.Marshal(map[string]any{"rating": json.RawMessage(in.State.Var("rating")), "action": d.Action, "approved": d.Approved})
			return phases.Output{End: &phases.End{Result: res}}, nil
		}},
	}})
	h, _ := handlers.Lookup(operations.KindHuman)
	ex := testrun.Executor(t, workflows.Config{Store: st, Registry: reg, Handlers: []handlers.Info{h}, RunsDir: filepath.Join(dir, "runs")})
	srv, err := server.New(configs.Server{Addr: "127.0.0.1:0", AuthToken: token}, ex, ex.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	base := testkit.Serve(t, srv)
	c, err := client.New(base, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	started, err := c.Start(ctx, api.StartRequest{Workflow: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	id := started.RunID
	var qs []api.Question
	testkit.WaitFor(t, "the rating question", func() bool {
		qs, err = c.Questions(ctx, id)
		return err == nil && len(qs) == 1
	})
	if qs[0].Scale == nil || qs[0].Scale.Max != 5 || qs[0].Kind != "human" {
		t.Fatalf("question %+v", qs[0])
	}
	if err := c.Answer(ctx, id, qs[0].OpID, 9); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("Answer 9 = %v, want ErrBadRequest", err)
	}
	if err := c.Answer(ctx, id, qs[0].OpID, 4); err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if err := c.Answer(ctx, id, qs[0].OpID, 4); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("second Answer = %v, want ErrConflict", err)
	}
	testkit.WaitFor(t, "the intervention", func() bool {
		qs, err = c.Questions(ctx, id)
		return err == nil && len(qs) == 1 && qs[0].Kind == "intervention"
	})
	if string(qs[0].Action) != `{"name":"bash","arguments":{"command":"rm -rf /"}}` {
		t.Errorf("intervention action %s", qs[0].Action)
	}
	if err := c.Intervene(ctx, id, api.InterveneRequest{Action: json.RawMessage(`{"name":"bash","arguments":{"command":"ls"}}`)}); err != nil {
		t.Fatalf("Intervene: %v", err)
	}
	run, err := c.Wait(ctx, id)
	if err != nil || string(run.Result) != `{"action":{"name":"bash","arguments":{"command":"ls"}},"approved":false,"rating":4}` {
		t.Fatalf("Wait = %s, %v", run.Result, err)
	}
	if err := c.Intervene(ctx, id, api.InterveneRequest{Approve: true}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("Intervene on an ended run = %v, want ErrConflict", err)
	}
	// Fork from step 1 (its rating answered): the fork's act phase asks
	// the intervention again, and approving it ends the fork.
	f, err := c.Fork(ctx, id, api.ForkRequest{Step: 1})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	testkit.WaitFor(t, "the fork's intervention", func() bool {
		qs, err = c.Questions(ctx, f.RunID)
		return err == nil && len(qs) == 1
	})
	if err := c.Intervene(ctx, f.RunID, api.InterveneRequest{Approve: true}); err != nil {
		t.Fatalf("Intervene approve: %v", err)
	}
	run, err = c.Wait(ctx, f.RunID)
	if err != nil || string(run.Result) != `{"action":null,"approved":true,"rating":4}` || run.ForkedFrom == nil || run.ForkedFrom.Step != 1 {
		t.Fatalf("fork: %+v, %v", run, err)
	}
	if _, err := c.Fork(ctx, id, api.ForkRequest{Step: 50}); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("Fork past the end = %v", err)
	}
}
