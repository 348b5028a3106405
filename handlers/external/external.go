package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/gateway"
	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/reaper"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
	phext "github.com/flockrun/flock/phases/externalagent"
	"github.com/flockrun/flock/record"
)

// Output caps: stdout is kept whole up to maxStdout (its last JSON line is
// the answer), stderr's tail up to maxStderr.
const (
	maxStdout = 8 << 20
	maxStderr = 16 << 10
	// maxAttempts bounds the session runs of one external op (one per
	// attempt whose session run ended before the op's result was journaled).
	maxAttempts = 16
)

func init() {
	handlers.Register(handlers.Info{ID: "flock.external",
		Kinds: []operations.Kind{operations.KindExternal, operations.KindGatewayWait},
		New:   func() handlers.Handler { return &Handler{} }})
}

// Handler runs external and gateway_wait operations. Its zero value
// refuses them until provisioned with the gateway, the run starter, the
// store and the server's operations (which answer the calls).
type Handler struct {
	gw    *gateway.Gateway
	runs  handlers.Runs
	store handlers.Journal
	ops   handlers.Handler
	// policy and hidden isolate the program as the run's bash is isolated
	// (the server's data directory hidden); passEnv is the operator's list
	// of variables runs may pass on by name (server setting pass_env).
	policy  isolation.Policy
	hidden  []string
	passEnv []string
}

// Provision takes the gateway (one of deps.Services), the run starter,
// the journal and the server's operations from deps, and the operator's
// isolation policy and pass_env list.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.gw, _ = handlers.Service[*gateway.Gateway](deps)
	h.runs, h.store, h.ops = deps.Runs, deps.Journal, deps.Ops
	h.hidden = deps.Hidden()
	h.passEnv = deps.Server.PassEnv
	p, err := deps.Isolation()
	h.policy = p
	return err
}

// ValidateRun refuses an external run whose settings pass on a variable
// (pass_env) the operator does not list, before the run starts. The op
// checks again (a rollout's agents are checked when they run).
func (h *Handler) ValidateRun(_ context.Context, run handlers.RunCheck) error {
	if run.Workflow != phext.Name {
		return nil
	}
	var doc struct {
		PassEnv []string `json:"pass_env"`
	}
	if json.Unmarshal(run.Raw, &doc) != nil {
		return nil // the workflow's settings parser reports it
	}
	return h.checkPassEnv(doc.PassEnv)
}

// ErrPassEnv refuses a variable that a run's pass_env names and the
// operator does not list in the server setting pass_env.
var ErrPassEnv = errors.New("pass_env names a variable the operator does not let runs pass (server setting pass_env)")

// checkPassEnv refuses names the operator does not list. The error never
// says whether a variable is set.
func (h *Handler) checkPassEnv(names []string) error {
	for i, n := range names {
		if !slices.Contains(h.passEnv, n) {
			return fmt.Errorf("%w: pass_env[%d]: %s", ErrPassEnv, i, n)
		}
	}
	return nil
}

// Handle implements handlers.Handler.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) (res operations.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = operations.Failed(req, "%s: internal error: %v\n%s", req.Kind, p, debug.Stack())
		}
	}()
	if h.gw == nil || h.runs == nil || h.store == nil || h.ops == nil {
		return operations.Failed(req, "%s: this server has no model gateway", req.Kind)
	}
	switch p := req.Params.(type) {
	case *operations.ExternalRequest:
		return h.external(ctx, env, req, p)
	case *operations.GatewayWaitRequest:
		return h.wait(ctx, env, req, p)
	}
	return operations.Failed(req, "%s: %v", req.Kind, operations.ErrMissingParams)
}

