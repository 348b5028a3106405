package operations

import "encoding/json"

// Kinds of the external-agent operations (package handlers/external runs
// them; package gateway serves the agents' model calls).
const (
	// KindExternal runs a user's agent program with a model gateway session.
	KindExternal Kind = "external"
	// KindGatewayWait waits for the model calls an external agent sends to
	// its gateway session and answers them: the session run's only op.
	KindGatewayWait Kind = "gateway_wait"
)

// MetaGatewayCall is the Meta key of a generate that answers a gateway
// call: its value is the call's id. The gateway_wait handler runs each
// call as such a generate; session runs journaled before gateway_wait
// answered its calls itself hold them as generate ops of their own.
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
	// PassEnv names variables of the server's environment passed to the
	// program with their values, where the operator allows them (server
	// setting pass_env).
	PassEnv []string `json:"pass_env,omitempty"`
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
// gateway session and answers them. DeliverStep, when not 0, is the
// step whose answers (journaled by now) are handed to their callers
// first.
type GatewayWaitRequest struct {
	DeliverStep uint64 `json:"deliver_step,omitempty"`
}

// GatewayCall is one model call of a gateway session: its id, its
// request (the prompt, stored here only) and the generate's answer.
type GatewayCall struct {
	ID      string          `json:"id"`
	Request GenerateRequest `json:"request"`
	// Result is the model's answer (with Error, what the failed generate
	// still reported, if anything). Nil in the calls of session runs
	// journaled before gateway_wait answered its calls: their generate
	// ops hold the answers.
	Result *GenerateResult `json:"result,omitempty"`
	// Error is the generate's error, when it failed, and Code its failure
	// code (Result.Code).
	Error string `json:"error,omitempty"`
	Code  Code   `json:"code,omitempty"`
}

// GatewayWaitResult is the calls of one batch with their answers, or
// Closed when the agent program has ended.
type GatewayWaitResult struct {
	Calls  []GatewayCall `json:"calls,omitempty"`
	Closed bool          `json:"closed,omitempty"`
}

// Effects adds the tokens and cost of every answered call (and counts
// replay hits and misses) as the calls' generate results would.
func (r *GatewayWaitResult) Effects(in EffectInput) Effects {
	var e Effects
	for i := range r.Calls {
		g := r.Calls[i].Result
		if g == nil {
			continue
		}
		u := g.Effects(in).Usage
		e.Usage.Tokens += u.Tokens
		e.Usage.Cost += u.Cost
		e.Usage.ReplayHits += u.ReplayHits
		e.Usage.ReplayMisses += u.ReplayMisses
	}
	return e
}

// NewExternal returns an external request.
func NewExternal(p ExternalRequest) Request { return Request{Kind: KindExternal, Params: &p} }

// NewGatewayWait returns a gateway_wait request.
func NewGatewayWait(deliverStep uint64) Request {
	return Request{Kind: KindGatewayWait, Params: &GatewayWaitRequest{DeliverStep: deliverStep}}
}

// The external-agent kinds, declared like any other (see Declare).
var (
	External    = Declare[ExternalRequest, ExternalResult](KindExternal, viewExternal)
	GatewayWait = Declare[GatewayWaitRequest, GatewayWaitResult](KindGatewayWait, nil)
)

// external: the agent's answer, exit code and model calls; ok needs a
// program that exited 0.
func viewExternal(r Result, x *ExternalResult) (map[string]any, bool) {
	v := map[string]any{"answer": "", "exit_code": 0, "calls": 0}
	if x == nil {
		return v, false
	}
	v["answer"], v["exit_code"], v["calls"] = x.Answer, x.ExitCode, x.Calls
	return v, r.Error == "" && x.ExitCode == 0
}

// Generated is one generate an operation answered: its request and its
// result (Kind generate; Generate and Error set as a generate op's are).
type Generated struct {
	// CallID is the gateway call's id, "" for a generate op of its own.
	CallID  string
	Request *GenerateRequest
	Result  Result
}

// Generates returns the generates the operation req answered with res: a
// generate op's own, or each call a gateway_wait answered (with its id).
// Readers of the journal that look for a run's model calls (the scripted
// model's cursor, the gateway's replay) use it, so that a call is found
// wherever it is journaled. A generate op without a result gives its
// request with a zero Result; a gateway_wait without one, nothing; other
// kinds, nil.
func Generates(req Request, res *Result) []Generated {
	switch req.Kind {
	case KindGenerate:
		p := Generate.Params(req)
		if p == nil {
			return nil
		}
		g := Generated{CallID: req.Meta[MetaGatewayCall], Request: p}
		if res != nil {
			g.Result = *res
		}
		return []Generated{g}
	case KindGatewayWait:
		if res == nil {
			return nil
		}
		w := GatewayWait.Result(*res)
		if w == nil {
			return nil
		}
		out := make([]Generated, 0, len(w.Calls))
		for i := range w.Calls {
			c := &w.Calls[i]
			if c.Result == nil && c.Error == "" {
				continue // a call of a session run journaled before gateway_wait answered calls
			}
			out = append(out, Generated{CallID: c.ID, Request: &c.Request,
				Result: Result{Kind: KindGenerate, Meta: Meta{MetaGatewayCall: c.ID}, Error: c.Error, Code: c.Code, Data: c.Result}})
		}
		return out
	}
	return nil
}
