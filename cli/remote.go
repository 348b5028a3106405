package cli

import (
	"context"
	"errors"
	"slices"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// runReader is what the command line's displays (progress, transcript,
// rollout and synthesis views, flock runs) read of runs: the data
// directory's store, or a server's API (remote).
type runReader interface {
	Run(ctx context.Context, id string) (state.Run, error)
	Runs(ctx context.Context, f state.RunFilter) ([]state.Run, string, error)
	Children(ctx context.Context, id string) ([]string, error)
	Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error)
	Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error)
}

var _ runReader = state.Reader(nil)

// remote reads runs through a flock server's API, converting its views
// back into the journal's structs the displays take. A 404 is
// state.ErrNotFound.
type remote struct{ c *client.Client }

func (r remote) Run(ctx context.Context, id string) (state.Run, error) {
	v, err := r.c.Run(ctx, id)
	if err != nil {
		return state.Run{}, notFound(err)
	}
	return stateRun(v), nil
}

func (r remote) Runs(ctx context.Context, f state.RunFilter) ([]state.Run, string, error) {
	page, err := r.c.Runs(ctx, client.RunsQuery{Status: f.Status, Workflow: f.Workflow, ParentID: f.ParentID, After: f.After, Limit: f.Limit})
	if err != nil {
		return nil, "", notFound(err)
	}
	runs := make([]state.Run, 0, len(page.Runs))
	for _, v := range page.Runs {
		runs = append(runs, stateRun(v))
	}
	return runs, page.Next, nil
}

// Children lists the ids of run id's children, sorted (as the store does).
func (r remote) Children(ctx context.Context, id string) ([]string, error) {
	var ids []string
	q := client.RunsQuery{ParentID: id, Limit: 1000}
	for {
		page, err := r.c.Runs(ctx, q)
		if err != nil {
			return nil, notFound(err)
		}
		for _, v := range page.Runs {
			ids = append(ids, v.ID)
		}
		if page.Next == "" {
			slices.Sort(ids)
			return ids, nil
		}
		q.After = page.Next
	}
}

func (r remote) Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error) {
	page, err := r.c.Entries(ctx, id, after, min(limit, 1000))
	if err != nil {
		return nil, notFound(err)
	}
	out := make([]record.Entry, 0, len(page.Entries))
	for _, e := range page.Entries {
		out = append(out, record.Entry{Seq: e.Seq, Type: e.Type, Phase: e.Phase, Step: e.Step, Data: e.Data})
	}
	return out, nil
}

func (r remote) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	page, err := r.c.StoredEvents(ctx, id, after, min(limit, 1000))
	if err != nil {
		return nil, notFound(err)
	}
	out := make([]state.Event, 0, len(page.Events))
	for _, ev := range page.Events {
		out = append(out, stateEvent(ev))
	}
	return out, nil
}

// notFound makes the server's 404 state.ErrNotFound too, keeping its
// text.
func notFound(err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return &wordedError{text: err.Error(), errs: []error{state.ErrNotFound, err}}
	}
	return err
}

// stateRun is the journal's head of an API view (the fields the view has).
func stateRun(v api.Run) state.Run {
	h := state.Run{
		ID: v.ID, Workflow: v.Workflow, Status: v.Status, Phase: v.Phase, ParentID: v.ParentID,
		Step: v.Step, Entries: v.Entries, EndReason: v.EndReason, Result: v.Result, Error: v.Error,
		Usage: operations.RunUsage{Tokens: v.Usage.Tokens, Actions: v.Usage.Actions, Seconds: v.Usage.Seconds,
			Cost: v.Usage.Cost, ReplayHits: v.Usage.ReplayHits, ReplayMisses: v.Usage.ReplayMisses},
		Limits:    operations.RunLimits{Tokens: v.Limits.Tokens, Actions: v.Limits.Actions, Seconds: v.Limits.Seconds, Cost: v.Limits.Cost},
		Vars:      v.Vars,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, EndedAt: v.EndedAt,
	}
	if f := v.ForkedFrom; f != nil {
		h.ForkedFrom = &state.ForkRef{Run: f.Run, Step: f.Step}
	}
	return h
}

// stateEvent is the journal's event of an API view.
func stateEvent(ev api.Event) state.Event {
	return state.Event{Seq: ev.Seq, RunID: ev.RunID, Time: ev.Time, Type: ev.Type, Status: ev.Status, Phase: ev.Phase,
		Step: ev.Step, OpID: ev.OpID, Kind: ev.Kind, Message: ev.Message, Data: ev.Data}
}