// wait hands the previous step's answers to their callers, then waits for
// the next calls of the session (the run's id) and answers them, each as
// a generate op would be (the generate handler, its retries and the
// per-model limits). Its result holds each call's prompt and answer: the
// commit that journals it is the call's only one, and the next wait hands
// the answers over once that commit is done.
func (h *Handler) wait(ctx context.Context, env handlers.Env, req operations.Request, p *operations.GatewayWaitRequest) operations.Result {
	if h.gw.Lookup(env.RunID) == nil {
		// Only an external op starts session runs (as its children); one
		// started any other way would wait for a session forever.
		head, err := h.store.Run(ctx, env.RunID)
		if err != nil {
			return operations.Failed(req, "gateway_wait: reading run %s: %v", env.RunID, err)
		}
		if head.ParentID == "" {
			return operations.Failed(req, "gateway_wait: %s runs are started by an external op, not directly", phext.SessionName)
		}
	}
	s, err := h.gw.Await(ctx, env.RunID)
	if err != nil {
		return operations.Failed(req, "gateway_wait: session %s: %v", env.RunID, err)
	}
	if p.DeliverStep > 0 {
		if err := h.deliver(ctx, s, env.RunID, p.DeliverStep); err != nil {
			return operations.Failed(req, "gateway_wait: %v", err)
		}
	}
	calls, closed, err := s.Take(ctx)
	if err != nil {
		return operations.Failed(req, "gateway_wait: %v", err)
	}
	if closed {
		return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: &operations.GatewayWaitResult{Closed: true}}
	}
	h.answer(ctx, env, calls)
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		// Interrupted by a pause or a stop: this result is not journaled,
		// so the calls go back to the queue for the next wait (one paid
		// here is paid again there). The run's time limit (a deadline)
		// ends the run with this result journaled, its answers delivered.
		s.Requeue(calls)
		return operations.Failed(req, "gateway_wait: interrupted: %v", context.Cause(ctx))
	}
	s.Answered(env.OpID, calls)
	return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: &operations.GatewayWaitResult{Calls: calls}}
}

// answer runs each call as a generate, in parallel, and sets its result.
func (h *Handler) answer(ctx context.Context, env handlers.Env, calls []operations.GatewayCall) {
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func(c *operations.GatewayCall) {
			defer wg.Done()
			g := c.Request
			res := h.ops.Handle(ctx, env, operations.Request{Kind: operations.KindGenerate, Params: &g,
				Meta: operations.Meta{operations.MetaGatewayCall: c.ID}})
			c.Result, c.Error, c.Code = operations.Generate.Result(res), res.Error, res.Code
			if c.Result == nil && c.Error == "" {
				c.Error = "generate returned no result"
			}
		}(&calls[i])
	}
	wg.Wait()
}

// deliver hands the answers of a session run's step, journaled by now, to
// the calls they answer: from memory (Session.Answered), or after a
// restart from the journal.
func (h *Handler) deliver(ctx context.Context, s *gateway.Session, runID string, step uint64) error {
	if s.DeliverAnswered(record.OpID(runID, step, 0)) {
		return nil
	}
	ops, err := h.store.StepOps(ctx, runID, step)
	if err != nil {
		return fmt.Errorf("reading step %d of %s: %w", step, runID, err)
	}
	for _, op := range ops {
		for _, g := range operations.Generates(op.Request, op.Result) {
			if g.CallID != "" {
				s.Deliver(g.CallID, op.ID, *g.Request, g.Result)
			}
		}
	}
	return nil
}

