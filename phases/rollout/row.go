package rollout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/flockrun/flock/grading"
)

// SchemaVersion versions the rollout's files (results rows, evaluation,
// summary, manifest).
const SchemaVersion = 1

// Row is one sample (task × chain): a line of results_<bench>_<ts>.jsonl
// and a "row" entry of the lane that ran it and of the rollout.
type Row struct {
	SchemaVersion int    `json:"schema_version"`
	TaskID        string `json:"task_id"`
	// TaskIndex is the task's position in the benchmark file.
	TaskIndex int    `json:"task_index"`
	Chain     int    `json:"chain"`
	EpisodeID string `json:"episode_id"`
	Question  string `json:"question"`
	// GroundTruth are the acceptable answers (empty when the task has none).
	GroundTruth     []string `json:"ground_truth,omitempty"`
	PredictedAnswer string   `json:"predicted_answer"`
	// Score is in [0, 1] for metrics; a verifier's reward as it gave it.
	Score   float64 `json:"score"`
	Correct bool    `json:"correct"`
	// Evaluated is false when nothing could grade the sample (no ground
	// truth and no verifier, or metric none).
	Evaluated bool   `json:"evaluated"`
	Metric    string `json:"metric"`
	// Success is true when the agent run succeeded.
	Success bool `json:"success"`
	// Status is the agent run's. EndReason is a short code: the agent's
	// own ("submitted", "answered", "max_turns"), a model call's failure
	// code ("model_error", "rate_limited", "timeout", "unavailable",
	// react's "generate_failed"), the engine's ("limit_tokens",
	// "limit_time", "cancelled", "phase_error"...) or agent_failed,
	// spawn_error; Error is the message.
	Status            string `json:"status"`
	EndReason         string `json:"end_reason,omitempty"`
	Error             string `json:"error,omitempty"`
	TerminationReason string `json:"termination_reason"`
	// EvalError says why grading failed (the sample then scores 0).
	EvalError      string             `json:"eval_error,omitempty"`
	JudgeReasoning string             `json:"judge_reasoning,omitempty"`
	Signals        map[string]float64 `json:"signals,omitempty"`
	// Scores has every scorer's score by name (the base metric or
	// "verifier", metrics, verifiers) when more than one is configured;
	// Score is the primary's.
	Scores map[string]float64 `json:"scores,omitempty"`
	RunID  string             `json:"run_id"`
	// Tokens and Cost include the judge's (GradeTokens, GradeCost).
	Tokens      int     `json:"tokens"`
	Cost        float64 `json:"cost"`
	GradeTokens int     `json:"grade_tokens,omitempty"`
	GradeCost   float64 `json:"grade_cost,omitempty"`
	// AgentSeconds is the agent run's wall time; Seconds adds grading.
	AgentSeconds float64 `json:"agent_seconds"`
	Seconds      float64 `json:"seconds"`
	// Trajectory and Steps describe the episode's trajectory (when the
	// agent wrote one).
	Trajectory   string          `json:"trajectory,omitempty"`
	Steps        int             `json:"steps,omitempty"`
	EpisodeError string          `json:"episode_error,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	// WorkDir is the agent's work directory, where its verifier ran (and
	// runs again when the sample is re-graded).
	WorkDir string `json:"work_dir,omitempty"`
	// InputHash hashes what the agent saw of the task (question, kwargs):
	// a re-run whose task differs runs the sample again. GradingHash
	// hashes what decided the grade (references, metric, threshold, judge,
	// verifier): a re-run whose grading differs re-grades the stored
	// answer.
	InputHash   string    `json:"input_hash,omitempty"`
	GradingHash string    `json:"grading_hash,omitempty"`
	FinishedAt  time.Time `json:"finished_at"`
	// Summary is a one-line description for people; only in entries.
	Summary string `json:"summary,omitempty"`
}

// EntryRow is the entry type of a finished sample.
const EntryRow = "row"

type sampleKey struct {
	task  string
	chain int
}

// finished reports whether r needs no new run.
func (r Row) finished(retryFailed bool) bool { return r.Success || !retryFailed }

// parseResults reads a results file; lines that do not decode are skipped
// (a torn last line after a crash), and a later row of the same sample
// replaces an earlier one.
func parseResults(content string) []Row {
	var rows []Row
	index := map[sampleKey]int{}
	sc := bufio.NewScanner(bytes.NewReader([]byte(content)))
	sc.Buffer(make([]byte, 0, 64<<10), len(content)+1)
	for sc.Scan() {
		var r Row
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.TaskID == "" {
			continue
		}
		k := sampleKey{r.TaskID, r.Chain}
		if i, ok := index[k]; ok {
			rows[i] = r
			continue
		}
		index[k] = len(rows)
		rows = append(rows, r)
	}
	return rows
}

// dedupe keeps the last row of each sample, ordered by task index then
// chain.
func dedupe(rows []Row) []Row {
	index := map[sampleKey]int{}
	var out []Row
	for _, r := range rows {
		k := sampleKey{r.TaskID, r.Chain}
		if i, ok := index[k]; ok {
			out[i] = r
			continue
		}
		index[k] = len(out)
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].TaskIndex != out[j].TaskIndex {
			return out[i].TaskIndex < out[j].TaskIndex
		}
		return out[i].Chain < out[j].Chain
	})
	return out
}

// Summary is summary_<bench>_<ts>.json and the rollout's result.
type Summary struct {
	SchemaVersion int    `json:"schema_version"`
	BenchmarkName string `json:"benchmark_name"`
	Timestamp     string `json:"timestamp"`
	RunID         string `json:"run_id"`
	AgentWorkflow string `json:"agent_workflow"`
	// Metric names the scorer mean_score is of (the same as Primary): the
	// primary scorer when one is named, else the default verifier when
	// one is set, else evaluation_metric. Rows graded otherwise (a task's
	// own verifier) name their scorer in their own metric.
	Metric    string `json:"metric"`
	NumChains int    `json:"num_chains"`
	// TotalTasks and TotalSamples are what the rollout set out to do;
	// FinishedSamples have a row, MissingSamples not (yet).
	TotalTasks      int  `json:"total_tasks"`
	TotalSamples    int  `json:"total_samples"`
	FinishedSamples int  `json:"finished_samples"`
	MissingSamples  int  `json:"missing_samples"`
	Complete        bool `json:"complete"`
	// Regraded samples were graded again from their stored answers in this
	// run; Rerun samples ran again because their task changed; Notice
	// says why, for people.
	Regraded int    `json:"regraded"`
	Rerun    int    `json:"rerun"`
	Notice   string `json:"notice,omitempty"`
	// The aggregate over evaluated and failed samples (grading.Summarize):
	// samples, tasks, failed, correct, mean_score (failures count 0),
	// success_rate, pass_at_k[k-1] for k = 1..num_chains (unbiased
	// estimator), signal_means.
	grading.Summary
	// PassAt maps "pass@k" to pass_at_k[k-1].
	PassAt map[string]float64 `json:"pass_at"`
	// Primary names the score mean_score and pass@k are of. ScoreMeans is
	// the mean of each scorer's score over the graded samples (failures as
	// 0). Reduced has, per epoch reducer, the mean over tasks of the
	// task's reduced primary scores.
	Primary      string             `json:"primary"`
	ScoreMeans   map[string]float64 `json:"score_means,omitempty"`
	Reduced      map[string]float64 `json:"reduced,omitempty"`
	NotEvaluated int                `json:"not_evaluated"`
	// Errors counts problems by kind: agent_failed, eval_error,
	// episode_error, write_error, lane_failed.
	Errors map[string]int `json:"errors"`
	// FailedBy counts the failed samples by end_reason code.
	FailedBy         map[string]int `json:"failed_by"`
	Tokens           int            `json:"tokens"`
	Cost             float64        `json:"cost"`
	MeanAgentSeconds float64        `json:"mean_agent_seconds"`
	TotalTimeSeconds float64        `json:"total_time_seconds"`
	StartedAt        time.Time      `json:"started_at"`
	UpdatedAt        time.Time      `json:"updated_at"`
	Files
}

// Evaluation is evaluation_<bench>_<ts>.json.
type Evaluation struct {
	SchemaVersion    int    `json:"schema_version"`
	Metric           string `json:"metric"`
	TotalSamples     int    `json:"total_samples"`
	EvaluatedSamples int    `json:"evaluated_samples"`
	// AverageScore counts failed samples as 0.
	AverageScore   float64           `json:"average_score"`
	PerfectMatches int               `json:"perfect_matches"`
	SuccessRate    float64           `json:"success_rate"`
	Evaluations    []EvaluationEntry `json:"evaluations"`
}

// EvaluationEntry is one sample's grade.
type EvaluationEntry struct {
	TaskID      string   `json:"task_id"`
	Chain       int      `json:"chain"`
	Predicted   string   `json:"predicted"`
	GroundTruth []string `json:"ground_truth,omitempty"`
	Score       float64  `json:"score"`
	Correct     bool     `json:"correct"`
	Metric      string   `json:"metric"`
	Details     Details  `json:"details"`
}

// Details explain a grade.
type Details struct {
	Success        bool               `json:"success"`
	Evaluated      bool               `json:"evaluated"`
	Error          string             `json:"error,omitempty"`
	EvalError      string             `json:"eval_error,omitempty"`
	JudgeReasoning string             `json:"judge_reasoning,omitempty"`
	Signals        map[string]float64 `json:"signals,omitempty"`
}

// graded reports whether r counts in the means (graded, or failed).
func graded(r Row) bool { return r.Evaluated || !r.Success }

// scoreMeans is, per scorer, the mean score over the graded samples that
// have it.
func scoreMeans(rows []Row) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	for _, r := range rows {
		if !graded(r) && len(r.Scores) == 0 {
			continue
		}
		for k, v := range r.Scores {
			sum[k] += v
			n[k]++
		}
	}
	if len(n) == 0 {
		return nil
	}
	out := make(map[string]float64, len(n))
	for k := range n {
		out[k] = sum[k] / float64(n[k])
	}
	return out
}

// reduce applies each epoch reducer to each task's primary scores and
// averages over tasks.
func reduce(rows []Row, reducers []string) map[string]float64 {
	if len(reducers) == 0 {
		return nil
	}
	type task struct {
		scores  []float64
		correct []bool
	}
	var order []string
	byTask := map[string]*task{}
	for _, r := range rows {
		if !graded(r) {
			continue
		}
		t := byTask[r.TaskID]
		if t == nil {
			t = &task{}
			byTask[r.TaskID] = t
			order = append(order, r.TaskID)
		}
		score := r.Score
		if !r.Success {
			score = 0
		}
		t.scores, t.correct = append(t.scores, score), append(t.correct, r.Correct && r.Success)
	}
	out := make(map[string]float64, len(reducers))
	for _, name := range reducers {
		total := 0.0
		for _, id := range order {
			v, _ := grading.Reduce(name, byTask[id].scores, byTask[id].correct)
			total += v
		}
		if len(order) > 0 {
			out[name] = total / float64(len(order))
		} else {
			out[name] = 0
		}
	}
	return out
}

// progress is the rollout's bookkeeping that the summary needs.
type progress struct {
	RunID      string
	Bench      string
	Timestamp  string
	Workflow   string
	Metric     string
	Primary    string
	Reducers   []string
	NumChains  int
	Tasks      int
	Samples    int
	StartedAt  time.Time
	Now        time.Time
	LaneFailed int
	WriteError int
	Regraded   int
	Rerun      int
	Notice     string
	Files      Files
}

// summarize aggregates rows (deduplicated) into the summary and the
// evaluation.
func summarize(rows []Row, p progress) (Summary, Evaluation) {
	s := Summary{SchemaVersion: SchemaVersion, BenchmarkName: p.Bench, Timestamp: p.Timestamp, RunID: p.RunID,
		AgentWorkflow: p.Workflow, Metric: p.Metric, Primary: p.Primary, NumChains: p.NumChains, TotalTasks: p.Tasks, TotalSamples: p.Samples,
		FinishedSamples: len(rows), Errors: map[string]int{}, FailedBy: map[string]int{}, StartedAt: p.StartedAt, UpdatedAt: p.Now,
		TotalTimeSeconds: p.Now.Sub(p.StartedAt).Seconds(), Files: p.Files, Regraded: p.Regraded, Rerun: p.Rerun, Notice: p.Notice}
	s.MissingSamples = max(0, p.Samples-len(rows))
	s.Complete = s.MissingSamples == 0
	ev := Evaluation{SchemaVersion: SchemaVersion, Metric: p.Metric, TotalSamples: len(rows), Evaluations: []EvaluationEntry{}}
	var samples []grading.Sample
	agentSeconds := 0.0
	for _, r := range rows {
		s.Tokens += r.Tokens
		s.Cost += r.Cost
		agentSeconds += r.AgentSeconds
		if !r.Success {
			s.Errors["agent_failed"]++
			code := r.EndReason
			if code == "" {
				code = EndAgentFailed
			}
			s.FailedBy[code]++
		}
		if r.EvalError != "" {
			s.Errors["eval_error"]++
		}
		if r.EpisodeError != "" {
			s.Errors["episode_error"]++
		}
		if !r.Evaluated && r.Success {
			s.NotEvaluated++
		} else {
			samples = append(samples, grading.Sample{TaskID: r.TaskID, Score: r.Score, Correct: r.Correct, Failed: !r.Success, Signals: r.Signals})
		}
		if r.Evaluated {
			ev.EvaluatedSamples++
		}
		if r.Score >= 0.99 {
			ev.PerfectMatches++
		}
		ev.Evaluations = append(ev.Evaluations, EvaluationEntry{TaskID: r.TaskID, Chain: r.Chain, Predicted: r.PredictedAnswer,
			GroundTruth: r.GroundTruth, Score: r.Score, Correct: r.Correct, Metric: r.Metric,
			Details: Details{Success: r.Success, Evaluated: r.Evaluated, Error: r.Error, EvalError: r.EvalError,
				JudgeReasoning: r.JudgeReasoning, Signals: r.Signals}})
	}
	if p.LaneFailed > 0 {
		s.Errors["lane_failed"] = p.LaneFailed
	}
	if p.WriteError > 0 {
		s.Errors["write_error"] = p.WriteError
	}
	s.Summary = grading.Summarize(samples)
	s.ScoreMeans, s.Reduced = scoreMeans(rows), reduce(rows, p.Reducers)
	s.PassAt = make(map[string]float64, len(s.PassAtK))
	for i, v := range s.PassAtK {
		s.PassAt["pass@"+strconv.Itoa(i+1)] = v
	}
	if len(rows) > 0 {
		s.MeanAgentSeconds = agentSeconds / float64(len(rows))
	}
	ev.AverageScore = s.MeanScore
	ev.SuccessRate = s.SuccessRate
	return s, ev
}
