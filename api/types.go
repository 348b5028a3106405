package api

import (
	"encoding/json"
	"time"

	"github.com/flockrun/flock/record"
)

// Status is a run's status: running, paused, succeeded, failed or
// cancelled.
type Status = record.Status

// EventType says what an event is about: run, phase or op
// (record.EventRun, EventPhase, EventOp).
type EventType = record.EventType

// EventStatus says what happened to the subject of an event (a run
// status, or one of record's Event statuses).
type EventStatus = record.EventStatus

// StartRequest is the body of POST /start_workflow. The workflow may also
// be named by settings.workflow_type.
type StartRequest struct {
	Workflow string          `json:"workflow,omitempty" doc:"the registered workflow to run"`
	Settings json.RawMessage `json:"settings,omitempty" doc:"the run settings (a JSON object)"`
	Task     string          `json:"task,omitempty" doc:"the task given to the workflow"`
}

// RunStatus answers start, cancel, pause and resume.
type RunStatus struct {
	RunID  string `json:"run_id"`
	Status Status `json:"status"`
	// Warnings are start's settings warnings (unknown keys, Flock keys
	// flock ignores); they never reject the run.
	Warnings []string `json:"warnings,omitempty"`
	// Resumed says that a hand-over (POST /operator/runs) found the
	// unfinished run of the same command and resumed it instead of
	// starting one.
	Resumed bool `json:"resumed,omitempty"`
}

// Run is a run's head: GET /runs/{id} and the items of GET /runs.
type Run struct {
	ID        string          `json:"id"`
	Workflow  string          `json:"workflow"`
	Status    Status          `json:"status"`
	Phase     string          `json:"phase" doc:"the phase called last (empty before the first call)"`
	ParentID  string          `json:"parent_id" doc:"the run that spawned this one, if any"`
	Step      uint64          `json:"step"`
	Entries   uint64          `json:"entries" doc:"the number of entries in the run's log"`
	Usage     Usage           `json:"usage"`
	Limits    Limits          `json:"limits"`
	EndReason string          `json:"end_reason"`
	Result    json.RawMessage `json:"result" doc:"the workflow's result once it succeeded (any JSON), else null"`
	Error     string          `json:"error"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	EndedAt   *time.Time      `json:"ended_at,omitempty"`
	// ForkedFrom names the run and step this run was forked from.
	ForkedFrom *ForkRef `json:"forked_from,omitempty" doc:"the run and step this run was forked from"`
	// Driver and DrivenSince name the cluster node that took the run up
	// last and when (absent outside a cluster).
	Driver      string     `json:"driver,omitempty" doc:"cluster mode: the node that drives the run (or drove it last, if it is queued, parked or ended)"`
	DrivenSince *time.Time `json:"driven_since,omitempty" doc:"cluster mode: since when the driver drives the run"`
	// Stalled and Waiting say what holds a live run (GET /runs/{id}
	// only): commits retried for lack of disk space, operations waiting on
	// a rate limit. Absent when nothing does.
	Stalled string `json:"stalled,omitempty" doc:"why the run's commits are failing and being retried"`
	Waiting []Wait `json:"waiting,omitempty" doc:"operations waiting on something outside their control, oldest first"`
	// Task, Children and Questions describe the run in a list: its
	// task's first line, how many child runs it has, how many questions
	// it waits on a person for.
	Task      string `json:"task,omitempty" doc:"the first line of the run's task, at most 200 characters"`
	Children  int    `json:"children,omitempty" doc:"the number of the run's child runs"`
	Questions int    `json:"questions,omitempty" doc:"the questions the run waits on a person for (GET /runs/{id}/human)"`
	// Vars are the run's variables as of its last step (GET /runs/{id}
	// only).
	Vars map[string]json.RawMessage `json:"vars,omitempty" doc:"GET /runs/{id} only: the run's variables as of its last step"`
}

// Usage is what a run has consumed.
type Usage struct {
	Tokens  int     `json:"tokens"`
	Actions int     `json:"actions"`
	Seconds float64 `json:"seconds"`
	Cost    float64 `json:"cost"`
	// ReplayHits and ReplayMisses count a replaying run's generates
	// answered from the recorded run (no tokens paid) and those that fell
	// back to the live model.
	ReplayHits   int `json:"replay_hits,omitempty" doc:"generates answered from the replay_from run's journal"`
	ReplayMisses int `json:"replay_misses,omitempty" doc:"generates of a replaying run that fell back to the live model"`
}

// Limits caps a run's usage; an absent field means no limit.
type Limits struct {
	Tokens  int     `json:"tokens,omitempty"`
	Actions int     `json:"actions,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Cost    float64 `json:"cost,omitempty"`
}

