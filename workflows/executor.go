package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/editdist"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// Config configures an Executor.
type Config struct {
	Store    state.Store
	Registry *phases.Registry
	// Handlers are the handler packages that run operations, one per kind
	// (usually handlers.Registered()). The executor provisions them at
	// Start with HandlerDeps (plus itself as the run starter, its store as
	// their journal and its logger), asks them to validate each run's settings at start, and
	// cleans them up at Stop. A kind without a handler yields an error
	// result naming it.
	Handlers []handlers.Info
	// HandlerDeps are the dependencies handlers are provisioned with; the
	// executor sets Runs, Journal, Ops, Grants and (when nil) Log.
	HandlerDeps handlers.Deps
	// RunsDir holds the runs' work directories (one subdirectory per run).
	RunsDir string
	// Concurrency caps concurrent operations per kind across all runs;
	// kinds not listed are unlimited.
	Concurrency map[string]int
	Logger      *slog.Logger
	// Now is the clock (default time.Now); tests inject their own.
	Now func() time.Time
	// EntryCacheBytes caps the memory of the cache through which phases
	// and handlers read runs' entry logs, shared by all runs (default
	// DefaultEntryCacheBytes). Runs hold no entries of their own, so the
	// memory of a run does not grow with its history.
	EntryCacheBytes int
	// Observer, if set, is told about runs, phases and operations (metrics).
	// Its methods are called on the runs' goroutines and must not block.
	Observer Observer
	// Steps, if set, is told which run and step each phase commit and run
	// end wrote, so that it can read the journal back (the trace exporter).
	Steps StepObserver
	// Owner names this executor in the runs' leases (state.Leaser): it
	// must differ between executors sharing a store. Default: host name,
	// process id and a random suffix.
	Owner string
	// NoSnapshots turns off the work-dir snapshots taken after each step
	// with operations (see Fork), which cost a walk of the run's work
	// directory per such step and a copy of each changed file.
	NoSnapshots bool
	// SnapshotMaxFileBytes caps the data (allocated bytes: holes are free)
	// of a file a snapshot stores; a larger file is recorded as not
	// snapshotted, "too large", and a fork says it could not restore it.
	// Default DefaultSnapshotMaxFileBytes.
	SnapshotMaxFileBytes int64
	// SnapshotMaxRunBytes caps what one run adds to the snapshot store
	// (the data of the objects it stores first, and its manifests). Once
	// spent, changed files are recorded as not snapshotted, and when a
	// manifest no longer fits the run's snapshots stop. Default
	// DefaultSnapshotMaxRunBytes.
	SnapshotMaxRunBytes int64
	// LeaseTTL is how long a claim on a run lasts unless renewed; the
	// executor renews its runs' leases every LeaseTTL/4. In cluster mode
	// a run starts an operation or commits only while, by this node's own
	// clock (package boottime, which counts a stopped process's time), its
	// lease was confirmed less than 3/4 of LeaseTTL ago. Default
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Node names this executor's cluster node in the heads of the runs it
	// drives (state.Run.Driver). Default: Owner.
	Node string
	// Dispatcher, if set, puts the executor in cluster mode: it drives
	// only the runs handed to it (Drive), StartRun and Resume enqueue
	// runs instead of driving them, and a run waiting longer than
	// HandoffDelay is unloaded and enqueued again when due. Nil keeps the
	// single-process mode: Start resumes every unfinished run.
	Dispatcher Dispatcher
	// HandoffDelay is, in cluster mode, the longest Delay a run waits for
	// while staying loaded (and leased) here. Default DefaultHandoffDelay.
	HandoffDelay time.Duration
	// NoResume makes Start resume no run: the caller picks the runs it
	// drives (ResumeTree, Launch). A command that runs one workflow in
	// its own process drives only its own run, never the other unfinished
	// runs of the data directory.
	NoResume bool
}

