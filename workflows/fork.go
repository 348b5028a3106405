package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// ForkRequest asks for a new run that starts from the state another run
// had at Step (see Fork).
type ForkRequest struct {
	// Step is the step to fork from: 0 (the start) to the run's current
	// step.
	Step uint64 `json:"step"`
	// Vars, when set, replace those vars of the run (a JSON null deletes
	// one).
	Vars map[string]json.RawMessage `json:"vars,omitempty"`
	// Message, when not empty, is appended to the fork's log as an
	// operator_message entry, which the agents show the model.
	Message string `json:"message,omitempty"`
}

// stepData is the data of a phase's "committed" event: what the commit
// did to the head. Fork reads it back to rebuild the head of any step.
type stepData struct {
	Next    string                     `json:"next"`
	Ops     []string                   `json:"ops,omitempty"`
	Entries int                        `json:"entries,omitempty"`
	Set     map[string]json.RawMessage `json:"set,omitempty"`
	Usage   *operations.RunUsage       `json:"usage,omitempty"`
	End     *state.PendingEnd          `json:"end,omitempty"`
}

// forkData is the data of a forked run's "created" event: its head at the
// fork step.
type forkData struct {
	ForkedFrom state.ForkRef              `json:"forked_from"`
	Phase      string                     `json:"phase"`
	Next       string                     `json:"next"`
	NumOps     int                        `json:"num_ops"`
	Entries    uint64                     `json:"entries"`
	Vars       map[string]json.RawMessage `json:"vars,omitempty"`
	Usage      operations.RunUsage        `json:"usage"`
	End        *state.PendingEnd          `json:"end,omitempty"`
	// Warnings say what the fork could not restore of the work directory
	// (files not snapshotted, snapshots that failed or stopped).
	Warnings []string `json:"warnings,omitempty"`

	// snapFailed are the steps up to the fork step whose work-dir
	// manifest could not be written, with why (the runs' snapshot
	// "warning" events); headAt fills it, it is not stored.
	snapFailed []failedSnap
}

// failedSnap is a step whose work-dir manifest could not be written.
type failedSnap struct {
	step uint64
	why  string
}

// headAt rebuilds what run id's head was right after step's phase
// commit, from the run's events (each phase commit's stepData; a fork's
// created event). A fork asked for a step before its own fork step asks
// the run it was forked from.
func (e *Executor) headAt(ctx context.Context, id string, step uint64) (forkData, error) {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return forkData{}, err
	}
	if step > head.Step {
		return forkData{}, fmt.Errorf("%w: step %d: run %s is at step %d", ErrBadFork, step, id, head.Step)
	}
	if f := head.ForkedFrom; f != nil && step < f.Step {
		return e.headAt(ctx, f.Run, step)
	}
	var at forkData
	found := step == 0
	if head.ForkedFrom == nil {
		wf, ok := e.reg.Lookup(head.Workflow)
		if !ok {
			return forkData{}, fmt.Errorf("%w: workflow %q is not registered", ErrUnknownWorkflow, head.Workflow)
		}
		at.Next = wf.Start
	}
	var after uint64
	for {
		evs, err := e.store.Events(ctx, id, after, 1000)
		if err != nil {
			return forkData{}, err
		}
		for _, ev := range evs {
			switch {
			case ev.Seq == 1 && head.ForkedFrom != nil:
				if err := json.Unmarshal(ev.Data, &at); err != nil {
					return forkData{}, fmt.Errorf("run %s: created event: %w", id, err)
				}
				found = found || at.ForkedFrom.Step == step
			case ev.Type == state.EventPhase && ev.Status == state.EventCommitted:
				if ev.Step > step {
					return finishHeadAt(at, found, id, step)
				}
				var d stepData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					return forkData{}, fmt.Errorf("run %s: step %d: %w", id, ev.Step, err)
				}
				if d.Usage == nil {
					return forkData{}, fmt.Errorf("%w: run %s was recorded before forks were supported: its step %d has no step record", ErrBadFork, id, ev.Step)
				}
				at.Phase, at.Next, at.NumOps, at.Usage, at.End = ev.Phase, d.Next, len(d.Ops), *d.Usage, d.End
				at.Entries += uint64(d.Entries)
				at.Vars = applyVars(at.Vars, d.Set)
				found = found || ev.Step == step
			case ev.Type == state.EventRun && ev.Status == state.EventWarning && ev.Step <= step:
				var n snapshotNote
				if json.Unmarshal(ev.Data, &n) == nil && n.Failed {
					at.snapFailed = append(at.snapFailed, failedSnap{step: n.Step, why: ev.Message})
				}
			}
		}
		if len(evs) < 1000 {
			return finishHeadAt(at, found, id, step)
		}
		after = evs[len(evs)-1].Seq
	}
}