// Wait is one operation's wait.
type Wait struct {
	OpID   string    `json:"op_id"`
	Reason string    `json:"reason"`
	Until  time.Time `json:"until"`
	// Message is the reason with the time left when the head was read:
	// "rate limited by gpt-4o-mini, retrying in 42 s".
	Message string `json:"message"`
}

// Runs is a page of GET /runs.
type Runs struct {
	Runs []Run  `json:"runs"`
	Next string `json:"next" doc:"the cursor for the next page (after=); empty when there was no more. A search (q=) reads a bounded number of runs per request: its page may hold fewer runs than the limit, or none, and still have a next"`
}

// Entry is one record of a run's entry log.
type Entry struct {
	Seq   uint64          `json:"seq"`
	Type  string          `json:"type" doc:"the record type, e.g. message, option, tool_output"`
	Phase string          `json:"phase,omitempty"`
	Step  uint64          `json:"step,omitempty"`
	Data  json.RawMessage `json:"data" doc:"the record (any JSON)"`
}

// Entries is a page of GET /runs/{id}/entries.
type Entries struct {
	Entries []Entry `json:"entries"`
	Next    string  `json:"next" doc:"the cursor for the next page (after=); empty when there was no more. With type= a request reads a bounded number of entries: its page may hold fewer entries than the limit, or none, and still have a next"`
}