// DefaultLeaseTTL is Config.LeaseTTL's default.
const DefaultLeaseTTL = 30 * time.Second

// Observer watches the executor's work, for metrics. Implementations must
// be safe for concurrent use and fast.
type Observer interface {
	// RunStarted is called when a run is created or loaded to be driven.
	RunStarted(workflow string, resumed bool)
	// RunEnded is called when a run ends (succeeded, failed, cancelled),
	// after its end is committed: a reader of the store may see the run
	// ended a moment before RunEnded is called, never the other way round.
	RunEnded(workflow string, status state.Status)
	// PhaseCommitted is called after each phase commit.
	PhaseCommitted(workflow, phase string)
	// OpFinished is called when an operation returns (ok reports no error).
	OpFinished(kind operations.Kind, ok bool, d time.Duration)
}

// StepObserver is told, after the commit, which run and step each phase
// call and each run end wrote. It learns nothing the journal does not hold:
// it reads what it needs back from the store. Its methods are called on the
// runs' goroutines and must not block.
type StepObserver interface {
	// StepCommitted reports that run id called phase as step at the given
	// time; the operations of the step before have all finished.
	StepCommitted(id string, step uint64, phase string, at time.Time)
	// RunClosed reports that run id's end was committed at the given time.
	RunClosed(id string, at time.Time)
}

// nopObserver is the Observer used when none is configured.
type nopObserver struct{}

func (nopObserver) RunStarted(string, bool)                         {}
func (nopObserver) RunEnded(string, state.Status)                   {}
func (nopObserver) PhaseCommitted(string, string)                   {}
func (nopObserver) OpFinished(operations.Kind, bool, time.Duration) {}

// Executor drives runs. It is safe for concurrent use.
type Executor struct {
	cfg    Config
	store  state.Store
	reg    *phases.Registry
	log    *slog.Logger
	now    func() time.Time
	sems   map[operations.Kind]chan struct{}
	broker *broker
	cache  *entryCache
	hs     *handlers.Set

	baseCtx    context.Context
	baseCancel context.CancelCauseFunc
	wg         sync.WaitGroup // run goroutines, parked runs, lease renewal

	mu      sync.Mutex
	runs    map[string]*runner // active runs; guarded by mu
	started bool               // guarded by mu
	stopped bool               // guarded by mu
	// starting holds the grants of top-level runs being started, from
	// their id until their spec is written; guarded by mu.
	starting map[string]*state.Grants
}

