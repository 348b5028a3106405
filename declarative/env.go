package declarative

import "github.com/flockrun/flock/operations"

// Env is what the expressions of a declarative workflow see. Field names
// in expressions are the expr tags: vars, settings, results, task, step,
// phase, entries, usage, limits, run, item, index and the function
// history(type).
type Env struct {
	// Vars are the run's vars (JSON values), over the file's vars defaults.
	// Within a phase, set assignments update it in order.
	Vars map[string]any `expr:"vars"`
	// Settings is the run's settings document over the file's settings
	// defaults (top-level keys).
	Settings map[string]any `expr:"settings"`
	// Results are the previous phase's operation results in request order.
	Results []ResultView `expr:"results"`
	Task    string       `expr:"task"`
	// Step counts phase calls in the run, starting at 1.
	Step int `expr:"step"`
	// Phase is the name of the phase being evaluated.
	Phase string `expr:"phase"`
	// Entries is the number of entries in the run's log (including those
	// appended earlier in this phase call).
	Entries int        `expr:"entries"`
	Usage   UsageView  `expr:"usage"`
	Limits  LimitsView `expr:"limits"`
	Run     RunView    `expr:"run"`
	// Item and Index are the element and position of an op's for_each list
	// while that op is templated; nil and 0 elsewhere.
	Item  any `expr:"item"`
	Index int `expr:"index"`
	// History returns the data of the log's entries of a type, oldest
	// first, including entries appended earlier in this phase call.
	History func(typ string) []any `expr:"history"`
}

// RunView identifies the run.
type RunView struct {
	ID       string `expr:"id" json:"id"`
	ParentID string `expr:"parent_id" json:"parent_id"`
	Workflow string `expr:"workflow" json:"workflow"`
}

// UsageView is what the run has consumed so far.
type UsageView struct {
	Tokens  int     `expr:"tokens" json:"tokens"`
	Actions int     `expr:"actions" json:"actions"`
	Seconds float64 `expr:"seconds" json:"seconds"`
	Cost    float64 `expr:"cost" json:"cost"`
}

// LimitsView is the run's limits (0: none).
type LimitsView struct {
	Tokens  int     `expr:"tokens" json:"tokens"`
	Actions int     `expr:"actions" json:"actions"`
	Seconds float64 `expr:"seconds" json:"seconds"`
	Cost    float64 `expr:"cost" json:"cost"`
}

// ResultView is a flat view of one operation result: kind, error,
// failure (the failure code, e.g. "model_error"), ok and meta, then the
// fields every registered operation kind declares
// (operations.KindInfo.View), zero unless they are the result's own kind's.
// The compiler learns the fields from the kinds' registrations, so a kind
// added by a handler package is visible to workflow files without change
// here. For the built-in kinds: bash stdout, stderr, exit_code (-1 when
// the op failed), timed_out, truncated; python output, python_error;
// generate content, reasoning, finish_reason, tool_calls, outputs, message;
// submit accepted; score score, scored, text; spawn run_id, status,
// end_reason, result; sandbox code, text, data; get_task instructions.
// ok is true when the op did its job: no error, and for bash exit code 0
// without timeout, for python no exception and no timeout, for submit
// accepted, for spawn a succeeded child, for sandbox code 0.
type ResultView = map[string]any

// OutputView, MessageView and ToolCallView are the generate result's
// nested views.
type (
	OutputView   = operations.OutputView
	MessageView  = operations.MessageView
	ToolCallView = operations.ToolCallView
)

// newResultView flattens r.
func newResultView(r operations.Result) ResultView { return r.View() }