func finishHeadAt(at forkData, found bool, id string, step uint64) (forkData, error) {
	if !found {
		return forkData{}, fmt.Errorf("%w: run %s has no record of step %d", ErrBadFork, id, step)
	}
	return at, nil
}

// applyVars returns vars with set applied (nil or JSON null deletes).
func applyVars(vars, set map[string]json.RawMessage) map[string]json.RawMessage {
	if len(set) == 0 {
		return vars
	}
	out := make(map[string]json.RawMessage, len(vars)+len(set))
	for k, v := range vars {
		out[k] = v
	}
	for k, v := range set {
		if v == nil || string(v) == "null" {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// manifestAt returns the work-dir snapshot of run id at step (the newest
// at or before it), following forks back to their origin (a fork that has
// written no manifest of its own by step has the work directory it
// restored), or nil.
func (e *Executor) manifestAt(ctx context.Context, id string, step uint64) (*manifest, error) {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	f := head.ForkedFrom
	if f != nil && step < f.Step {
		return e.manifestAt(ctx, f.Run, step)
	}
	m, _, _, err := e.loadManifest(id, step)
	if m == nil && err == nil && f != nil {
		return e.manifestAt(ctx, f.Run, f.Step)
	}
	return m, err
}

// forkSnapshot returns the work-dir snapshot a fork of run id at step
// restores, and what the fork should be told about it: a stop of the
// run's snapshots at or before step (the manifest before the stop is
// restored), and manifests that could not be written after the one
// restored (failed, from headAt).
func (e *Executor) forkSnapshot(ctx context.Context, id string, step uint64, failed []failedSnap) (*manifest, []string, error) {
	m, err := e.manifestAt(ctx, id, step)
	if err != nil {
		return nil, nil, err
	}
	var warns []string
	as := func(m *manifest) string {
		if m == nil {
			return "an empty work directory"
		}
		return fmt.Sprintf("the work directory of step %d", m.Step)
	}
	if m != nil && m.Stopped != "" {
		stop := m
		m = nil
		if stop.Step > 0 {
			if m, err = e.manifestAt(ctx, id, stop.Step-1); err != nil {
				return nil, nil, err
			}
		}
		warns = append(warns, fmt.Sprintf("the run's work-dir snapshots stopped at step %d (%s): the fork gets %s; files changed since are missing or older",
			stop.Step, stop.Stopped, as(m)))
	}
	for _, f := range failed {
		if m == nil || f.step > m.Step {
			warns = append(warns, fmt.Sprintf("the fork gets %s: %s", as(m), f.why))
		}
	}
	return m, warns, nil
}

// Fork starts a new run whose state is run id's as of req.Step: the head
// as that step's phase commit left it (phase, next phase, vars, usage),
// the entry log up to it, the operation journal of steps 1..Step copied
// (so the results of Step's operations, when they were in, are handed to
// the next phase as they were, and pending ones run again), the work
// directory as the snapshot of that step holds it, with req.Vars applied
// and req.Message appended as an operator_message entry. The new run has
// a fresh id, its own work directory, and ForkedFrom {id, Step}; it is
// driven at once. The source run is only read: it may be running.
//
// Errors: state.ErrNotFound for an unknown run; ErrBadFork for a step the
// run has not reached (or a run journaled before forks were supported)
// and bad vars.
//
// Fork drops the warnings about what of the work directory could not be
// restored (see ForkWithWarnings); the fork's first event carries them.
func (e *Executor) Fork(ctx context.Context, id string, req ForkRequest) (state.Run, error) {
	h, _, err := e.ForkWithWarnings(ctx, id, req)
	return h, err
}

// ForkWithWarnings is Fork that also returns what the fork could not
// restore of the work directory as it was at the step: files the source's
// snapshot holds without their content ("not snapshotted": too large, over
// the run's snapshot budget, a failure to store them), a snapshot that
// failed or stopped at or before the step (the fork then gets an older
// one), stored content that is missing. The fork is started all the same;
// its first event ("run", "running") carries the warnings in its data,
// {"warnings": [...]}, and its message.
func (e *Executor) ForkWithWarnings(ctx context.Context, id string, req ForkRequest) (state.Run, []string, error) {
	src, err := e.store.Run(ctx, id)
	if err != nil {
		return state.Run{}, nil, err
	}
	wf, ok := e.reg.Lookup(src.Workflow)
	if !ok {
		return state.Run{}, nil, fmt.Errorf("%w: workflow %q is not registered", ErrUnknownWorkflow, src.Workflow)
	}
	at, err := e.headAt(ctx, id, req.Step)
	if err != nil {
		return state.Run{}, nil, err
	}
	for k, v := range req.Vars {
		if k == "" {
			return state.Run{}, nil, fmt.Errorf("%w: vars: empty name", ErrBadFork)
		}
		if v != nil && !json.Valid(v) {
			return state.Run{}, nil, fmt.Errorf("%w: vars.%s: not valid JSON", ErrBadFork, k)
		}
	}
	vars := applyVars(at.Vars, req.Vars)
	size := 0
	for k, v := range vars {
		size += len(k) + len(v)
	}
	if size > maxVarsBytes {
		return state.Run{}, nil, fmt.Errorf("%w: vars total %d bytes, over the %d-byte cap", ErrBadFork, size, maxVarsBytes)
	}
	spec, err := e.store.Spec(ctx, id)
	if err != nil {
		return state.Run{}, nil, err
	}
	// A fork is nobody's command line: it neither resumes as one (Key) nor
	// reads what the operator granted the run it came from (Grants).
	spec.Key, spec.Grants = "", nil
	rs, err := configs.ParseRunSettings(spec.Settings)
	if err != nil {
		return state.Run{}, nil, fmt.Errorf("%w: the run's settings are no longer valid: %w", ErrBadFork, err)
	}

	// The journal up to the step: entries 1..at.Entries and the ops of
	// steps 1..Step, renamed into the new run.
	now := e.now().UTC()
	newID := NewRunID(now)
	entries, err := e.copyEntries(ctx, id, at.Entries)
	if err != nil {
		return state.Run{}, nil, err
	}
	if req.Message != "" {
		msg, err := record.NewEntry(record.EntryTypeOperatorMessage, record.OperatorMessage{
			Summary: "operator: " + oneLine(req.Message, 200), Content: req.Message})
		if err != nil {
			return state.Run{}, nil, err
		}
		msg.Seq, msg.Phase, msg.Step = at.Entries+1, at.Phase, req.Step
		entries = append(entries, msg)
	}
	ops, err := e.copyOps(ctx, id, newID, req.Step)
	if err != nil {
		return state.Run{}, nil, err
	}
	if n := countStep(ops, req.Step); req.Step > 0 && n != at.NumOps {
		return state.Run{}, nil, fmt.Errorf("%w: run %s: step %d has %d operations journaled, its record says %d", ErrBadFork, id, req.Step, n, at.NumOps)
	}

	workDir, err := filepath.Abs(filepath.Join(e.cfg.RunsDir, newID))
	if err != nil {
		return state.Run{}, nil, err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return state.Run{}, nil, fmt.Errorf("create work dir: %w", err)
	}
	m, warns, err := e.forkSnapshot(ctx, id, req.Step, at.snapFailed)
	if err != nil {
		os.RemoveAll(workDir)
		return state.Run{}, nil, fmt.Errorf("read the work-dir snapshot: %w", err)
	}
	if m != nil {
		lost, err := e.restoreSnapshot(ctx, m, workDir)
		if err != nil {
			os.RemoveAll(workDir)
			return state.Run{}, nil, fmt.Errorf("copy the work-dir snapshot of step %d: %w", m.Step, err)
		}
		warns = append(warns, lost...)
	}

	e.mu.Lock()
	stopped := e.stopped || !e.started
	e.mu.Unlock()
	if stopped {
		return state.Run{}, nil, ErrStopped
	}
	if _, err := e.claim(ctx, newID); err != nil {
		return state.Run{}, nil, fmt.Errorf("create fork: %w", err)
	}
	ref := state.ForkRef{Run: id, Step: req.Step}
	next := at.Next
	head := state.Run{
		Schema: state.SchemaVersion, ID: newID, Workflow: wf.Name, Status: state.StatusRunning,
		Phase: at.Phase, Next: next, Step: req.Step, NumOps: at.NumOps, PendingEnd: at.End,
		Usage: at.Usage, Limits: src.Limits, Vars: vars, Entries: uint64(len(entries)),
		WorkDir: workDir, ForkedFrom: &ref, CreatedAt: now, UpdatedAt: now,
	}
	base := forkData{ForkedFrom: ref, Phase: at.Phase, Next: next, NumOps: at.NumOps, Entries: head.Entries,
		Vars: vars, Usage: at.Usage, End: at.End, Warnings: warns}
	data, err := json.Marshal(base)
	if err != nil {
		e.release(newID)
		return state.Run{}, nil, err
	}
	created := state.Event{Time: now, Type: state.EventRun, Status: record.RunEvent(state.StatusRunning), Step: req.Step,
		Message: fmt.Sprintf("forked from run %s at step %d", id, req.Step), Data: data}
	if len(warns) > 0 {
		created.Message += fmt.Sprintf(" with %d warning(s): %s", len(warns), strings.Join(warns, "; "))
		e.log.Warn("fork: the work directory is not as it was at the step", "run", newID, "from", id, "step", req.Step,
			"warnings", strings.Join(warns, "; "))
	}
	c := &state.Commit{RunID: newID, Run: &head, Spec: &spec, Entries: entries, Ops: ops, Events: []state.Event{created}}
	if err := e.store.Commit(ctx, c); err != nil {
		e.release(newID)
		return state.Run{}, nil, fmt.Errorf("create fork: %w", err)
	}
	if e.dispatched() {
		// Cluster mode: whichever node takes the fork's claim drives it.
		e.release(newID)
		if p := publisherOf(e.cfg.Dispatcher); p != nil {
			p.PublishEvent(newID, c.Events[0])
		}
		e.enqueue(ctx, newID, time.Time{})
		return head, warns, nil
	}
	r := e.newRunner(head, spec, rs, wf)
	r.resumed = true // the copied pending ops may have run in the source
	e.broker.seed(newID, "", c.Events[0].Seq)
	if !e.launch(r) {
		e.release(newID)
		return head, nil, ErrStopped
	}
	e.broker.publish(newID, c.Events)
	return head, warns, nil
}

// copyEntries reads entries 1..n of run id.
func (e *Executor) copyEntries(ctx context.Context, id string, n uint64) ([]record.Entry, error) {
	out := make([]record.Entry, 0, n)
	for uint64(len(out)) < n {
		page, err := e.store.Entries(ctx, id, uint64(len(out)), int(min(n-uint64(len(out)), 1000)))
		if err != nil {
			return nil, fmt.Errorf("read entries of run %s: %w", id, err)
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("%w: run %s has %d entries, its record of the step says %d", ErrBadFork, id, len(out), n)
		}
		out = append(out, page...)
	}
	return out, nil
}

// copyOps reads the ops of run id's steps 1..step, renamed into run to.
func (e *Executor) copyOps(ctx context.Context, id, to string, step uint64) ([]state.Op, error) {
	var out []state.Op
	for op, err := range state.AllOps(ctx, e.store, id) {
		if err != nil {
			return nil, fmt.Errorf("read ops of run %s: %w", id, err)
		}
		if op.Step > step {
			break
		}
		op.ID, op.RunID = state.OpID(to, op.Step, op.Index), to
		out = append(out, op)
	}
	return out, nil
}

func countStep(ops []state.Op, step uint64) int {
	n := 0
	for _, op := range ops {
		if op.Step == step {
			n++
		}
	}
	return n
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	out := []rune{}
	for _, c := range s {
		if c == '\n' || c == '\r' {
			c = ' '
		}
		if len(out) == n {
			return string(out) + "…"
		}
		out = append(out, c)
	}
	return string(out)
}