// New returns an executor. It does nothing until Start.
func New(cfg Config) (*Executor, error) {
	if cfg.Store == nil {
		return nil, errors.New("workflows: Config.Store is nil")
	}
	if cfg.Registry == nil {
		cfg.Registry = phases.Default
	}
	if cfg.RunsDir == "" {
		return nil, errors.New("workflows: Config.RunsDir is empty")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Owner == "" {
		cfg.Owner = defaultOwner()
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.HandoffDelay <= 0 {
		cfg.HandoffDelay = DefaultHandoffDelay
	}
	if cfg.SnapshotMaxFileBytes < 0 || cfg.SnapshotMaxRunBytes < 0 {
		return nil, fmt.Errorf("workflows: Config.SnapshotMaxFileBytes (%d) and SnapshotMaxRunBytes (%d) must not be negative",
			cfg.SnapshotMaxFileBytes, cfg.SnapshotMaxRunBytes)
	}
	if cfg.SnapshotMaxFileBytes == 0 {
		cfg.SnapshotMaxFileBytes = DefaultSnapshotMaxFileBytes
	}
	if cfg.SnapshotMaxRunBytes == 0 {
		cfg.SnapshotMaxRunBytes = DefaultSnapshotMaxRunBytes
	}
	if cfg.EntryCacheBytes < 0 {
		return nil, fmt.Errorf("workflows: Config.EntryCacheBytes is negative (%d)", cfg.EntryCacheBytes)
	}
	if cfg.EntryCacheBytes == 0 {
		cfg.EntryCacheBytes = DefaultEntryCacheBytes
	}
	hs, err := handlers.NewSet(cfg.Handlers...)
	if err != nil {
		return nil, fmt.Errorf("workflows: %w", err)
	}
	e := &Executor{
		hs:     hs,
		cfg:    cfg,
		store:  cfg.Store,
		reg:    cfg.Registry,
		log:    cfg.Logger,
		now:    cfg.Now,
		sems:   make(map[operations.Kind]chan struct{}),
		broker: newBroker(publisherOf(cfg.Dispatcher)),
		cache:  newEntryCache(cfg.EntryCacheBytes),
		runs:   make(map[string]*runner),

		starting: make(map[string]*state.Grants),
	}
	for k, n := range cfg.Concurrency {
		if n > 0 {
			e.sems[operations.Kind(k)] = make(chan struct{}, n)
		}
	}
	e.baseCtx, e.baseCancel = context.WithCancelCause(context.Background())
	return e, nil
}

// Store returns the store the executor reads and writes.
func (e *Executor) Store() state.Reader { return e.store }

// Registry returns the workflows the executor knows.
func (e *Executor) Registry() *phases.Registry { return e.reg }

// Workflows returns the graph of every registered workflow, by name.
func (e *Executor) Workflows() []phases.Graph {
	list := e.reg.List()
	graphs := make([]phases.Graph, 0, len(list))
	for _, w := range list {
		graphs = append(graphs, w.Graph())
	}
	return graphs
}

// Start resumes every unfinished run found in the store. Runs in status
// paused are loaded but not driven. In cluster mode (Config.Dispatcher)
// it resumes nothing: the dispatcher hands runs over with Drive.
func (e *Executor) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.started || e.stopped {
		e.mu.Unlock()
		return fmt.Errorf("workflows: executor already started or stopped")
	}
	e.started = true
	e.mu.Unlock()
	deps := e.cfg.HandlerDeps
	deps.Runs, deps.Journal, deps.Ops, deps.Grants = children{e}, journal{e.store}, e.hs, e.Grants
	if deps.Log == nil {
		deps.Log = e.log
	}
	if err := e.hs.Provision(ctx, deps); err != nil {
		e.mu.Lock()
		e.stopped = true
		e.mu.Unlock()
		return err
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.renewLeases()
	}()
	if e.dispatched() {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.watchLeases()
		}()
	}
	if e.dispatched() || e.cfg.NoResume {
		return nil
	}
	heads, err := e.store.Unfinished(ctx)
	if errors.Is(err, state.ErrCorrupt) {
		// The readable heads resume; the damaged ones stay as they are.
		e.log.Error("some unfinished runs cannot be read and are not resumed; run `flock db check`", "err", err)
	} else if err != nil {
		return fmt.Errorf("list unfinished runs: %w", err)
	}
	for _, h := range heads {
		if h.Status != state.StatusRunning {
			continue
		}
		if err := e.resume(ctx, h); errors.Is(err, state.ErrLeaseHeld) {
			e.log.Info("run not resumed: another owner drives it", "run", h.ID, "err", err)
		} else if errors.Is(err, ErrKeyNeeded) {
			e.holdForKey(ctx, h.ID, err)
		} else if errors.Is(err, state.ErrCorrupt) {
			e.log.Error("run not resumed: its records in the database cannot be read; run `flock db check`", "run", h.ID, "err", err)
		} else if err != nil {
			e.log.Error("resume run", "run", h.ID, "err", err)
		}
	}
	return nil
}