// sessionRun finds or starts the session run of this attempt: the first
// of the op's session runs (ids derived from the op's) that has not ended.
// Those that ended hold answers of earlier attempts: they are returned as
// replay, with their usage.
func (h *Handler) sessionRun(ctx context.Context, env handlers.Env) (handlers.RunHead, []gateway.Recorded, []string, operations.RunUsage, error) {
	var replay []gateway.Recorded
	var ended []string
	var used operations.RunUsage
	settings, err := sessionSettings(env)
	if err != nil {
		return handlers.RunHead{}, nil, nil, used, err
	}
	for k := 0; k < maxAttempts; k++ {
		opID := env.OpID + "/gateway"
		if k > 0 {
			opID += "-" + strconv.Itoa(k)
		}
		run, err := h.runs.StartChild(ctx, handlers.Child{ParentID: env.RunID, OpID: opID, Workflow: phext.SessionName,
			Settings: settings, Task: env.Task, WorkDir: env.WorkDir, ParentWorkDir: env.WorkDir})
		if err != nil {
			return handlers.RunHead{}, nil, nil, used, fmt.Errorf("starting the gateway session run: %w", err)
		}
		rec, err := h.recorded(ctx, run.ID)
		if err != nil {
			return handlers.RunHead{}, nil, nil, used, err
		}
		replay = append(replay, rec...)
		if run.Status == record.StatusRunning || run.Status == record.StatusPaused {
			return run, replay, ended, used, nil
		}
		ended = append(ended, run.ID)
		used.Tokens += run.Usage.Tokens
		used.Cost += run.Usage.Cost
	}
	return handlers.RunHead{}, nil, nil, used, fmt.Errorf("%d gateway session runs of this op have ended; not starting another", maxAttempts)
}

// recorded reads the answered calls of a session run from its journal.
func (h *Handler) recorded(ctx context.Context, runID string) ([]gateway.Recorded, error) {
	var out []gateway.Recorded
	for op, err := range h.store.Ops(ctx, runID) {
		if err != nil {
			return nil, fmt.Errorf("reading the journal of session run %s: %w", runID, err)
		}
		if !op.Done {
			continue
		}
		for _, g := range operations.Generates(op.Request, op.Result) {
			if r := operations.Generate.Result(g.Result); g.Result.Error == "" && r != nil {
				out = append(out, gateway.Recorded{OpID: op.ID, CallID: g.CallID, Request: *g.Request, Result: *r})
			}
		}
	}
	return out, nil
}

// sessionSettings are the session run's settings: the external run's
// models, and its limits less what it has used (so the executor stops the
// session when the run's budget is spent).
func sessionSettings(env handlers.Env) (json.RawMessage, error) {
	doc := struct {
		Models map[string]configs.Model `json:"models,omitempty"`
		Limits operations.RunLimits     `json:"limits,omitempty"`
	}{}
	if env.Settings != nil {
		doc.Models = env.Settings.Models
	}
	if env.Usage != nil {
		u, l := env.Usage()
		if l.Tokens > 0 {
			doc.Limits.Tokens = max(1, l.Tokens-u.Tokens)
		}
		if l.Cost > 0 {
			doc.Limits.Cost = max(1e-9, l.Cost-u.Cost)
		}
		if l.Seconds > 0 {
			doc.Limits.Seconds = max(1, l.Seconds-u.Seconds)
		}
	}
	return json.Marshal(doc)
}

