package handlers

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
)

// The ports: what a handler may ask of the server beyond Deps' plain
// values. Package handlers names no store, sandbox service or gateway;
// the server (package app, and the executor for the run starter and the
// journal) wires the services in, so a handler package links only what
// it uses.

// RunHead is what a handler sees of a run's head record in the journal.
type RunHead struct {
	ID       string
	Workflow string
	ParentID string
	Status   record.Status
	// Step counts the run's phase calls.
	Step      uint64
	EndReason string
	Result    json.RawMessage
	Error     string
	Usage     operations.RunUsage
	Limits    operations.RunLimits
	WorkDir   string
}

// JournalOp is one journaled operation as a handler reads it.
type JournalOp struct {
	// ID is "<run>/<step>/<index>".
	ID   string
	Step uint64
	// Done is true once the result is journaled.
	Done    bool
	Request operations.Request
	// Result is the journaled result; nil while the op is pending.
	Result *operations.Result
}

// Journal reads the server's journal: a run's head and its operations.
// The generate handler replays recorded runs and rebuilds a scripted
// model's place from it; the external handler finds its session runs'
// answers in it.
type Journal interface {
	// Run reads the head of run id.
	Run(ctx context.Context, id string) (RunHead, error)
	// Ops yields every operation of run id in step order, then stops; an
	// error ends the sequence.
	Ops(ctx context.Context, id string) iter.Seq2[JournalOp, error]
	// StepOps reads the operations of one step of run id, by index.
	StepOps(ctx context.Context, id string, step uint64) ([]JournalOp, error)
}

// Runs starts child runs. The executor implements it, so that a handler
// starting runs (spawn) needs no import of the executor.
type Runs interface {
	// StartChild starts the child run of the operation c.OpID of run
	// c.ParentID, or after a crash finds the one started before (the
	// child's id derives from the op's).
	StartChild(ctx context.Context, c Child) (RunHead, error)
	// WaitChild waits until the run ends and returns its head. When ctx
	// ends first for any reason but the executor stopping or the parent
	// pausing (a time limit), it cancels the child.
	WaitChild(ctx context.Context, id string) (RunHead, error)
}

// Child describes a child run to start.
type Child struct {
	// ParentID and OpID are the spawning run and operation.
	ParentID string
	OpID     string
	Workflow string
	Settings json.RawMessage
	Task     string
	// WorkDir is the child's work directory; "" means
	// ParentWorkDir/children/<child id>.
	WorkDir       string
	ParentWorkDir string
}

// Sandbox is a sandbox service as the sandbox operation uses it: the one
// the server hosts (flock serve --sandbox-config; package app adapts
// it), or one over AgentFlow's HTTP API. A worker is the id a run's
// sessions are kept under.
type Sandbox interface {
	// Tool looks a tool up by its full name ("resource:tool"): ok is
	// false when the sandbox does not have it; err is a sandbox that
	// refused to answer.
	Tool(ctx context.Context, name string) (info SandboxTool, ok bool, err error)
	// ToolNames lists the full names of the sandbox's tools, hidden ones
	// included.
	ToolNames(ctx context.Context) ([]string, error)
	// CreateSession creates the worker's session of resource type rt;
	// its answer's data says "status": "exists" when it was there.
	CreateSession(ctx context.Context, worker, rt string) (SandboxAnswer, error)
	// ForkSession creates the worker's session of rt as a fork of the
	// worker from's.
	ForkSession(ctx context.Context, worker, from, rt string) (SandboxAnswer, error)
	// Execute runs one action in the worker's sessions.
	Execute(ctx context.Context, worker string, a SandboxAction) (SandboxAnswer, error)
	// DestroySession ends the worker's session of rt, if any.
	DestroySession(ctx context.Context, worker, rt string)
}

// SandboxTool is what the sandbox operation needs of a tool's schema.
type SandboxTool struct {
	FullName     string          `json:"full_name"`
	ResourceType string          `json:"resource_type"`
	Description  string          `json:"description,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
	// Stateless tools run without a session.
	Stateless bool `json:"stateless,omitempty"`
}

// SandboxAnswer is the sandbox's answer to a call (AgentFlow's envelope):
// code 0 is success; data and meta are JSON as the wire carries them.
type SandboxAnswer struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Meta    json.RawMessage `json:"meta"`
}

// SandboxAction is one call of a sandbox tool.
type SandboxAction struct {
	// Action is the tool's full name ("resource:tool").
	Action string
	Params map[string]any
	// Timeout bounds the call; 0 is the sandbox's default.
	Timeout time.Duration
}

// Service returns the first of d.Services that is a T (a type or an
// interface its consumer declares), and whether there was one. A handler
// whose service only it uses (the external handler's model gateway)
// finds it this way, so package handlers need not name it.
func Service[T any](d Deps) (T, bool) {
	for _, s := range d.Services {
		if v, ok := s.(T); ok {
			return v, true
		}
	}
	var zero T
	return zero, false
}