// Stop stops driving runs and waits for their goroutines. Runs keep status
// running in the store and resume on the next Start. Operations in flight
// are interrupted and not journaled.
func (e *Executor) Stop(ctx context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.baseCancel(ErrStopped)
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("stop executor: %w", ctx.Err())
	}
	if cerr := e.hs.Cleanup(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// lookupWorkflow returns the registered workflow called name, or an
// ErrUnknownWorkflow naming the closest registered name.
func (e *Executor) lookupWorkflow(name string) (*phases.Workflow, error) {
	wf, ok := e.reg.Lookup(name)
	if ok {
		return wf, nil
	}
	var names []string
	for _, w := range e.reg.List() {
		names = append(names, w.Name)
	}
	hint := ""
	if c := editdist.Closest(name, names); c != "" {
		hint = fmt.Sprintf("; did you mean %q?", c)
	}
	return nil, fmt.Errorf("%w: workflow: %q is not registered%s", ErrUnknownWorkflow, name, hint)
}

// StartRun creates a run and starts driving it. It returns at once with the
// new head (status running). See StartRunWithWarnings for the settings
// warnings, which StartRun drops (they are in the run's first event).
func (e *Executor) StartRun(ctx context.Context, req StartRequest) (state.Run, error) {
	h, _, err := e.StartRunWithWarnings(ctx, req)
	return h, err
}

// StartRunWithWarnings is StartRun that also returns the warnings about the
// run's settings: keys no one reads (typos, with the closest known key;
// Flock keys flock ignores), see configs.SettingsWarnings. They never
// reject the run; the run's first event ("created") carries them too, in
// its data as {"warnings": [...]}.
func (e *Executor) StartRunWithWarnings(ctx context.Context, req StartRequest) (state.Run, []string, error) {
	name := req.Workflow
	settingsDoc := bytes.TrimSpace(req.Settings)
	if len(settingsDoc) == 0 || string(settingsDoc) == "null" {
		settingsDoc = []byte("{}")
	}
	if settingsDoc[0] != '{' {
		return state.Run{}, nil, fmt.Errorf("%w: settings: must be a JSON object", ErrBadRequest)
	}
	rs, err := configs.ParseRunSettings(settingsDoc)
	if err != nil {
		return state.Run{}, nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	// The workflow the request names is looked up before it is compared
	// with settings.workflow_type, so that a typo in it ("scirpt" beside a
	// settings file saying "script") is answered with the closest name
	// rather than as a disagreement.
	switch {
	case name != "" && rs.WorkflowType != "" && rs.WorkflowType != name:
		if _, err := e.lookupWorkflow(name); err != nil {
			return state.Run{}, nil, err
		}
		return state.Run{}, nil, fmt.Errorf("%w: workflow %q and settings.workflow_type %q name different workflows: give one, or make them agree",
			ErrBadRequest, name, rs.WorkflowType)
	case name == "":
		name = rs.WorkflowType
	}
	if name == "" {
		return state.Run{}, nil, fmt.Errorf("%w: workflow: required (or settings.workflow_type)", ErrBadRequest)
	}
	wf, err := e.lookupWorkflow(name)
	if err != nil {
		return state.Run{}, nil, err
	}
	warnings := configs.SettingsWarnings(settingsDoc, wf.Name, wf.Settings)
	if wf.CheckSettings != nil {
		if err := wf.CheckSettings(json.RawMessage(settingsDoc)); err != nil {
			// A refused run's typo is often the cause ("actor" for "actors").
			return state.Run{}, nil, fmt.Errorf("%w: settings: %w%s", ErrBadRequest, err, warningsHint(warnings))
		}
	}
	now := e.now().UTC()
	id := req.ID
	if id == "" {
		id = NewRunID(now)
	} else if !validRunID(id) {
		return state.Run{}, nil, fmt.Errorf("%w: run id %q", ErrBadRequest, id)
	}
	workDir := req.WorkDir
	if workDir == "" {
		workDir = filepath.Join(e.cfg.RunsDir, id)
	}
	if abs, err := filepath.Abs(workDir); err == nil {
		workDir = abs
	}
	var grants *state.Grants
	if req.ParentID == "" && req.Grants != nil {
		// The checks below may read the files granted (a scripted model's
		// script): the grants hold from here, before the spec is written.
		grants = req.Grants
		e.mu.Lock()
		e.starting[id] = grants
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			delete(e.starting, id)
			e.mu.Unlock()
		}()
	}
	check := handlers.RunCheck{Workflow: wf.Name, Settings: rs, Raw: json.RawMessage(settingsDoc), WorkDir: workDir}
	if err := e.hs.ValidateRun(ctx, check); err != nil {
		return state.Run{}, nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	prepared, err := e.hs.PrepareRun(ctx, check)
	if err != nil {
		return state.Run{}, nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	settingsDoc = prepared
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		if state.IsNoSpace(err) {
			err = state.NoSpace(workDir, err)
		}
		return state.Run{}, nil, fmt.Errorf("create work dir: %w", err)
	}

	e.mu.Lock()
	stopped := e.stopped || !e.started
	e.mu.Unlock()
	if stopped {
		return state.Run{}, nil, ErrStopped
	}
	if req.ID != "" {
		// Derived ids (spawn): the run may exist already.
		if h, err := e.store.Run(ctx, id); err == nil {
			return h, nil, nil
		} else if !errors.Is(err, state.ErrNotFound) {
			return state.Run{}, nil, err
		}
	}

	if err := e.whileUnavailable(ctx, func() error { _, err := e.claim(ctx, id); return err }); err != nil {
		return state.Run{}, nil, fmt.Errorf("create run: %w", err)
	}
	head := state.Run{
		Schema:    state.SchemaVersion,
		ID:        id,
		Workflow:  wf.Name,
		ParentID:  req.ParentID,
		Status:    state.StatusRunning,
		Next:      wf.Start,
		Limits:    rs.Limits,
		WorkDir:   workDir,
		CreatedAt: now,
		UpdatedAt: now,
	}
	spec := state.Spec{Task: req.Task, Settings: json.RawMessage(settingsDoc), Grants: grants}
	if req.ParentID == "" {
		spec.Key = req.Key
	}
	created := state.Event{Time: now, Type: state.EventRun, Status: record.RunEvent(state.StatusRunning), Message: "created"}
	if len(warnings) > 0 {
		created.Message = fmt.Sprintf("created with %d settings warning(s): %s", len(warnings), strings.Join(warnings, "; "))
		created.Data, _ = json.Marshal(struct {
			Warnings []string `json:"warnings"`
		}{warnings})
	}
	c := &state.Commit{RunID: id, ID: newCommitID(), Run: &head, Spec: &spec, Events: []state.Event{created}}
	if err := e.whileUnavailable(ctx, func() error { return e.store.Commit(ctx, c) }); err != nil {
		e.release(id)
		return state.Run{}, nil, fmt.Errorf("create run: %w", err)
	}
	if e.dispatched() {
		// Cluster mode: whichever node takes the run's claim drives it.
		e.release(id)
		if p := publisherOf(e.cfg.Dispatcher); p != nil {
			p.PublishEvent(id, c.Events[0])
		}
		e.enqueue(ctx, id, time.Time{})
		return head, warnings, nil
	}
	r := e.newRunner(head, spec, rs, wf)
	e.broker.seed(id, head.ParentID, c.Events[0].Seq)
	if !e.launch(r) {
		e.release(id)
		return head, nil, ErrStopped
	}
	e.broker.publish(id, c.Events)
	return head, warnings, nil
}

// warningsHint appends settings warnings to a refusal.
func warningsHint(warnings []string) string {
	if len(warnings) == 0 {
		return ""
	}
	return " (also: " + strings.Join(warnings, "; ") + ")"
}

// resume claims a running run, loads it from the store and drives it. It
// fails with an error wrapping state.ErrLeaseHeld if another owner drives
// it.
func (e *Executor) resume(ctx context.Context, head state.Run) (err error) {
	t0, err := e.claim(ctx, head.ID)
	if err != nil {
		return err
	}
	launched := false
	defer func() {
		if !launched {
			e.release(head.ID)
		}
	}()
	wf, ok := e.reg.Lookup(head.Workflow)
	if !ok {
		return e.failUnloaded(ctx, head, fmt.Sprintf("workflow %q is no longer registered", head.Workflow))
	}
	spec, err := e.store.Spec(ctx, head.ID)
	if err != nil {
		return fmt.Errorf("load spec: %w", err)
	}
	if err := e.keysHeld(head.ID, spec); err != nil {
		return err
	}
	rs, err := configs.ParseRunSettings(spec.Settings)
	if err != nil {
		return e.failUnloaded(ctx, head, fmt.Sprintf("settings no longer valid: %v", err))
	}
	// The entry log is not loaded: phases page it through the entry
	// cache, so resuming costs the same at any length of history. Only
	// its last page is read, the entries the next phase reads first.
	if err := e.cacheLastPage(ctx, head); err != nil {
		return err
	}
	evs, err := e.lastEventSeq(ctx, head.ID)
	if err != nil {
		return err
	}
	r := e.newRunner(head, spec, rs, wf)
	r.resumed = true
	r.lease.confirm(t0, e.cfg.LeaseTTL)
	e.broker.seed(head.ID, head.ParentID, evs)
	launched = e.launch(r)
	return nil
}

// cacheLastPage puts the page of the head's last entry into the entry
// cache. Reading it here, one run after the other, spares the resumed
// runs' first phases a store read each, all at once.
func (e *Executor) cacheLastPage(ctx context.Context, head state.Run) error {
	if head.Entries == 0 {
		return nil
	}
	v := &view{head: &head, n: int(head.Entries), ctx: ctx, store: e.store, cache: e.cache}
	if _, err := v.page(head.Entries); err != nil {
		return fmt.Errorf("load entries: %w", err)
	}
	return nil
}

func (e *Executor) lastEventSeq(ctx context.Context, id string) (uint64, error) {
	var last uint64
	for {
		page, err := e.store.Events(ctx, id, last, 10000)
		if err != nil {
			return 0, fmt.Errorf("load events: %w", err)
		}
		if len(page) == 0 {
			return last, nil
		}
		last = page[len(page)-1].Seq
		if len(page) < 10000 {
			return last, nil
		}
	}
}

// failUnloaded ends a run that cannot be loaded.
func (e *Executor) failUnloaded(ctx context.Context, head state.Run, msg string) error {
	now := e.now().UTC()
	head.Status = state.StatusFailed
	head.EndReason = state.ReasonPhaseError
	head.Error = msg
	head.UpdatedAt = now
	head.EndedAt = &now
	return e.store.Commit(ctx, &state.Commit{RunID: head.ID, ExpectRevision: head.Revision, Run: &head,
		Events: []state.Event{{Time: now, Type: state.EventRun, Status: record.RunEvent(head.Status), Message: msg}}})
}

// launch registers r and starts its goroutine; false if the executor stopped.
func (e *Executor) launch(r *runner) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false
	}
	e.runs[r.head.ID] = r
	e.cfg.Observer.RunStarted(r.head.Workflow, r.resumed)
	e.log.Debug("run driven", "run", r.head.ID, "workflow", r.head.Workflow, "step", r.head.Step, "resumed", r.resumed)
	e.wg.Add(1) // done by r.run when the run is no longer driven
	go r.run()
	return true
}

