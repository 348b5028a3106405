package record

// EventType says what a run's event is about. The values are wire names:
// the "type" of an event in the journal, the SSE "event:" line and the
// "type" of the API's Event.
type EventType string

// Event types.
const (
	// EventRun: the run's status changed (its Status is the run's new
	// Status) or, live only, its commits stalled or went on.
	EventRun EventType = "run"
	// EventPhase: a phase was called and its output committed.
	EventPhase EventType = "phase"
	// EventOp: an operation started, finished or waits.
	EventOp EventType = "op"
)

// EventStatus says what happened to the subject of an event. A run
// event's status is a run Status (see RunEvent), EventWarning, or one of
// the live-only EventStalled and EventUnstalled; the others belong to
// phase and op events. The values are wire names.
type EventStatus string

// Event statuses besides the run statuses.
const (
	// EventStalled (run, live only): the run's commits fail (a full disk)
	// and are being retried; the message says why.
	EventStalled EventStatus = "stalled"
	// EventUnstalled (run, live only): a stalled run's commit went through.
	EventUnstalled EventStatus = "unstalled"
	// EventWarning (run, journaled): something the operator should know
	// that does not stop the run, such as a work-dir snapshot that could
	// not hold a file or be written; the message says what. Its data is
	// the warning's own (a snapshot's: {"snapshot_step", "failed",
	// "stopped", "not_snapshotted"}).
	EventWarning EventStatus = "warning"
	// EventCommitted (phase): the phase's output is journaled.
	EventCommitted EventStatus = "committed"
	// EventStarted (op, live only): the operation was dispatched.
	EventStarted EventStatus = "started"
	// EventOK (op): the operation finished without an error.
	EventOK EventStatus = "ok"
	// EventError (op): the operation finished with an error (its data
	// holds the error and the failure code).
	EventError EventStatus = "error"
	// EventWaiting (op, live only): the operation waits on something
	// outside its control (a rate limit, a person); the message says until
	// when.
	EventWaiting EventStatus = "waiting"
)

// RunEvent is the status of a run event that announces the run's status s.
func RunEvent(s Status) EventStatus { return EventStatus(s) }

// FinalEvent reports whether an event of type t and status s is a run's
// terminal run event, the last of its stream: every reader of a stream
// (the server's, the command line's, a cluster node's, the Go client's)
// stops after it.
func FinalEvent(t EventType, s EventStatus) bool {
	return t == EventRun && Status(s).Terminal()
}

// NoticeEvent reports whether a live-only event of type t and status s
// says what holds a run: its commits stalling or going on again, an
// operation waiting. The engine gives these to every subscriber of the
// run, not only to those that follow its whole tree.
func NoticeEvent(t EventType, s EventStatus) bool {
	switch t {
	case EventRun:
		return s == EventStalled || s == EventUnstalled
	case EventOp:
		return s == EventWaiting
	}
	return false
}