// external runs the agent program against a fresh gateway session.
func (h *Handler) external(ctx context.Context, env handlers.Env, req operations.Request, p *operations.ExternalRequest) operations.Result {
	fail := func(format string, args ...any) operations.Result {
		return operations.Failed(req, "external: "+format, args...)
	}
	if len(p.Command) == 0 || p.Command[0] == "" {
		return fail("command is required")
	}
	if p.Model == "" {
		return fail("model is required")
	}
	if err := h.checkPassEnv(p.PassEnv); err != nil {
		return fail("%v", err)
	}
	run, replay, ended, used, err := h.sessionRun(ctx, env)
	if err != nil {
		return fail("%v", err)
	}
	var models []string
	if env.Settings != nil {
		for m := range env.Settings.Models {
			models = append(models, m)
		}
		sort.Strings(models)
	}
	s, err := h.gw.Open(run.ID, gateway.SessionConfig{Model: p.Model, Models: models, Replay: replay})
	if err != nil {
		return fail("%v", err)
	}
	defer s.Release()
	base, err := h.gw.BaseURL()
	if err != nil {
		return fail("%v", err)
	}

	// The session run ends when the session closes, or earlier when it
	// reaches the run's limits: then every call is refused naming the limit.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	type end struct {
		run handlers.RunHead
		err error
	}
	ends := make(chan end, 1)
	go func() {
		r, err := h.runs.WaitChild(wctx, run.ID)
		if err == nil {
			// A run that ends over a limit ends after its last step's
			// generates: their answers are paid and journaled, so they
			// reach their callers before the rest are refused.
			h.deliver(wctx, s, run.ID, r.Step)
			s.Fail(sessionEnded(r))
		}
		ends <- end{r, err}
	}()

	out, err := h.runProgram(ctx, env, p, s.Token(), base+gateway.Prefix+run.ID+"/v1")
	s.Close()
	if ctx.Err() != nil {
		stopWatch()
		<-ends
		return fail("interrupted: %v", context.Cause(ctx))
	}
	e := <-ends
	if e.err != nil {
		return fail("waiting for the gateway session run %s: %v", run.ID, e.err)
	}
	if err != nil {
		return fail("%v", err)
	}
	res := h.finish(env, p, out, s.Trace())
	res.SessionRuns = append(ended, run.ID)
	res.Usage = operations.RunUsage{Tokens: used.Tokens + e.run.Usage.Tokens, Cost: used.Cost + e.run.Usage.Cost}
	r := operations.Result{Kind: req.Kind, Meta: req.Meta, Data: res}
	switch {
	case strings.HasPrefix(e.run.EndReason, "limit_"):
		// Named first: a program that stopped because its calls were
		// refused exits for that reason.
		r.Error = "external: " + sessionEnded(e.run).Error()
	case out.timedOut:
		r.Error = fmt.Sprintf("external: the agent did not finish within timeout_s (%g s)", p.TimeoutS)
	case out.exitCode != 0:
		r.Error = fmt.Sprintf("external: the agent exited with status %d%s", out.exitCode, lastLine(out.stderr))
		if code, msg, ok := s.Fatal(); ok {
			// Its model call could not be served: that is the cause, with
			// its code, so the run ends as an agent of flock's own would.
			r.Code = code
			r.Error = fmt.Sprintf("external: the agent exited with status %d after its model call failed: %s", out.exitCode, msg)
		}
	}
	return r
}

// sessionEnded is the error calls get once the session run has ended.
func sessionEnded(r handlers.RunHead) error {
	if strings.HasPrefix(r.EndReason, "limit_") {
		key := limitKey(r.EndReason)
		var detail string
		switch key {
		case "tokens":
			detail = fmt.Sprintf("%d tokens used of the %d the session had left", r.Usage.Tokens, r.Limits.Tokens)
		case "cost":
			detail = fmt.Sprintf("%.6g spent of the %.6g the session had left", r.Usage.Cost, r.Limits.Cost)
		case "seconds":
			detail = fmt.Sprintf("%.1f s used of the %.1f s the session had left", r.Usage.Seconds, r.Limits.Seconds)
		default:
			detail = r.Error
		}
		return fmt.Errorf("%w: the run reached limits.%s (%s)", gateway.ErrLimit, key, detail)
	}
	return fmt.Errorf("%w: the session run %s ended (%s)", gateway.ErrClosed, r.ID, r.Status)
}