// ModelUsage is what one model's generate operations used.
type ModelUsage struct {
	Model            string  `json:"model" doc:"the model named in the requests"`
	Calls            int     `json:"calls" doc:"finished generate operations"`
	Errors           int     `json:"errors" doc:"of those, the ones that failed"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
}

// UsageByModel answers GET /runs/{id}/usage.
type UsageByModel struct {
	Models    []ModelUsage `json:"models" doc:"by model name"`
	Runs      int          `json:"runs" doc:"the runs counted: the run, and its descendants when asked"`
	Truncated bool         `json:"truncated,omitempty" doc:"the run has more descendants than one request counts (1,000); those past them are left out"`
}

// Op is one operation of a run's journal.
type Op struct {
	ID         string     `json:"id" doc:"<run>/<step>/<index>, stable across resumes"`
	RunID      string     `json:"run_id"`
	Step       uint64     `json:"step"`
	Index      int        `json:"index"`
	Phase      string     `json:"phase"`
	Status     string     `json:"status" doc:"pending, running or done"`
	Request    OpRequest  `json:"request"`
	Result     *OpResult  `json:"result,omitempty"`
	Attempts   int        `json:"attempts" doc:"dispatches, including the one that produced the result"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// OpRequest is what a phase asked for.
type OpRequest struct {
	Type   string            `json:"type" doc:"the operation kind, e.g. generate, bash, spawn"`
	Params json.RawMessage   `json:"params,omitempty" doc:"the kind's parameters (a JSON object)"`
	Meta   map[string]string `json:"meta,omitempty"`
}

// OpResult is what an operation returned.
type OpResult struct {
	Type  string            `json:"type"`
	Error string            `json:"error,omitempty"`
	Code  string            `json:"code,omitempty" doc:"why the operation failed, when known: model_error, rate_limited, timeout, unavailable"`
	Meta  map[string]string `json:"meta,omitempty"`
	Data  json.RawMessage   `json:"data,omitempty" doc:"the kind's result (a JSON object)"`
}

// Ops is a page of GET /runs/{id}/ops.
type Ops struct {
	Ops  []Op   `json:"ops"`
	Next string `json:"next" doc:"the op id to pass as after= for the next page; empty when there was no more"`
}

// Event is one item of a run's event stream (the data of one Server-Sent
// Event of GET /runs/{id}/events).
//
// Stored events have Seq >= 1 and are replayed after a reconnect. Live-only
// events (?descendants=true: operations starting, events of descendant
// runs) have Seq 0 and carry RunID.
type Event struct {
	Seq     uint64          `json:"seq"`
	RunID   string          `json:"run_id,omitempty"`
	Time    time.Time       `json:"time"`
	Type    EventType       `json:"type" doc:"what the event is about: run, phase or op"`
	Status  EventStatus     `json:"status,omitempty" doc:"what happened: a run status, warning, stalled or unstalled (run); committed (phase); started, ok, error or waiting (op)"`
	Phase   string          `json:"phase,omitempty"`
	Step    uint64          `json:"step,omitempty"`
	OpID    string          `json:"op_id,omitempty"`
	Kind    string          `json:"kind,omitempty"`
	Message string          `json:"message,omitempty"`
	Data    json.RawMessage `json:"data,omitempty" doc:"event-specific details (small JSON)"`
}

// Events is a page of a run's stored events: GET /runs/{id}/events asked
// with "Accept: application/json".
type Events struct {
	Events []Event `json:"events"`
	Next   string  `json:"next" doc:"the cursor for the next page (after=); empty when there was no more"`
}

// Final reports whether ev is a run's terminal run event, the last of its
// stream (record.FinalEvent).
func (ev Event) Final() bool { return record.FinalEvent(ev.Type, ev.Status) }

// Graph describes a registered workflow.
type Graph struct {
	Name        string              `json:"name"`
	Description string              `json:"description,omitempty"`
	Source      string              `json:"source" doc:"builtin, a YAML file or a plugin"`
	Start       string              `json:"start"`
	Phases      []string            `json:"phases"`
	Transitions map[string][]string `json:"transitions" doc:"each phase's possible next phases"`
	Settings    []string            `json:"settings,omitempty" doc:"the workflow's own top-level settings keys (besides the common ones), when it declares them"`
}

// Workflows answers GET /workflows.
type Workflows struct {
	Workflows []Graph `json:"workflows"`
}

// Health answers GET /health.
type Health struct {
	Status  string `json:"status" doc:"ok, degraded, or unavailable (answered with 503)"`
	Stalled int    `json:"stalled_runs,omitempty" doc:"runs whose commits are being retried"`
	Reason  string `json:"reason,omitempty" doc:"why (the first stalled run found)"`
}

// Error is the body of every error response.
type Error struct {
	Error string `json:"error" doc:"what is wrong, naming the field, header or run; a 500 carries only the request id"`
}

// ForkRequest is the body of POST /runs/{id}/fork.
type ForkRequest struct {
	Step    uint64                     `json:"step" doc:"the step to fork from: 0 (the start) to the run's current step"`
	Vars    map[string]json.RawMessage `json:"vars,omitempty" doc:"vars to replace in the fork (a JSON null deletes one)"`
	Message string                     `json:"message,omitempty" doc:"a message appended to the fork's log (an operator_message entry the agent sees)"`
}

// Forked answers POST /runs/{id}/fork.
type Forked struct {
	RunID  string `json:"run_id"`
	Status Status `json:"status"`
	// Warnings say what of the work directory at the step the fork could
	// not restore (files not snapshotted, a snapshot that failed or
	// stopped); the fork is started all the same.
	Warnings []string `json:"warnings,omitempty" doc:"what of the work directory at the step the fork could not restore"`
}

// ForkRef names the run and step a run was forked from.
type ForkRef struct {
	Run  string `json:"run"`
	Step uint64 `json:"step"`
}

// Scale is a question's rating scale.
type Scale struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Question is an operation waiting for a person: a human question or an
// intervention (GET /runs/{id}/human).
type Question struct {
	OpID     string          `json:"op_id" doc:"the operation to answer (POST /runs/{id}/human/{op_id}/answer)"`
	Kind     string          `json:"kind" doc:"human or intervention"`
	Question string          `json:"question"`
	Choices  []string        `json:"choices,omitempty" doc:"the only answers accepted, when set"`
	Scale    *Scale          `json:"scale,omitempty" doc:"the answer is a number in this range, when set"`
	Action   json.RawMessage `json:"action,omitempty" doc:"intervention: the action waiting for approval or replacement ({name, arguments})"`
	AskedAt  time.Time       `json:"asked_at"`
}

// Questions answers GET /runs/{id}/human.
type Questions struct {
	Pending []Question `json:"pending"`
}

// AnswerRequest is the body of POST /runs/{id}/human/{op_id}/answer.
type AnswerRequest struct {
	Answer json.RawMessage `json:"answer" doc:"a JSON string or number (a choice, a rating); for an intervention \"approve\", {\"approve\": true} or {\"action\": {...}}"`
}

// InterveneRequest is the body of POST /runs/{id}/intervene: Action
// replaces the action the run waits to execute; Approve lets it run.
type InterveneRequest struct {
	Action  json.RawMessage `json:"action,omitempty" doc:"the action to execute instead: {\"name\": TOOL, \"arguments\": {...}}"`
	Approve bool            `json:"approve,omitempty" doc:"let the proposed action run"`
}

// OK answers the routes that only acknowledge.
type OK struct {
	OK bool `json:"ok"`
}

// RunCounts answers GET /stats/runs: how many runs the store holds, by
// status.
type RunCounts struct {
	Total     int `json:"total"`
	Running   int `json:"running"`
	Paused    int `json:"paused"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// Handover is the body of POST /operator/runs: a run the command line
// (flock run, rollout, synthesize) hands to the server that holds its
// data directory, with what the person at the terminal grants it. Only a
// request bearing the operator token of the data directory's server file
// may send one.
type Handover struct {
	Workflow string          `json:"workflow,omitempty"`
	Settings json.RawMessage `json:"settings,omitempty"`
	Task     string          `json:"task,omitempty"`
	// Key names the command (a hash of its resolved configuration): an
	// unfinished top-level run started with the same key is resumed
	// instead of starting another.
	Key string `json:"key,omitempty" doc:"the command's key: the unfinished run of the same command is resumed instead"`
	// ReadRoots and WriteRoots are absolute directories the run (and its
	// descendants) may read, and write, besides the server's read_roots:
	// the files and output directories named on the command line.
	ReadRoots  []string `json:"read_roots,omitempty" doc:"absolute directories the run tree may read"`
	WriteRoots []string `json:"write_roots,omitempty" doc:"absolute directories the run tree may write"`
	// Keys are API keys given literally in the command's config file, by
	// the FLOCK_KEY_... names its settings use: kept in the server's
	// memory only, never stored.
	Keys map[string]string `json:"keys,omitempty" doc:"API keys by their FLOCK_KEY_ names; held in memory only"`
}

// HandoverResume is the body of POST /operator/runs/{id}/resume.
type HandoverResume struct {
	Keys map[string]string `json:"keys,omitempty" doc:"API keys by their FLOCK_KEY_ names; held in memory only"`
}

// Operator answers GET /operator: the server that holds a data directory,
// as the command line checks it before handing a run over.
type Operator struct {
	DataDir string `json:"data_dir" doc:"the absolute data directory the server holds"`
	PID     int    `json:"pid"`
	Mode    string `json:"mode" doc:"live or simulated"`
	// Sandbox says the server hosts a sandbox service (serve
	// --sandbox-config): runs without sandbox_url use it.
	Sandbox bool `json:"sandbox"`
}
