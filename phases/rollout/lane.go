package rollout

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/record"
)

// LaneName is the registry name of the lane workflow.
const LaneName = "rollout.lane"

// Lane phase names.
const (
	LaneStart     = "start"
	LaneAgentDone = "agent_done"
	LaneEvaluated = "evaluated"
	LaneFinish    = "finish"
)

// LaneWorkflow returns the lane declaration: a lane runs its samples one
// after another, one agent child in flight, grading each and appending its
// row (and episode) to the output files while the next sample runs.
func LaneWorkflow() phases.Workflow {
	return phases.Workflow{
		Name:        LaneName,
		Description: "One lane of a rollout: runs its samples one at a time as child runs, grades each and appends its results.",
		Start:       LaneStart,
		Phases: []phases.PhaseSpec{
			{Name: LaneStart, Run: typedLane.Phase(LaneStartPhase), Next: []string{LaneAgentDone, LaneEvaluated, LaneFinish}},
			{Name: LaneAgentDone, Run: typedLane.Phase(LaneAgentDonePhase), Next: []string{LaneEvaluated, LaneAgentDone, LaneFinish}},
			{Name: LaneEvaluated, Run: typedLane.Phase(LaneEvaluatedPhase), Next: []string{LaneAgentDone, LaneEvaluated, LaneFinish}},
			{Name: LaneFinish, Run: LaneFinishPhase},
		},
		Settings: LaneSettings{},
		CheckSettings: func(doc json.RawMessage) error {
			_, err := parseLane(doc)
			return err
		},
	}
}

// LaneSettings are a lane's settings, written by the rollout.
type LaneSettings struct {
	Models json.RawMessage `json:"models,omitempty"`
	Lane   Lane            `json:"lane"`
}

// Lane is the work of one lane.
type Lane struct {
	// Round and Index name the lane (round r, lane i of the round).
	Round int `json:"round"`
	Index int `json:"index"`
	// Workflow and Settings are the agent's.
	Workflow string          `json:"workflow"`
	Settings json.RawMessage `json:"settings"`
	// TrajectoryFile is read in each agent's work directory for episodes.
	TrajectoryFile string       `json:"trajectory_file,omitempty"`
	Items          []Item       `json:"items"`
	Metric         string       `json:"metric"`
	Threshold      float64      `json:"threshold"`
	Judge          *JudgeSpec   `json:"judge,omitempty"`
	Verifier       VerifierSpec `json:"verifier"`
	// Extras are the scores beside the base grade.
	Extras        extraScorers `json:"extras,omitzero"`
	ResultsFile   string       `json:"results_file"`
	EpisodesFile  string       `json:"episodes_file,omitempty"`
	SegmentReward string       `json:"segment_reward,omitempty"`
	Gamma         float64      `json:"gamma,omitempty"`
}

// Item is one sample: a task and a chain index.
type Item struct {
	Task  Task `json:"task"`
	Chain int  `json:"chain"`
	// Regrade is the sample's earlier row when only its grade is redone:
	// no agent runs, the stored answer is graded again.
	Regrade *Row `json:"regrade,omitempty"`
}

// childName is the agent run's name (and work subdirectory) for an item.
func (it Item) childName() string {
	return fmt.Sprintf("t%05d-c%d", it.Task.Index, it.Chain)
}

// typedLane hands the lane's phases their parsed settings (see
// phases.Typed): a lane's settings hold all its items, parsed once.
var typedLane = phases.NewTyped(parseLane)

func parseLane(doc json.RawMessage) (LaneSettings, error) {
	var s LaneSettings
	if err := json.Unmarshal(doc, &s); err != nil {
		return s, fmt.Errorf("%w: lane: %v", ErrSettings, err)
	}
	if s.Lane.Workflow == "" || s.Lane.ResultsFile == "" {
		return s, fmt.Errorf("%w: lane: workflow and results_file are required", ErrSettings)
	}
	return s, nil
}