func limitKey(reason string) string {
	switch k := strings.TrimPrefix(reason, "limit_"); k {
	case "time":
		return "seconds"
	default:
		return k
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return ": " + s
}

// programOutput is what the program left.
type programOutput struct {
	stdout, stderr string
	exitCode       int
	timedOut       bool
}

// runProgram runs the command in the work directory, isolated as the
// run's bash is (with the network: the gateway is on it), with the
// session's URL and token and the task on stdin and in the task file. Its
// environment is the base set of the server's (isolation.Environ), the
// settings' env and pass_env, and the gateway's variables: nothing else of
// the server's environment reaches it.
func (h *Handler) runProgram(ctx context.Context, env handlers.Env, p *operations.ExternalRequest, token, url string) (programOutput, error) {
	var out programOutput
	if p.TaskFile != "" {
		if err := os.WriteFile(filepath.Join(env.WorkDir, p.TaskFile), []byte(env.Task), 0o644); err != nil {
			return out, fmt.Errorf("writing the task file: %w", err)
		}
	}
	if p.TimeoutS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutS*float64(time.Second)))
		defer cancel()
	}
	argv := p.Command
	if p.Shell {
		argv = []string{"/bin/sh", "-c", p.Command[0]}
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return out, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	var run configs.Isolation
	if env.Settings != nil {
		run = env.Settings.Isolation
	}
	iso, err := h.policy.Resolve(run)
	if err != nil {
		return out, fmt.Errorf("isolation: %w", err)
	}
	// The program reaches the gateway over the network, whatever the
	// run's isolation.network says.
	iso.Network = true
	wrapped, err := isolation.Wrap(iso, env.WorkDir, h.hidden, argv)
	if err != nil {
		return out, fmt.Errorf("isolation: %w", err)
	}
	path, err := exec.LookPath(wrapped[0])
	if err != nil {
		return out, fmt.Errorf("starting %s: %w", wrapped[0], err)
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return out, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return out, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{stdinR, stdinW, outR, outW} {
			f.Close()
		}
		return out, err
	}
	// The program runs under a reaper (package reaper): killing it, or
	// flock dying (kill -9 included), ends it and everything it started.
	proc, err := reaper.Start(reaper.Spec{Path: path, Args: wrapped, Dir: env.WorkDir, Env: childEnv(iso, env, p, token, url),
		Stdin: stdinR, Stdout: outW, Stderr: errW})
	stdinR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		stdinW.Close()
		outR.Close()
		errR.Close()
		return out, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	stdout := &capped{max: maxStdout}
	stderr := &capped{max: maxStderr, tail: true}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		_, _ = io.WriteString(stdinW, env.Task)
		stdinW.Close()
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(stdout, outR)
		outR.Close()
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(stderr, errR)
		errR.Close()
	}()
	type exit struct {
		st  *os.ProcessState
		err error
	}
	exited := make(chan exit, 1)
	go func() {
		st, err := proc.Wait()
		exited <- exit{st, err}
	}()
	var ex exit
	select {
	case ex = <-exited:
	case <-ctx.Done():
		proc.Kill()
		ex = <-exited
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && p.TimeoutS > 0 {
			out.timedOut = true
		}
	}
	wg.Wait()
	out.stdout, out.stderr = stdout.String(), stderr.String()
	switch {
	case out.timedOut:
		out.exitCode = -1
	case ex.st != nil:
		out.exitCode = ex.st.ExitCode()
	case ex.err != nil:
		return out, fmt.Errorf("running %s: %w", argv[0], ex.err)
	}
	return out, nil
}

// childEnv is the program's environment: the base set of the server's
// (isolation.Environ), the settings' env, the variables pass_env names
// (checked against the operator's list before), then the gateway's.
func childEnv(iso configs.Isolation, env handlers.Env, p *operations.ExternalRequest, token, url string) []string {
	var extra []string
	keys := make([]string, 0, len(p.Env))
	for k := range p.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra = append(extra, k+"="+p.Env[k])
	}
	extra = append(extra, isolation.Lookup(p.PassEnv)...)
	extra = append(extra,
		"OPENAI_BASE_URL="+url,
		gatewayKeyEnv+"="+token,
		"OPENAI_MODEL="+p.Model,
		"FLOCK_RUN_ID="+env.RunID,
		"FLOCK_TASK_FILE="+filepath.Join(env.WorkDir, p.TaskFile),
	)
	return isolation.Environ(iso, extra...)
}

