// Package workflows runs workflows: the executor that calls phases, journals
// their output, dispatches operations and resumes runs after a crash.
//
// # Start
//
// StartRun checks a run's settings before creating it: the common keys
// (configs.ParseRunSettings), the workflow's (Workflow.CheckSettings, which
// also refuses two keys governing the same thing, naming both) and the
// handlers' (handlers.RunValidator, such as generate's API-key check and
// bash's isolation check); any error rejects the start. Keys no one
// reads are not errors: StartRunWithWarnings returns them as warnings
// (configs.SettingsWarnings over the common keys and Workflow.Settings),
// and the run's first event, "created", carries them in its data as
// {"warnings": [...]}. A start request's workflow and its settings'
// workflow_type must agree when both are given.
//
// # Run loop
//
// Each active run is driven by one goroutine owned by the Executor while
// it works; a run waiting for a phase's Delay holds none (see Delays). A step
// is: call the phase named by the head's Next with the previous step's
// results; commit, in one transaction, the entries it appended, its vars,
// its operations (as pending) and the new head; dispatch the operations in
// parallel under per-kind concurrency limits; journal each result the moment
// it arrives; when all are done, start the next step.
//
// The result that completes a step is not given a transaction of its own:
// it is written in the same transaction as the next phase's output
// (committed right after that phase is called, microseconds later) or as
// the run's end. One fsync then covers both, so a step with operations
// costs one fsync instead of two, and the result is exactly as durable as
// one whose own fsync is still in flight: a crash before that commit runs
// the operation again, as it would have a moment earlier.
//
// # Delays
//
// A phase's Output.Delay sets the head's WakeAt. A run whose next call is
// not due yet is parked: its goroutine returns, the run stays registered
// (Active, Live, Wait, Subscribe and the lease renewal see it as before),
// and a runtime timer (time.AfterFunc, no goroutine) relaunches its loop
// at WakeAt on a fresh goroutine. The end of the run's context also wakes
// it (context.AfterFunc), so Cancel, Pause, a lost lease and Stop act on a
// parked run at once, as on a working one: it is woken, sees its context
// done and ends, pauses or stops. A parked run stays counted by the
// Executor's WaitGroup from launch until it is no longer driven, so Stop
// waits for every wake it caused and no relaunch outlives it. An idle run
// therefore costs its heap (runner, head, broker topic, its newest page
// in the entry cache), not a goroutine stack.
//
// # Questions
//
// Operations a person answers (their handler is a handlers.Asker: the
// human and intervention kinds) are never dispatched. Once the step's
// other operations are done, a run with an unanswered question announces
// each one to its live subscribers (a live-only "op" event with status
// "waiting" and message "waiting for an answer: QUESTION") and parks like
// a delayed run, with no goroutine and no timer: Answer (the route POST
// /runs/{id}/human/{op}/answer) checks the answer with the handler, hands
// it to the parked run and wakes it; the run journals it as the op's
// result and Answer returns once it is on disk. The end of the run's
// context wakes it too (Cancel, Pause, Stop). A paused run's question is
// answered by journaling the result directly; a run waiting after a
// restart parks again and takes the answer the same way. Questions lists
// the current step's pending questions; a second answer is ErrAnswered, an
// op that is no question ErrNoQuestion; Intervene answers the pending
// intervention.
//
// # Fork
//
// Each phase commit's event carries the step's record (stepData: next
// phase, op kinds, entries appended, vars set, usage, pending end), so
// the head of any past step can be rebuilt from the run's events. Fork
// starts a new run from it: the entries up to the step and the ops of
// steps 1..N are copied under the new run's id in one commit (step N's
// results, when they were in, feed the next phase again; pending ones are
// dispatched), vars may be edited, a message appended as an
// operator_message entry, and the new head says ForkedFrom {run, step}.
// A fork's first event carries its head at the fork step (forkData); a
// fork of a fork at a step before its fork step reads the origin run.
//
// # Work-dir snapshots
//
// After the operations of a step (and at step 0) the run's work directory
// is snapshotted (snapshot.go): a manifest of path → content hash, mode
// is written beside the runs' directories only when something changed
// (an empty directory with no earlier manifest needs none),
// contents go to a content-addressed store shared by all runs (one copy
// per distinct content), and only files whose size, mode or modification
// time changed are read again. A step writes its manifest as a delta (the
// files added, changed, removed) appended to the log of the run's last
// whole manifest, and writes it whole only when that log would outgrow
// the whole manifest (or 4 KiB): persisting a step costs what it changed,
// and reading any step's manifest at most about two whole ones. A fork
// copies the newest manifest at or before its step into its own work
// directory (copies, not links).
// Children's directories (children/) are left out. Config.NoSnapshots
// turns snapshots off.
//
// Snapshots are bounded and never fail the run. Only a file's data
// extents are read and stored (package internal/sparse), with the layout
// of its holes; a file with more data than Config.SnapshotMaxFileBytes,
// or that the run's remaining Config.SnapshotMaxRunBytes cannot take, or
// that the store cannot take (a full disk), is recorded in the manifest
// without its content and with why ("not_snapshotted"); a run whose
// budget cannot take a manifest writes one last small manifest saying
// its snapshots stopped there. The walk and the reads go through an
// os.Root at the work directory (a run swapping a file for a link cannot
// make the snapshot read outside it) and never wait on a FIFO. What goes
// wrong is a "warning" run event (state.EventWarning) in the run's next
// commit; a fork (ForkWithWarnings) reads the manifest's skipped files,
// a stop, and the warnings of manifests that could not be written, and
// says what it could not restore.
//
// # Resume
//
// On Start every run whose head says running is loaded again: the results
// journaled for its current step are reused and only pending operations are
// dispatched again (at-least-once). A phase whose output was never committed
// is simply called again. The run's entry log is not loaded (see below), so
// resuming costs the same at any length of history.
//
// # The state view and the entry cache
//
// A run holds none of its entries. The phases.State a phase is called with
// (and handlers.Env.State) is a snapshot of the head and of the first
// head.Entries entries as of the start of the step; Entry(i) pages the log
// from the store through a cache shared by every run (Config.EntryCacheBytes,
// default 64 MiB): pages of 64 entries keyed by run and Seq, evicted least
// recently used first. A commit puts the entries it appended into the cache,
// so the newest entries, which phases read first, are normally there; a
// scan of a history bigger than the cache reads the store page by page. The
// log is append-only, so a cached page is never stale, and the snapshot is
// consistent because nothing appends to a run's log while a phase or one of
// its step's handlers runs. The memory of a live run is therefore its head,
// spec and current ops, whatever the length of its history; the cache's
// memory is bounded for all runs together (EntryCacheStats reports it).
//
// A read of the log that fails (the store errs, or returns an entry other
// than the one asked for) is never turned into a different entry: Entry
// returns the zero Entry and the view records the error; when the phase
// returns, its output is discarded (when a handler returns, its result is
// not journaled) and the run is interrupted as by a failed commit: the
// error is logged naming the run and the entry, the run stops being driven
// and stays running in the store, and it resumes on the next start (in
// cluster mode it is released to the dispatcher, which hands it to a node
// again). An
// index out of range panics, as on a slice; the phase fails.
//
// # Ownership
//
// An executor drives only the runs it holds a lease on (state.Leaser,
// owner Config.Owner): StartRun claims a run before creating it, resume
// (Start, Resume) claims it before loading it, and a run's goroutine
// releases the lease when it stops or ends. One executor goroutine renews
// the leases of the driven runs every LeaseTTL/3; a run whose lease was
// lost stops being driven. Every commit made for a run passes the head
// revision the executor last wrote (Commit.ExpectRevision), so once
// another owner has written the run, this executor's next commit fails
// with state.ErrFenced, writes nothing, and the run stops being driven
// here. With the bbolt store, one process owns the file and the fence
// never trips.
//
// # Cluster mode
//
// With Config.Dispatcher set (package cluster, `flock serve --cluster`)
// the executor is one of several nodes sharing a store, and drives only
// the runs the dispatcher hands it (Drive), which claims the run's lease
// and resumes it as after a crash. Start resumes nothing; StartRun, Fork
// and Resume write the run and Enqueue it, so that whichever node takes
// its claim drives it. A run that waits for a Delay longer than
// Config.HandoffDelay (default 10 s) is unloaded instead of parked: the
// result that completed its step is journaled, its lease released, and
// the dispatcher enqueues it again at WakeAt. Every run that stops being
// driven is reported to Dispatcher.Unloaded with why (ended or paused,
// parked, stopped, lost to another owner, store failure), so that the
// dispatcher settles its claim. Cancel, Pause and Answer of a run this
// executor does not drive go to the node that does (Controller); when no
// node drives it, Cancel and Pause write the store directly, fenced by
// the head revision they read. Events of driven runs are also given to an
// EventPublisher, for the other nodes' event streams. Without a
// Dispatcher nothing of this applies and behaviour is as described above.
//
// # Caveats
//
// Phases run on the run's goroutine; a phase that never returns blocks its
// run (but no other run). Stop leaves runs in status running so that the
// next Start resumes them; operations interrupted by Stop are not journaled
// and run again after the restart.
package workflows