// Cancel cancels a run and, recursively, its children. In cluster mode a
// run driven by another node is cancelled there (Controller), and a store
// that does not answer (state.ErrUnavailable: an election) is waited for,
// up to unavailableWait, as by Pause, Resume and Answer.
func (e *Executor) Cancel(ctx context.Context, id string) error {
	return e.whileApplied(ctx, func() error { return e.cancelFenced(ctx, id) }, func(err error) bool {
		h, herr := e.store.Run(ctx, id)
		return errors.Is(err, ErrEnded) && herr == nil && h.Status == state.StatusCancelled
	})
}

// cancelFenced is Cancel without waiting for a store that does not
// answer: what a cancel of a run's tree asks of each child.
func (e *Executor) cancelFenced(ctx context.Context, id string) error {
	return e.retryFenced(ctx, func() error { return e.cancel(ctx, id, true) })
}

// cancel is Cancel; routed says a run not driven here may be asked of the
// node that drives it.
func (e *Executor) cancel(ctx context.Context, id string, routed bool) error {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return err
	}
	if head.Status.Terminal() {
		return fmt.Errorf("%w: run %s is %s", ErrEnded, id, head.Status)
	}
	// Stop the run itself first, so that a child ending as cancelled
	// cannot complete the parent's step and let it run on; then its
	// children; then wait for it.
	e.mu.Lock()
	r := e.runs[id]
	e.mu.Unlock()
	if r == nil && routed && e.dispatched() && head.Status == state.StatusRunning {
		// No node answering for the run is not proof that none drives
		// it: one that took it up just now may not be reachable yet. So
		// the head the store is written with below is the one read
		// before asking; a take-up since fences that write, and
		// retryFenced asks again.
		if handled, err := e.remote(ctx, id, ControlRequest{Action: ActionCancel}); handled {
			return err
		}
	}
	if r != nil {
		r.cancel(errCancelled)
	}
	children, err := e.store.Children(ctx, id)
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := e.cancelFenced(ctx, c); err != nil && !errors.Is(err, ErrEnded) && !errors.Is(err, state.ErrNotFound) {
			return err
		}
	}
	if r != nil {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	// Not loaded (paused, or in cluster mode queued or parked): end it in
	// the store directly. The commit is fenced by the head read above, so
	// an owner that took the run meanwhile stops at its next commit.
	now := e.now().UTC()
	head.Status = state.StatusCancelled
	head.EndReason = state.ReasonCancelled
	head.UpdatedAt = now
	head.EndedAt = &now
	return e.store.Commit(ctx, &state.Commit{RunID: id, ExpectRevision: head.Revision, Run: &head,
		Events: []state.Event{{Time: now, Type: state.EventRun, Status: record.RunEvent(head.Status), Message: "cancelled"}}})
}

