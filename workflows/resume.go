package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// Launch starts the run req asks for or, when req.Key is the key of an
// unfinished top-level run (state.Spec.Key: the same command line ran
// before and was interrupted), resumes that run and its descendants
// instead (ResumeTree). resumed reports which; warnings are the new run's
// settings warnings (none for a resumed run).
func (e *Executor) Launch(ctx context.Context, req StartRequest) (head state.Run, warnings []string, resumed bool, err error) {
	if req.Key != "" && req.ParentID == "" {
		h, ok, err := e.findKey(ctx, req.Key)
		if err != nil {
			return state.Run{}, nil, false, err
		}
		if ok {
			if err := e.ResumeTree(ctx, h.ID); err != nil {
				return state.Run{}, nil, false, err
			}
			h, err = e.store.Run(ctx, h.ID)
			return h, nil, true, err
		}
	}
	h, w, err := e.StartRunWithWarnings(ctx, req)
	return h, w, false, err
}

// findKey finds the newest unfinished top-level run whose spec has key.
func (e *Executor) findKey(ctx context.Context, key string) (state.Run, bool, error) {
	heads, err := e.store.Unfinished(ctx)
	if err != nil {
		return state.Run{}, false, fmt.Errorf("list unfinished runs: %w", err)
	}
	var found state.Run
	ok := false
	for _, h := range heads {
		if h.ParentID != "" || (ok && !h.CreatedAt.After(found.CreatedAt)) {
			continue
		}
		spec, err := e.store.Spec(ctx, h.ID)
		if err != nil || spec.Key != key {
			continue
		}
		found, ok = h, true
	}
	return found, ok, nil
}

// ResumeTree drives run id and every unfinished descendant of it that
// this executor does not drive already: running ones continue where
// they stopped (finished operations are not run again), paused ones are
// resumed. It resumes nothing and returns an error wrapping ErrKeyNeeded
// when one of them needs an API key the process does not hold, ErrEnded
// when id has ended.
func (e *Executor) ResumeTree(ctx context.Context, id string) error {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return err
	}
	if head.Status.Terminal() {
		return fmt.Errorf("%w: run %s is %s", ErrEnded, id, head.Status)
	}
	heads, err := e.store.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("list unfinished runs: %w", err)
	}
	tree := Tree(heads, id)
	for _, h := range tree {
		spec, err := e.store.Spec(ctx, h.ID)
		if err != nil {
			return fmt.Errorf("resume run %s: load spec: %w", h.ID, err)
		}
		if err := e.keysHeld(h.ID, spec); err != nil {
			return err
		}
	}
	for _, h := range tree {
		e.mu.Lock()
		_, driven := e.runs[h.ID]
		e.mu.Unlock()
		if driven {
			continue
		}
		// Read it again: resuming a paused parent resumed its children.
		if h, err = e.store.Run(ctx, h.ID); err != nil {
			return err
		}
		switch h.Status {
		case state.StatusPaused:
			err = e.Resume(ctx, h.ID)
			if errors.Is(err, ErrNotPaused) {
				err = nil
			}
		case state.StatusRunning:
			err = e.resume(ctx, h)
		}
		if err != nil {
			return fmt.Errorf("resume run %s: %w", h.ID, err)
		}
	}
	return nil
}

// Tree returns, of the unfinished heads, the one of run id and those of
// its descendants reached through unfinished parents, parents first
// (creation order among siblings). Nil when id is not among them.
func Tree(heads []state.Run, id string) []state.Run {
	kids := map[string][]state.Run{}
	var root *state.Run
	for i, h := range heads {
		if h.ID == id {
			root = &heads[i]
		}
		if h.ParentID != "" {
			kids[h.ParentID] = append(kids[h.ParentID], h)
		}
	}
	if root == nil {
		return nil
	}
	out := []state.Run{*root}
	for i := 0; i < len(out); i++ {
		ks := kids[out[i].ID]
		slices.SortFunc(ks, func(a, b state.Run) int { return a.CreatedAt.Compare(b.CreatedAt) })
		out = append(out, ks...)
	}
	return out
}

// keysHeld returns an error wrapping ErrKeyNeeded, naming run id, when its
// settings name a key given on a command line that this process does
// not hold.
func (e *Executor) keysHeld(id string, spec state.Spec) error {
	if missing := e.cfg.HandlerDeps.Keys.Missing(spec.Settings); len(missing) > 0 {
		return &keyNeededError{id: id, n: len(missing)}
	}
	return nil
}

// keyNeededError says which run lacks how many command-line keys.
type keyNeededError struct {
	id string
	n  int
}

func (e *keyNeededError) Error() string {
	return fmt.Sprintf("run %s needs %d API key(s) given literally in the config file of the command that started it, "+
		"kept only in that command's memory: run that command again to resume it", e.id, e.n)
}

// Unwrap makes errors.Is(err, ErrKeyNeeded) true.
func (e *keyNeededError) Unwrap() error { return ErrKeyNeeded }

// holdForKey marks a running run that cannot be driven for lack of a
// command-line key as paused, with an event saying why, so that it waits
// (visibly) for the command that started it.
func (e *Executor) holdForKey(ctx context.Context, id string, why error) {
	head, err := e.store.Run(ctx, id)
	if err != nil || head.Status != state.StatusRunning {
		return
	}
	now := e.now().UTC()
	head.Status = state.StatusPaused
	head.UpdatedAt = now
	c := &state.Commit{RunID: id, ExpectRevision: head.Revision, Run: &head,
		Events: []state.Event{{Time: now, Type: state.EventRun, Status: record.RunEvent(state.StatusPaused), Message: "paused: " + why.Error()}}}
	if err := e.store.Commit(ctx, c); err != nil {
		e.log.Error("pause a run that needs a command-line key", "run", id, "err", err)
		return
	}
	e.log.Warn("run not resumed: it needs the API key given on the command line that started it; run that command again", "run", id)
}

// Grants returns the directories granted to the run tree whose top-level
// run is id (state.Spec.Grants), or nil.
func (e *Executor) Grants(id string) *state.Grants {
	e.mu.Lock()
	g, ok := e.starting[id]
	e.mu.Unlock()
	if ok {
		return g
	}
	spec, err := e.store.Spec(e.baseCtx, id)
	if err != nil {
		return nil
	}
	return spec.Grants
}