// laneVar is the lane's var "lane".
type laneVar struct {
	// Item is the index of the item in flight.
	Item int `json:"item"`
	// Started is when its agent was spawned.
	Started time.Time `json:"started"`
	// Agent is the finished agent run of Item, kept while it is graded.
	Agent *agentRun `json:"agent,omitempty"`
	// WriteErrors counts failed appends.
	WriteErrors int `json:"write_errors,omitempty"`
	// Fatal is the failure no later sample can escape (an agent or the
	// judge met a model failure that cannot get better): the lane stops
	// after the sample that met it and ends with it.
	Fatal *Fatal `json:"fatal,omitempty"`
}

// Fatal is a failure that ends a lane and the rollout: the failure code
// (operations.Code: model_error, rate_limited) and its message.
type Fatal struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// fatalOf returns the failure of results that ends the lane, if any.
func fatalOf(results ...operations.Result) *Fatal {
	if end := phases.FatalEnd(results); end != nil {
		return &Fatal{Code: end.Reason, Error: end.Error}
	}
	return nil
}

// agentRun is what a lane keeps of a finished agent run.
type agentRun struct {
	RunID             string        `json:"run_id"`
	Status            record.Status `json:"status"`
	EndReason         string        `json:"end_reason,omitempty"`
	Error             string        `json:"error,omitempty"`
	Answer            string        `json:"answer"`
	TerminationReason string        `json:"termination_reason"`
	Tokens            int           `json:"tokens"`
	Cost              float64       `json:"cost"`
	Seconds           float64       `json:"seconds"`
	// WorkDir is the agent run's work directory, as its spawn result
	// names it: where its verifier runs and its trajectory file is.
	WorkDir string `json:"work_dir,omitempty"`
}

const varLane = "lane"

// LaneResult is a lane's run result.
type LaneResult struct {
	Rows        []Row `json:"rows"`
	WriteErrors int   `json:"write_errors,omitempty"`
}

// LaneStartPhase spawns the first sample's agent.
func LaneStartPhase(in phases.Input, ls *LaneSettings) (phases.Output, error) {
	var out phases.Output
	if len(ls.Lane.Items) == 0 {
		res, _ := json.Marshal(LaneResult{Rows: []Row{}})
		out.End = &phases.End{Result: res}
		return out, nil
	}
	return spawnItem(in, ls.Lane, laneVar{}, out, 0)
}

// spawnItem adds the spawn of item i to out.
func spawnItem(in phases.Input, l Lane, v laneVar, out phases.Output, i int) (phases.Output, error) {
	it := l.Items[i]
	if it.Regrade != nil {
		return regradeItem(in, l, v, out, i)
	}
	settings, err := itemSettings(l.Settings, it)
	if err != nil {
		return out, err
	}
	out.Ops = append([]operations.Request{operations.NewSpawn(operations.SpawnRequest{
		Workflow: l.Workflow, Settings: settings, Task: it.Task.Question, Name: it.childName(),
	}).WithMeta("item", strconv.Itoa(i))}, out.Ops...)
	v.Item, v.Started, v.Agent = i, in.Run.Now, nil
	if err := out.SetVar(varLane, v); err != nil {
		return out, err
	}
	out.Next = LaneAgentDone
	return out, nil
}

// regradeItem grades item i's stored answer again: at once, or after its
// verifier or judge.
func regradeItem(in phases.Input, l Lane, v laneVar, out phases.Output, i int) (phases.Output, error) {
	r := l.Items[i].Regrade
	a := agentRun{RunID: r.RunID, Status: record.Status(r.Status), WorkDir: r.WorkDir, EndReason: r.EndReason, Error: r.Error, Answer: r.PredictedAnswer,
		TerminationReason: r.TerminationReason, Tokens: r.Tokens - r.GradeTokens, Cost: r.Cost - r.GradeCost, Seconds: r.AgentSeconds}
	v.Item, v.Started, v.Agent = i, in.Run.Now, &a
	ops := gradeOps(l, l.Items[i], a)
	if len(ops) == 0 {
		return complete(in, l, v, out, nil)
	}
	out.Ops = append(ops, out.Ops...)
	if err := out.SetVar(varLane, v); err != nil {
		return out, err
	}
	out.Next = LaneEvaluated
	return out, nil
}