// Pause stops driving a running run and its running children, recording
// status paused. Operations in flight are interrupted and run again on
// Resume; paused time does not count toward the time limit. In cluster
// mode a run driven by another node is paused there (Controller), and a
// run no node drives (queued, parked) is marked paused in the store.
func (e *Executor) Pause(ctx context.Context, id string) error {
	return e.whileUnavailable(ctx, func() error { return e.pauseFenced(ctx, id) })
}

// pauseFenced is Pause without waiting for a store that does not answer.
func (e *Executor) pauseFenced(ctx context.Context, id string) error {
	return e.retryFenced(ctx, func() error { return e.pause(ctx, id, true) })
}

// pause is Pause; routed as for cancel.
func (e *Executor) pause(ctx context.Context, id string, routed bool) error {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return err
	}
	if head.Status.Terminal() {
		return fmt.Errorf("%w: run %s is %s", ErrEnded, id, head.Status)
	}
	if head.Status == state.StatusPaused {
		return nil
	}
	e.mu.Lock()
	r := e.runs[id]
	e.mu.Unlock()
	if r == nil && routed && e.dispatched() {
		if handled, err := e.remote(ctx, id, ControlRequest{Action: ActionPause}); handled {
			return err
		}
		if err := e.pauseStored(ctx, head); err != nil {
			return err
		}
	}
	if r != nil {
		r.cancel(ErrPaused)
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	children, err := e.store.Children(ctx, id)
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := e.pauseFenced(ctx, c); err != nil && !errors.Is(err, ErrEnded) {
			return err
		}
	}
	return nil
}

