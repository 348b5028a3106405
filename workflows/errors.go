package workflows

import "errors"

var (
	// ErrUnknownWorkflow is returned when a start request names no registered workflow.
	ErrUnknownWorkflow = errors.New("unknown workflow")
	// ErrBadRequest wraps invalid start requests (settings, task, names).
	ErrBadRequest = errors.New("bad request")
	// ErrEnded is returned when cancelling or pausing a run that has already ended.
	ErrEnded = errors.New("run already ended")
	// ErrStopped is returned by calls made after the executor was stopped.
	// It is also the cancellation cause of the contexts handed to handlers
	// when the executor stops (context.Cause), so that a handler can tell a
	// shutdown (the op runs again after the restart) from a cancel.
	ErrStopped = errors.New("executor stopped")
	// ErrPaused is the cancellation cause of a paused run's contexts
	// (context.Cause): its operations are interrupted and run again when
	// the run is resumed.
	ErrPaused = errors.New("run paused")
	// ErrNotPaused is returned when resuming a run that is not paused.
	ErrNotPaused = errors.New("run is not paused")
	// ErrNoQuestion is returned when answering an operation that does not
	// exist or that no person answers (a wrong op id).
	ErrNoQuestion = errors.New("no such question")
	// ErrAnswered is returned when answering a question answered before.
	ErrAnswered = errors.New("question already answered")
	// ErrNotWaiting is returned by Intervene for a run that waits for no
	// intervention.
	ErrNotWaiting = errors.New("run is not waiting for an intervention")
	// ErrBadFork is returned for a fork request that cannot be honoured
	// (a step the run never reached, vars that are not JSON).
	ErrBadFork = errors.New("bad fork request")
	// ErrKeyNeeded is returned when a run cannot be driven because its
	// settings name an API key that was given on the command line of the
	// command that started it, and this process does not hold it (package
	// keyring): that command must run again.
	ErrKeyNeeded = errors.New("run needs an API key held only by the command that started it")
	// ErrUndeclaredNext fails a run whose phase returns a Next its workflow does not declare.
	ErrUndeclaredNext = errors.New("phase returned an undeclared next phase")
)

// ErrNotDriven is returned by Executor.Control for a run this executor
// does not drive.
var ErrNotDriven = errors.New("run is not driven by this executor")