// gradeOps returns the ops that grade a succeeded agent's answer: its
// verifier (run in the agent's work directory) or its judge call; none for a metric.
func gradeOps(l Lane, it Item, a agentRun) []operations.Request {
	if a.Status != record.StatusSucceeded {
		return nil
	}
	var ops []operations.Request
	if cmd := verifierOf(l, it); cmd != "" {
		ops = append(ops, operations.NewBash(verifierCommand(cmd, a.WorkDir, it, a.Answer), l.Verifier.TimeoutS).WithMeta("purpose", "verifier"))
	} else if l.Metric == grading.NameLLMJudgement && len(it.Task.References) > 0 && strings.TrimSpace(a.Answer) != "" && l.Judge != nil {
		msgs := grading.Judge{Instructions: l.Judge.Instructions}.Messages(it.Task.Question, a.Answer, it.Task.References)
		m := l.Judge.Model.Model
		m.N = 1
		ops = append(ops, operations.NewGenerate(m.Request(msgs, nil, "")).WithMeta("purpose", "judge").
			WithMeta(operations.MetaRole, operations.ModelRoleGrader))
	}
	for _, name := range slices.Sorted(maps.Keys(l.Extras.Verifiers)) {
		ops = append(ops, operations.NewBash(verifierCommand(l.Extras.Verifiers[name], a.WorkDir, it, a.Answer), l.Verifier.TimeoutS).
			WithMeta("purpose", "verifier").WithMeta("scorer", name))
	}
	return ops
}