// Resume drives a paused run (and its paused children) again.
func (e *Executor) Resume(ctx context.Context, id string) error {
	return e.whileApplied(ctx, func() error { return e.resumeRun(ctx, id) }, func(err error) bool {
		h, herr := e.store.Run(ctx, id)
		return errors.Is(err, ErrNotPaused) && herr == nil && h.Status == state.StatusRunning
	})
}

// resumeRun is Resume, once.
func (e *Executor) resumeRun(ctx context.Context, id string) error {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return err
	}
	if head.Status != state.StatusPaused {
		return fmt.Errorf("%w: run %s is %s", ErrNotPaused, id, head.Status)
	}
	if spec, err := e.store.Spec(ctx, id); err != nil {
		return fmt.Errorf("resume run %s: load spec: %w", id, err)
	} else if err := e.keysHeld(id, spec); err != nil {
		return err
	}
	children, err := e.store.Children(ctx, id)
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := e.resumeRun(ctx, c); err != nil && !errors.Is(err, ErrNotPaused) {
			return err
		}
	}
	if _, err := e.claim(ctx, id); err != nil {
		return fmt.Errorf("resume run %s: %w", id, err)
	}
	now := e.now().UTC()
	head.Status = state.StatusRunning
	head.UpdatedAt = now
	c := &state.Commit{RunID: id, ExpectRevision: head.Revision, Run: &head,
		Events: []state.Event{{Time: now, Type: state.EventRun, Status: record.RunEvent(state.StatusRunning), Message: "resumed"}}}
	if err := e.store.Commit(ctx, c); err != nil {
		e.release(id)
		return fmt.Errorf("resume run %s: %w", id, err)
	}
	if e.dispatched() {
		// Cluster mode: whichever node takes the run's claim drives it.
		e.release(id)
		if p := publisherOf(e.cfg.Dispatcher); p != nil {
			p.PublishEvent(id, c.Events[0])
		}
		e.enqueue(ctx, id, time.Time{})
		return nil
	}
	return e.resume(ctx, head)
}

