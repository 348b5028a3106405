package operations

import "encoding/json"

// Kinds of the external-agent operations (package handlers/external runs
// them; package gateway serves the agents' model calls).
const (
	// KindExternal runs a user's agent program with a model gateway session.
	KindExternal Kind = "external"
	// KindGatewayWait waits for the model calls an external agent sends to
	// its gateway session (the session run's only op besides generate).
	KindGatewayWait Kind = "gateway_wait"
)

// MetaGatewayCall is the Meta key of a generate that answers a gateway
// call: its value is the call's id, by which the gateway hands the
// journaled result back to the waiting HTTP request.
const MetaGatewayCall = "gateway_call"

// ExternalRequest runs an agent program in the run's work directory with
// OPENAI_BASE_URL and OPENAI_API_KEY naming a fresh gateway session.
type ExternalRequest struct {
	// Command is the program: one string runs under /bin/sh -c, a list is
	// the argv itself.
	Command []string `json:"command"`
	// Shell is true when Command is one string for /bin/sh -c.
	Shell bool `json:"shell,omitempty"`
	// Model is the gateway's default model (a name of the run's models, or
	// "simulated"); calls naming another declared model use that one.
	Model string `json:"model"`
	// TimeoutS bounds the program's run (0: no bound but the run's limits).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Env adds variables to the program's environment.
	Env map[string]string `json:"env,omitempty"`
	// AnswerFile, relative to the work directory, is read after the program
	// exits when its stdout holds no JSON line.
	AnswerFile string `json:"answer_file,omitempty"`
	// TaskFile, relative to the work directory, receives the task text.
	TaskFile string `json:"task_file,omitempty"`
	// TrajectoryFile and EpisodeFile, relative to the work directory, are
	// written with the trajectory and the episode built from the trace.
	TrajectoryFile string `json:"trajectory_file,omitempty"`
	EpisodeFile    string `json:"episode_file,omitempty"`
	// Name is the trajectory's name when the agent gives none.
	Name string `json:"name,omitempty"`
}

// ExternalResult is what the agent program left: its answer, its exit,
// the gateway trace summary and the episode built from it.
type ExternalResult struct {
	Answer   string `json:"answer"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Stderr is the tail of the program's standard error.
	Stderr string `json:"stderr,omitempty"`
	// Calls counts the model calls of the last attempt; Replayed those
	// answered from the journal of an interrupted attempt.
	Calls    int `json:"calls"`
	Replayed int `json:"replayed,omitempty"`
	// SessionRuns are the gateway session runs whose generate ops hold the
	// calls (one per attempt that reached the gateway).
	SessionRuns []string `json:"session_runs,omitempty"`
	// Usage is the tokens and cost of the session runs (each call paid once).
	Usage RunUsage `json:"usage"`
	// TerminationReason is rLLM's: env_done, timeout, error, or the
	// agent's own when its episode names one.
	TerminationReason string `json:"termination_reason,omitempty"`
	// Episode is the rLLM-shaped episode (grading.Episode) built from the
	// agent's output and the gateway trace.
	Episode json.RawMessage `json:"episode,omitempty"`
}

// Effects adds the session runs' tokens and cost and counts the program as
// one action.
func (r *ExternalResult) Effects(in EffectInput) Effects {
	e := Effects{Usage: RunUsage{Tokens: r.Usage.Tokens, Cost: r.Usage.Cost}}
	if in.Error == "" {
		e.Usage.Actions = 1
	}
	return e
}

// GatewayWaitRequest waits for the next calls of the session run's
// gateway session. DeliverStep, when not 0, is the step whose generate
// results are handed to their callers first.
type GatewayWaitRequest struct {
	DeliverStep uint64 `json:"deliver_step,omitempty"`
}

// GatewayCall is one model call waiting in a gateway session.
type GatewayCall struct {
	ID      string          `json:"id"`
	Request GenerateRequest `json:"request"`
}

// GatewayWaitResult is the next batch of calls, or Closed when the agent
// program has ended.
type GatewayWaitResult struct {
	Calls  []GatewayCall `json:"calls,omitempty"`
	Closed bool          `json:"closed,omitempty"`
}

// NewExternal returns an external request.
func NewExternal(p ExternalRequest) Request { return Request{Kind: KindExternal, Ext: &p} }

// NewGatewayWait returns a gateway_wait request.
func NewGatewayWait(deliverStep uint64) Request {
	return Request{Kind: KindGatewayWait, Ext: &GatewayWaitRequest{DeliverStep: deliverStep}}
}

func init() {
	RegisterKind(KindInfo{Kind: KindExternal,
		NewParams: func() any { return &ExternalRequest{} },
		NewResult: func() any { return &ExternalResult{} },
		View: func(r Result) (map[string]any, bool) {
			v := map[string]any{"answer": "", "exit_code": 0, "calls": 0}
			x, _ := r.Ext.(*ExternalResult)
			if x == nil {
				return v, false
			}
			v["answer"], v["exit_code"], v["calls"] = x.Answer, x.ExitCode, x.Calls
			return v, r.Error == "" && x.ExitCode == 0
		}})
	RegisterKind(KindInfo{Kind: KindGatewayWait,
		NewParams: func() any { return &GatewayWaitRequest{} },
		NewResult: func() any { return &GatewayWaitResult{} }})
}