// itemSettings adds the task's kwargs (as task_kwargs) and chat-message
// input (as input_messages) to the agent's settings.
func itemSettings(base json.RawMessage, it Item) (json.RawMessage, error) {
	if len(it.Task.Kwargs) == 0 && len(it.Task.Messages) == 0 {
		return base, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, fmt.Errorf("%w: agent settings: %v", ErrSettings, err)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	if len(it.Task.Kwargs) > 0 {
		m["task_kwargs"] = it.Task.Kwargs
	}
	if len(it.Task.Messages) > 0 {
		m["input_messages"] = it.Task.Messages
	}
	return json.Marshal(m)
}

// LaneAgentDonePhase takes the finished agent run (and the appends of the
// previous sample), then grades it: at once, or after the verifier, the
// judge and the trajectory read it needs.
func LaneAgentDonePhase(in phases.Input, ls *LaneSettings) (phases.Output, error) {
	l := ls.Lane
	var v laneVar
	if _, err := phases.GetVar(in.State, varLane, &v); err != nil {
		return phases.Output{}, err
	}
	var spawn *operations.Result
	for i := range in.Results {
		r := &in.Results[i]
		switch r.Kind {
		case operations.KindSpawn:
			spawn = r
		case operations.KindWriteFile:
			if r.Error != "" {
				v.WriteErrors++
			}
		}
	}
	if spawn == nil || v.Item >= len(l.Items) {
		return phases.Output{}, fmt.Errorf("%w: agent_done without a spawn result for item %d", ErrState, v.Item)
	}
	it := l.Items[v.Item]
	a := readAgent(*spawn, in.Run.Now.Sub(v.Started))
	v.Agent = &a
	v.Fatal = fatalOf(*spawn)
	var out phases.Output
	out.Ops = gradeOps(l, it, a)
	if l.EpisodesFile != "" && a.WorkDir != "" {
		out.Ops = append(out.Ops, operations.NewReadFile(filepath.Join(a.WorkDir, l.TrajectoryFile)).WithMeta("purpose", "trajectory"))
	}
	if len(out.Ops) > 0 {
		if err := out.SetVar(varLane, v); err != nil {
			return out, err
		}
		out.Next = LaneEvaluated
		return out, nil
	}
	return complete(in, l, v, out, nil)
}

// LaneEvaluatedPhase grades the sample with the verifier's or the judge's
// output.
func LaneEvaluatedPhase(in phases.Input, ls *LaneSettings) (phases.Output, error) {
	var v laneVar
	if _, err := phases.GetVar(in.State, varLane, &v); err != nil {
		return phases.Output{}, err
	}
	if v.Agent == nil {
		return phases.Output{}, fmt.Errorf("%w: evaluated without an agent run", ErrState)
	}
	for _, r := range in.Results {
		if r.Kind == operations.KindWriteFile && r.Error != "" {
			v.WriteErrors++
		}
	}
	return complete(in, ls.Lane, v, phases.Output{}, in.Results)
}

// readAgent reads a spawn result.
func readAgent(r operations.Result, took time.Duration) agentRun {
	a := agentRun{Status: record.StatusFailed, Seconds: took.Seconds(), TerminationReason: string(grading.TerminationError), EndReason: EndSpawnError}
	sp := operations.Spawn.Result(r)
	if r.Error != "" || sp == nil {
		a.Error = r.Error
		if a.Error == "" {
			a.Error = "spawn returned no result"
		}
		return a
	}
	if sp.WorkDir == "" {
		// Only a spawn result journaled before results named the child's
		// work directory lacks it; its verifier and trajectory cannot be
		// found.
		a.RunID, a.Error = sp.RunID, "spawn result names no work_dir (journaled by an older flock)"
		return a
	}
	a.RunID, a.Status, a.WorkDir = sp.RunID, sp.Status, sp.WorkDir
	a.EndReason, a.Error = endCode(sp.Status, sp.EndReason, sp.Error)
	a.Tokens, a.Cost = sp.Usage.Tokens, sp.Usage.Cost
	if sp.Usage.Seconds > 0 {
		a.Seconds = sp.Usage.Seconds
	}
	a.Answer, a.TerminationReason = answerOf(sp.Result)
	switch {
	case a.TerminationReason != "":
	case sp.Status == record.StatusSucceeded:
		a.TerminationReason = string(grading.TerminationEnvDone)
	case sp.EndReason == record.ReasonLimitTime:
		a.TerminationReason = string(grading.TerminationTimeout)
	default:
		a.TerminationReason = string(grading.TerminationError)
	}
	if len(a.Answer) > maxAnswerBytesInLaneVars {
		a.Answer = agent.Trim(a.Answer, maxAnswerBytesInLaneVars)
	}
	return a
}

// End reasons of a failed sample (Row.EndReason) besides the engine's
// (limit_tokens, limit_actions, limit_time, limit_cost, cancelled,
// phase_error) and the agents' own short ones (model_error and
// rate_limited for a model failure, the failure codes of package
// operations; no_valid_action, ...).
const (
	// EndAgentFailed: the agent ended itself as failed, with a message.
	EndAgentFailed = "agent_failed"
	// EndModelError: a model call failed in a way that cannot get better
	// (record.ReasonModelError); react also ends with it when a call
	// failed for a reason the handler did not name.
	EndModelError = record.ReasonModelError
	// EndSpawnError: the agent run could not be started or read.
	EndSpawnError = "spawn_error"
)

// endCode turns an agent run's end into a short code and a message: the
// engine's reasons and an agent's own short reasons ("submitted",
// "max_turns", "model_error") stay as they are; a reason that is a
// message ("error: system_prompt_file: ...") becomes agent_failed, the
// message going to the second result.
func endCode(status record.Status, reason, errMsg string) (string, string) {
	msg := errMsg
	detail := strings.TrimPrefix(reason, "error: ")
	short := reason != "" && !strings.ContainsAny(reason, " :")
	switch {
	case short:
		if msg == "" && status != record.StatusSucceeded {
			msg = reason
		}
		return reason, msg
	case status == record.StatusSucceeded:
		return record.ReasonCompleted, msg
	}
	if msg == "" {
		msg = detail
	}
	return EndAgentFailed, msg
}

// answerOf reads an agent's result: a JSON string (a submission), or an
// object with "answer" (and "termination_reason", as react writes).
func answerOf(res json.RawMessage) (answer, termination string) {
	if len(res) == 0 {
		return "", ""
	}
	var s string
	if json.Unmarshal(res, &s) == nil {
		return s, ""
	}
	var obj struct {
		Answer            *string `json:"answer"`
		TerminationReason string  `json:"termination_reason"`
	}
	if json.Unmarshal(res, &obj) == nil && obj.Answer != nil {
		t := obj.TerminationReason
		if !grading.TerminationReason(t).Valid() {
			t = ""
		}
		return *obj.Answer, t
	}
	return string(res), ""
}

func verifierOf(l Lane, it Item) string {
	if it.Task.Verifier != "" {
		return it.Task.Verifier
	}
	return l.Verifier.Command
}

// verifierCommand runs cmd in the agent's work directory dir, in a
// subshell so the lane's shell keeps its directory.
func verifierCommand(cmd, dir string, it Item, answer string) string {
	gt, _ := json.Marshal(it.Task.References)
	if it.Task.References == nil {
		gt = []byte("[]")
	}
	return fmt.Sprintf("( cd %s && export FLOCK_TASK_ID=%s FLOCK_CHAIN=%d FLOCK_ANSWER=%s FLOCK_GROUND_TRUTH=%s && %s )",
		quote(dir), quote(it.Task.ID), it.Chain, quote(answer), quote(string(gt)), cmd)
}

// quote single-quotes s for bash.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// complete grades the sample, records its row and appends it (and its
// episode) to the files, together with the next sample's spawn.
func complete(in phases.Input, l Lane, v laneVar, out phases.Output, results []operations.Result) (phases.Output, error) {
	it := l.Items[v.Item]
	a := *v.Agent
	if v.Fatal == nil {
		v.Fatal = fatalOf(results...) // the judge's call
	}
	row := Row{SchemaVersion: SchemaVersion, TaskID: it.Task.ID, TaskIndex: it.Task.Index, Chain: it.Chain,
		EpisodeID: grading.EpisodeID(it.Task.ID, it.Chain), Question: it.Task.Question, GroundTruth: it.Task.References,
		PredictedAnswer: a.Answer, Metric: l.Metric, Success: a.Status == record.StatusSucceeded, Status: string(a.Status),
		EndReason: a.EndReason, Error: a.Error, TerminationReason: a.TerminationReason, RunID: a.RunID,
		Tokens: a.Tokens, Cost: a.Cost, AgentSeconds: a.Seconds, Seconds: in.Run.Now.Sub(v.Started).Seconds(),
		FinishedAt: in.Run.Now, WorkDir: a.WorkDir, InputHash: it.Task.inputHash(),
		GradingHash: gradingHash(l.Metric, l.Threshold, l.Judge, l.Verifier, it.Task, l.Extras)}
	if old := it.Regrade; old != nil {
		row.WorkDir, row.AgentSeconds, row.Trajectory, row.Steps, row.EpisodeError = old.WorkDir, old.AgentSeconds, old.Trajectory, old.Steps, old.EpisodeError
	}
	if len(it.Task.Metadata) > 0 {
		row.Metadata, _ = json.Marshal(it.Task.Metadata)
	}
	var trajectory *operations.Result
	var verifier, judge *operations.Result
	extra := map[string]*operations.Result{}
	for i := range results {
		switch results[i].Meta["purpose"] {
		case "verifier":
			if name := results[i].Meta["scorer"]; name != "" {
				extra[name] = &results[i]
				continue
			}
			verifier = &results[i]
		case "judge":
			judge = &results[i]
		case "trajectory":
			trajectory = &results[i]
		}
	}
	grade(&row, l, it, verifier, judge)
	scoreExtras(&row, l, it, extra)
	var ep *grading.Episode
	if it.Regrade == nil {
		var epErr string
		ep, epErr = episode(row, l, it, trajectory)
		if epErr != "" {
			row.EpisodeError = epErr
		}
		if ep != nil {
			row.Trajectory, row.Steps = ep.Trajectories[0].Name, len(ep.Trajectories[0].Steps)
		}
	}
	row.Summary = rowSummary(row)
	out.Append = append(out.Append, phases.MustEntry(EntryRow, row))
	line := row
	line.Summary = ""
	b, err := json.Marshal(line)
	if err != nil {
		return out, fmt.Errorf("encode row: %w", err)
	}
	out.Ops = append(out.Ops, operations.NewWriteFile(l.ResultsFile, string(b)+"\n", true).WithMeta("purpose", "results"))
	if ep != nil {
		eb, err := json.Marshal(ep)
		if err != nil {
			return out, fmt.Errorf("encode episode: %w", err)
		}
		out.Ops = append(out.Ops, operations.NewWriteFile(l.EpisodesFile, string(eb)+"\n", true).WithMeta("purpose", "episode"))
	}
	if v.Item+1 < len(l.Items) && v.Fatal == nil {
		return spawnItem(in, l, v, out, v.Item+1)
	}
	v.Agent = nil
	if err := out.SetVar(varLane, v); err != nil {
		return out, err
	}
	out.Next = LaneFinish
	return out, nil
}

// grade scores row: by the verifier when there is one, else by the metric
// (the judge's verdict for llm_judgement). Failed agent runs score 0.
func grade(row *Row, l Lane, it Item, verifier, judge *operations.Result) {
	if !row.Success {
		row.Evaluated = true
		return
	}
	switch {
	case verifierOf(l, it) != "":
		row.Evaluated = true
		row.Metric = "verifier"
		vr, err := verifierResult(verifier)
		if err != nil {
			row.EvalError = err.Error()
			return
		}
		row.Score, row.Correct, row.Signals = vr.Reward, vr.IsCorrect, vr.Signals
	case l.Metric == MetricNone || len(it.Task.References) == 0:
		return
	case l.Metric == grading.NameLLMJudgement:
		row.Evaluated = true
		if strings.TrimSpace(row.PredictedAnswer) == "" {
			row.JudgeReasoning = "empty answer: not sent to the judge"
			return
		}
		var g *operations.GenerateResult
		if judge != nil {
			g = operations.Generate.Result(*judge)
		}
		if judge == nil || judge.Error != "" || g == nil || len(g.Outputs) == 0 {
			msg := "judge: no reply"
			if judge != nil && judge.Error != "" {
				msg = "judge: " + judge.Error
			}
			row.EvalError = msg
			return
		}
		row.GradeTokens = g.Usage.PromptTokens + g.Usage.CompletionTokens
		row.GradeCost = g.Usage.Cost
		row.Tokens += row.GradeTokens
		row.Cost += row.GradeCost
		verdict, err := grading.ParseJudgeReply(g.Outputs[0].Content)
		if err != nil {
			row.EvalError = err.Error()
			return
		}
		row.Score, row.Correct, row.JudgeReasoning = verdict.Score(), verdict.Correct, verdict.Reasoning
	default:
		row.Evaluated = true
		score, err := grading.Score(l.Metric, row.PredictedAnswer, it.Task.References)
		if err != nil {
			row.EvalError = err.Error()
			return
		}
		row.Score = score
		row.Correct = score >= l.Threshold
	}
}

// scoreExtras records every scorer's score in row.Scores (a failed agent
// scores 0 on each) and, when primary names another scorer than the base
// grade, makes that score the row's.
func scoreExtras(row *Row, l Lane, it Item, extra map[string]*operations.Result) {
	x := l.Extras
	if len(x.Metrics) == 0 && len(x.Verifiers) == 0 && x.Primary == "" {
		return
	}
	row.Scores = map[string]float64{}
	errs := map[string]string{}
	correct := map[string]bool{}
	if row.Evaluated {
		row.Scores[row.Metric], correct[row.Metric] = row.Score, row.Correct
		if row.EvalError != "" {
			errs[row.Metric] = row.EvalError
		}
	}
	for _, m := range x.Metrics {
		switch {
		case !row.Success:
			row.Scores[m] = 0
		case len(it.Task.References) > 0:
			v, err := grading.Score(m, row.PredictedAnswer, it.Task.References)
			if err != nil {
				errs[m] = err.Error()
			}
			row.Scores[m], correct[m] = v, v >= l.Threshold
		}
	}
	for name := range x.Verifiers {
		if !row.Success {
			row.Scores[name] = 0
			continue
		}
		vr, err := verifierResult(extra[name])
		if err != nil {
			errs[name] = err.Error()
		}
		row.Scores[name], correct[name] = vr.Reward, vr.IsCorrect && err == nil
	}
	p := x.Primary
	if p == "" || p == row.Metric {
		return
	}
	v, ok := row.Scores[p]
	if !ok {
		row.Evaluated, row.Score, row.Correct, row.Metric = false, 0, false, p
		return
	}
	row.Evaluated, row.Score, row.Correct, row.Metric, row.EvalError = true, v, correct[p], p, errs[p]
	if !row.Success {
		row.Correct = false
	}
}

// verifierResult reads the verifier's stdout: the whole output, else its
// last non-empty line. A verifier that exits non-zero or times out is an
// eval error whatever it printed.
func verifierResult(r *operations.Result) (grading.VerifierResult, error) {
	if r == nil {
		return grading.VerifierResult{}, fmt.Errorf("verifier: not run")
	}
	b := operations.Bash.Result(*r)
	if r.Error != "" || b == nil {
		return grading.VerifierResult{}, fmt.Errorf("verifier: %s", r.Error)
	}
	failure := func(what string) error {
		msg := fmt.Sprintf("verifier (exit %d): %s", b.ExitCode, what)
		if s := strings.TrimSpace(b.Stderr); s != "" {
			msg += ": " + agent.Line(s, 200)
		}
		if b.TimedOut {
			msg += " (timed out)"
		}
		return fmt.Errorf("%s", msg)
	}
	if b.ExitCode != 0 || b.TimedOut {
		return grading.VerifierResult{}, failure("a verifier must exit 0; its output is not used")
	}
	if vr, err := grading.ParseVerifierOutput([]byte(b.Stdout)); err == nil {
		return vr, nil
	}
	lines := strings.Split(strings.TrimSpace(b.Stdout), "\n")
	vr, err := grading.ParseVerifierOutput([]byte(lines[len(lines)-1]))
	if err != nil {
		return vr, failure(err.Error())
	}
	return vr, nil
}

// episode builds the sample's episode from the agent's trajectory file
// (an episode without steps when the agent wrote none). The second result
// says why the trajectory was left out, if it was.
func episode(row Row, l Lane, it Item, traj *operations.Result) (*grading.Episode, string) {
	if l.EpisodesFile == "" {
		return nil, ""
	}
	t := grading.Trajectory{Name: l.Workflow, Steps: []grading.Step{}}
	problem := ""
	if traj != nil && traj.Error == "" && exists(*traj) {
		var got grading.Trajectory
		var multi struct {
			Trajectories []grading.Trajectory `json:"trajectories"`
		}
		content := []byte(operations.ReadFile.Result(*traj).Content)
		if json.Unmarshal(content, &multi) == nil && len(multi.Trajectories) > 0 {
			// An episode (an external agent's, with named trajectories).
			for i := range multi.Trajectories {
				if multi.Trajectories[i].Name == "" {
					multi.Trajectories[i].Name = l.Workflow
				}
				if multi.Trajectories[i].Steps == nil {
					multi.Trajectories[i].Steps = []grading.Step{}
				}
			}
			ep := grading.Episode{SchemaVersion: grading.EpisodeSchemaVersion, ID: row.EpisodeID, Task: it.Task.Row,
				Trajectories: multi.Trajectories}
			if p := gradeEpisode(&ep, row, l.SegmentReward, l.Gamma); p != "" {
				problem = p
			}
			return &ep, problem
		}
		if err := json.Unmarshal(content, &got); err != nil {
			problem = "trajectory: " + err.Error()
		} else {
			t = got
			if t.Name == "" {
				t.Name = l.Workflow
			}
		}
	} else if traj != nil && traj.Error != "" {
		problem = "trajectory: " + traj.Error
	}
	ep := grading.Episode{SchemaVersion: grading.EpisodeSchemaVersion, ID: row.EpisodeID, Task: it.Task.Row,
		Trajectories: []grading.Trajectory{t}}
	if p := gradeEpisode(&ep, row, l.SegmentReward, l.Gamma); p != "" {
		problem = p
	}
	return &ep, problem
}

// gradeEpisode writes row's grade into ep (correctness, termination,
// metrics, metadata, the trajectories' reward, signals, output and segment
// rewards) and fills in the rLLM ids. A trajectory whose steps do not
// validate loses them; the second result says why.
func gradeEpisode(ep *grading.Episode, row Row, segmentReward string, gamma float64) string {
	ep.Artifacts = grading.Artifacts{Answer: row.PredictedAnswer}
	ep.IsCorrect = row.Correct
	ep.TerminationReason = grading.TerminationReason(row.TerminationReason)
	if !ep.TerminationReason.Valid() {
		ep.TerminationReason = grading.TerminationUnknown
	}
	ep.Metrics = map[string]float64{"score": row.Score, "tokens": float64(row.Tokens), "cost": row.Cost,
		"time/agentflow_s": row.AgentSeconds, "time/rollout_s": row.Seconds}
	for k, x := range row.Signals {
		ep.Metrics["signal/"+k] = x
	}
	ep.Metadata = map[string]any{"task_id": row.TaskID, "rollout_idx": row.Chain, "run_id": row.RunID,
		"status": row.Status, "metric": row.Metric, "evaluated": row.Evaluated}
	for k, v := range map[string]string{"end_reason": row.EndReason, "error": row.Error, "eval_error": row.EvalError, "work_dir": row.WorkDir} {
		if v != "" {
			ep.Metadata[k] = v
		}
	}
	problem := ""
	for i := range ep.Trajectories {
		t := &ep.Trajectories[i]
		t.Reward, t.Signals, t.Output = row.Score, row.Signals, row.PredictedAnswer
		t.SegmentRewards, t.SegmentRewardMode = nil, ""
		if len(t.Steps) > 0 {
			if err := t.AssignSegmentRewards(segmentReward, gamma); err != nil {
				problem = err.Error()
			}
		}
	}
	ep.Identify()
	if err := ep.Validate(); err != nil {
		problem = err.Error()
		for i := range ep.Trajectories {
			t := &ep.Trajectories[i]
			t.Steps, t.SegmentRewards, t.SegmentRewardMode = []grading.Step{}, nil, ""
		}
	}
	return problem
}

func rowSummary(r Row) string {
	verdict := "wrong"
	switch {
	case !r.Success:
		verdict = "agent " + r.Status
	case r.EvalError != "":
		verdict = "eval error"
	case !r.Evaluated:
		verdict = "not graded"
	case r.Correct:
		verdict = "correct"
	}
	return fmt.Sprintf("%s #%d: %s (score %.2f) answer %q", r.TaskID, r.Chain, verdict, r.Score, agent.Line(r.PredictedAnswer, 60))
}

// LaneFinishPhase ends the lane with its rows as the result.
func LaneFinishPhase(in phases.Input) (phases.Output, error) {
	var v laneVar
	if _, err := phases.GetVar(in.State, varLane, &v); err != nil {
		return phases.Output{}, err
	}
	for _, r := range in.Results {
		if r.Kind == operations.KindWriteFile && r.Error != "" {
			v.WriteErrors++
		}
	}
	res := LaneResult{Rows: []Row{}, WriteErrors: v.WriteErrors}
	for i := 0; i < in.State.Len(); i++ {
		e := in.State.Entry(i)
		if e.Type != EntryRow {
			continue
		}
		var r Row
		if err := e.Decode(&r); err != nil {
			return phases.Output{}, err
		}
		r.Summary = ""
		res.Rows = append(res.Rows, r)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return phases.Output{}, err
	}
	end := &phases.End{Result: b}
	if f := v.Fatal; f != nil {
		// The rollout reads the rows of the samples done from the result.
		end.Failed, end.Reason, end.Error = true, f.Code, f.Error
	}
	return phases.Output{End: end}, nil
}