// Wait blocks until the run ends and returns its final head.
func (e *Executor) Wait(ctx context.Context, id string) (state.Run, error) {
	for {
		e.mu.Lock()
		r := e.runs[id]
		e.mu.Unlock()
		if r != nil {
			select {
			case <-r.done:
			case <-ctx.Done():
				return state.Run{}, ctx.Err()
			}
		}
		head, err := e.store.Run(ctx, id)
		if err != nil {
			return state.Run{}, err
		}
		if head.Status.Terminal() {
			return head, nil
		}
		if r == nil {
			// Known but not driven here (paused, or the executor stopped).
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return state.Run{}, ctx.Err()
			case <-e.baseCtx.Done():
				return head, ErrStopped
			}
		}
	}
}

// Subscribe returns the live events of a run published after the call.
// The channel is closed after the run's final event, or when the
// subscriber falls more than a buffer behind; callers then read the store
// after their last seen Seq and subscribe again if the run goes on. The
// returned function unsubscribes; it is idempotent.
func (e *Executor) Subscribe(id string) (<-chan state.Event, func()) {
	return e.broker.subscribe(id, false)
}

// SubscribeTree is Subscribe plus live-only events (Seq 0, RunID set):
// the run's operations starting, and every event of its active descendant
// runs (children spawned by it, their children, ...). Live-only events are
// not stored and are not replayed after a reconnect.
func (e *Executor) SubscribeTree(id string) (<-chan state.Event, func()) {
	return e.broker.subscribe(id, true)
}

// Active returns the ids of the runs being driven, sorted.
func (e *Executor) Active() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]string, 0, len(e.runs))
	for id := range e.runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (e *Executor) unregister(r *runner) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runs[r.head.ID] == r {
		delete(e.runs, r.head.ID)
	}
}

// closeRunResources tells every handler that the run is gone.
func (e *Executor) closeRunResources(ctx context.Context, id string) { e.hs.CloseRun(ctx, id) }