// gatewayKeyEnv is the variable that carries the session token.
const gatewayKeyEnv = "OPENAI_API_KEY"

// finish reads the agent's output, builds the episode from the trace and
// writes the episode and trajectory files.
func (h *Handler) finish(env handlers.Env, p *operations.ExternalRequest, out programOutput, traces []gateway.Trace) *operations.ExternalResult {
	res := &operations.ExternalResult{ExitCode: out.exitCode, TimedOut: out.timedOut, Calls: len(traces)}
	if t := strings.TrimSpace(out.stderr); t != "" {
		res.Stderr = t
	}
	for _, t := range traces {
		if t.Replayed {
			res.Replayed++
		}
	}
	var ao gateway.AgentOutput
	var perr error
	if line := gateway.LastJSONLine([]byte(out.stdout)); line != nil {
		ao, perr = gateway.ParseAgentOutput(line)
	} else if p.AnswerFile != "" {
		if b, err := os.ReadFile(filepath.Join(env.WorkDir, p.AnswerFile)); err == nil {
			if json.Valid(bytes.TrimSpace(b)) {
				ao, perr = gateway.ParseAgentOutput(b)
			} else {
				ao.Answer = strings.TrimSpace(string(b))
			}
		}
	} else if l := strings.TrimSpace(lastLine(out.stdout)); l != "" {
		ao.Answer = strings.TrimPrefix(l, ": ")
	}
	ep := gateway.Enrich(env.RunID+":0", p.Name, ao, traces)
	switch {
	case out.timedOut:
		ep.TerminationReason = grading.TerminationTimeout
	case out.exitCode != 0:
		ep.TerminationReason = grading.TerminationError
	case ep.TerminationReason == grading.TerminationUnknown && ao.TerminationReason == "":
		ep.TerminationReason = grading.TerminationEnvDone
	}
	if perr != nil {
		ep.Metadata = map[string]any{"output_error": perr.Error()}
	}
	res.Answer = ep.Artifacts.Answer
	res.TerminationReason = string(ep.TerminationReason)
	if b, err := json.Marshal(ep); err == nil {
		res.Episode = b
		if p.EpisodeFile != "" {
			_ = os.WriteFile(filepath.Join(env.WorkDir, p.EpisodeFile), b, 0o644)
		}
	}
	if p.TrajectoryFile != "" {
		// The reader (a rollout's lane) gives the trajectories uids of its
		// own episode id; the step ids stay the trace ids.
		trajs := append([]grading.Trajectory(nil), ep.Trajectories...)
		for i := range trajs {
			trajs[i].UID = ""
		}
		var v any = struct {
			Trajectories []grading.Trajectory `json:"trajectories"`
		}{trajs}
		if len(trajs) == 1 {
			v = trajs[0]
		}
		if b, err := json.Marshal(v); err == nil {
			_ = os.WriteFile(filepath.Join(env.WorkDir, p.TrajectoryFile), b, 0o644)
		}
	}
	return res
}

// capped keeps the first (or, with tail, the last) max bytes written.
type capped struct {
	max  int
	tail bool
	buf  bytes.Buffer
}

func (c *capped) Write(b []byte) (int, error) {
	n := len(b)
	if c.tail {
		c.buf.Write(b)
		if over := c.buf.Len() - c.max; over > 0 {
			rest := append([]byte(nil), c.buf.Bytes()[over:]...)
			c.buf.Reset()
			c.buf.Write(rest)
		}
		return n, nil
	}
	if room := c.max - c.buf.Len(); room > 0 {
		if len(b) > room {
			b = b[:room]
		}
		c.buf.Write(b)
	}
	return n, nil
}

func (c *capped) String() string { return c.buf.String() }

var (
	_ handlers.Handler      = (*Handler)(nil)
	_ handlers.Provisioner  = (*Handler)(nil)
	_ handlers.RunValidator = (*Handler)(nil)
)
