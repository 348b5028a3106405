package rollout

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/record"
)

// Name is the workflow's registry name.
const Name = "rollout"

// Phase names.
const (
	PhaseInit   = "init"
	PhaseLoad   = "load"
	PhaseResume = "resume"
	PhaseRun    = "run"
	PhaseReport = "report"
	PhaseDone   = "done"
)

// Entry types of the rollout run.
const (
	// EntryTask is one selected task (Task).
	EntryTask = "task"
	// EntryPlan lists the samples to run (Plan).
	EntryPlan = "plan"
	// EntryLaneError records a lane that did not succeed (LaneError).
	EntryLaneError = "lane_error"
	// EntryRegrade is an earlier row to grade again (Row).
	EntryRegrade = "regrade"
)

func init() {
	phases.Register(Workflow())
	phases.Register(LaneWorkflow())
}

// Workflow returns the rollout declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name:        Name,
		Description: "Benchmark rollout: runs an agent workflow on every task × chain under a concurrency cap, grades each sample, writes results, evaluation, summary, episodes and group advantages; resumable.",
		Start:       PhaseInit,
		Phases: []phases.PhaseSpec{
			{Name: PhaseInit, Run: typed.Phase(Init), Next: []string{PhaseLoad}},
			{Name: PhaseLoad, Run: typed.Phase(Load), Next: []string{PhaseResume, PhaseRun, PhaseReport, PhaseDone}},
			{Name: PhaseResume, Run: typed.Phase(Resume), Next: []string{PhaseRun, PhaseReport, PhaseDone}},
			{Name: PhaseRun, Run: typed.Phase(Run), Next: []string{PhaseRun, PhaseReport, PhaseDone}},
			{Name: PhaseReport, Run: typed.Phase(Report), Next: []string{PhaseDone}},
			{Name: PhaseDone, Run: typed.Phase(Done)},
		},
		Settings:      Settings{},
		CheckSettings: CheckSettings,
	}
}

// Plan is the list of samples to run: [task position, chain] pairs, the
// position indexing the run's task entries.
type Plan struct {
	Summary string   `json:"summary"`
	Items   [][2]int `json:"items"`
}

// LaneError is a lane that did not succeed; its samples have no rows in
// this run (those it finished are in the results file, and a re-run picks
// up the others).
type LaneError struct {
	Summary string        `json:"summary"`
	RunID   string        `json:"run_id"`
	Status  record.Status `json:"status"`
	Error   string        `json:"error"`
}

// Manifest is rollout_<bench>.json in the output directory: it names the
// timestamp of the files a re-run continues.
type Manifest struct {
	SchemaVersion int    `json:"schema_version"`
	BenchmarkName string `json:"benchmark_name"`
	Timestamp     string `json:"timestamp"`
	RunID         string `json:"run_id"`
	Complete      bool   `json:"complete"`
	// Grading is what graded the rows: a re-run with other grading
	// re-grades them.
	Grading Grading `json:"grading"`
	Files
}

// runState is the rollout's var "rollout": small counters only; tasks,
// the plan and rows are entries.
type runState struct {
	Timestamp   string    `json:"timestamp"`
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	Files       Files     `json:"files"`
	Tasks       int       `json:"tasks"`
	Samples     int       `json:"samples"`
	Previous    int       `json:"previous"`
	Planned     int       `json:"planned"`
	Next        int       `json:"next"`
	Round       int       `json:"round"`
	Lanes       int       `json:"lanes"`
	LaneFailed  int       `json:"lane_failed,omitempty"`
	WriteErrors int       `json:"write_errors,omitempty"`
	// BenchmarkSHA256 is the hash of the benchmark file.
	BenchmarkSHA256 string `json:"benchmark_sha256,omitempty"`
	// GradingChanges lists how the grading settings differ from the earlier
	// rollout's (from its manifest).
	GradingChanges []string `json:"grading_changes,omitempty"`
	// Regrade counts the planned samples that are re-graded from their
	// stored answers (no agent run); Rerun the earlier samples run again
	// because their task changed; Notice says so for people.
	Regrade int `json:"regrade,omitempty"`
	// PlanMade is set once the plan is made.
	PlanMade bool   `json:"plan_made,omitempty"`
	Rerun    int    `json:"rerun,omitempty"`
	Notice   string `json:"notice,omitempty"`
	// Fatal is the model failure that stopped the rollout (a lane's agent
	// or judge met one that cannot get better): no further round starts,
	// the reports are written for the samples done and the run ends with
	// it.
	Fatal *Fatal `json:"fatal,omitempty"`
}

const varState = "rollout"

func getState(s phases.State) (runState, error) {
	var st runState
	ok, err := phases.GetVar(s, varState, &st)
	if err == nil && !ok {
		err = fmt.Errorf("%w: var %q is not set", ErrState, varState)
	}
	return st, err
}

// typed hands the rollout's phases their parsed settings (see
// phases.Typed); each phase after Init reads the rollout's state var too.
var typed = phases.NewTyped(ParseSettings)

// Init names the output files after the start time and reads the
// benchmark and the manifest of an earlier rollout.
func Init(in phases.Input, s *Settings) (phases.Output, error) {
	ts := in.Run.Now.UTC().Format("20060102_150405")
	st := runState{Timestamp: ts, StartedAt: in.Run.Now, Files: s.files(in.Run.WorkDir, ts)}
	var out phases.Output
	if s.Question == "" {
		read := operations.NewReadFile(abs(in.Run.WorkDir, s.DataPath))
		if formatOf(s.DataFormat, s.DataPath) == FormatParquet {
			operations.ReadFile.Params(read).As = operations.ReadAsJSONL
		}
		out.Ops = []operations.Request{read}
	}
	if *s.Resume {
		out.Ops = append(out.Ops, operations.NewReadFile(st.Files.Manifest))
	}
	if err := out.SetVar(varState, st); err != nil {
		return out, err
	}
	out.Next = PhaseLoad
	return out, nil
}

// Load parses and selects the tasks, then reads the earlier results when
// the manifest names an earlier rollout, or plans every sample.
func Load(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	rest := in.Results
	var content []byte
	if s.Question != "" {
		content, err = json.Marshal(map[string]string{"id": "question", "question": s.Question})
		if err != nil {
			return out, err
		}
	} else {
		if len(rest) < 1 {
			return out, fmt.Errorf("%w: load without the benchmark read", ErrState)
		}
		data := rest[0]
		rest = rest[1:]
		switch {
		case data.Error != "":
			return failed(out, "data_path: "+data.Error)
		case !exists(data):
			return failed(out, fmt.Sprintf("data_path: %s does not exist", abs(in.Run.WorkDir, s.DataPath)))
		}
		content = []byte(operations.ReadFile.Result(data).Content)
	}
	st.BenchmarkSHA256 = sha256Hex(content)
	var tasks []Task
	if s.Question != "" {
		// The question is the whole benchmark: no mapping, no selection.
		if tasks, err = ParseBenchmark(content); err != nil {
			return failed(out, "question: "+err.Error())
		}
	} else {
		format := formatOf(s.DataFormat, s.DataPath)
		if format == FormatParquet {
			format = FormatJSONL // converted by the read
		}
		all, err := ParseBenchmarkAs(content, format, s.Fields)
		if err != nil {
			return failed(out, "data_path: "+err.Error())
		}
		if tasks, err = selectTasks(all, s); err != nil {
			return failed(out, err.Error())
		}
	}
	for _, t := range tasks {
		out.Append = append(out.Append, phases.MustEntry(EntryTask, t))
	}
	st.Tasks, st.Samples = len(tasks), len(tasks)*s.NumChains
	if len(rest) > 0 && *s.Resume {
		if m := rest[0]; m.Error == "" && exists(m) {
			var man Manifest
			if err := json.Unmarshal([]byte(operations.ReadFile.Result(m).Content), &man); err != nil || man.Timestamp == "" {
				return failed(out, fmt.Sprintf("%s: not a rollout manifest (delete it or set resume false)", st.Files.Manifest))
			}
			st.Timestamp = man.Timestamp
			st.Files = s.files(in.Run.WorkDir, man.Timestamp)
			if man.Grading.Metric != "" {
				st.GradingChanges = s.grading(st.BenchmarkSHA256).changes(man.Grading)
			}
			out.Ops = []operations.Request{operations.NewReadFile(st.Files.Results)}
			if err := out.SetVar(varState, st); err != nil {
				return out, err
			}
			out.Next = PhaseResume
			return out, nil
		}
	}
	if s.Regrade {
		return failed(out, fmt.Sprintf("regrade: no earlier rollout of %s in %s", s.BenchmarkName, st.Files.Dir))
	}
	return plan(in, s, st, out, tasks, nil, nil)
}

// selectTasks applies task_ids and max_tasks.
func selectTasks(all []Task, s *Settings) ([]Task, error) {
	tasks := all
	if len(s.TaskIDs) > 0 {
		want := make(map[string]bool, len(s.TaskIDs))
		for _, id := range s.TaskIDs {
			want[id] = true
		}
		tasks = nil
		for _, t := range all {
			if want[t.ID] {
				tasks = append(tasks, t)
				delete(want, t.ID)
			}
		}
		if len(want) > 0 {
			var missing []string
			for _, id := range s.TaskIDs {
				if want[id] {
					missing = append(missing, id)
				}
			}
			return nil, fmt.Errorf("task_ids: not in the benchmark: %s", strings.Join(missing, ", "))
		}
	}
	if s.Shuffle {
		tasks = append([]Task(nil), tasks...)
		r := rand.New(rand.NewPCG(uint64(s.Seed), 0x666c6f636b)) // seeded: the same seed, the same order
		r.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	}
	tasks = tasks[min(s.Offset, len(tasks)):]
	if s.Limit > 0 && len(tasks) > s.Limit {
		tasks = tasks[:s.Limit]
	}
	if s.MaxTasks > 0 && len(tasks) > s.MaxTasks {
		tasks = tasks[:s.MaxTasks]
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("no task selected (offset %d of %d)", s.Offset, len(all))
	}
	return tasks, nil
}

// Resume keeps the finished samples of the earlier rollout and plans the
// rest.
func Resume(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	tasks, err := tasksOf(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	if len(in.Results) != 1 {
		return out, fmt.Errorf("%w: resume wants the results read", ErrState)
	}
	r := in.Results[0]
	if r.Error != "" {
		return failed(out, "read earlier results: "+r.Error)
	}
	done := map[sampleKey]bool{}
	regrade := map[sampleKey]bool{}
	var changedTasks, regradedTasks []string
	if exists(r) {
		byID := make(map[string]Task, len(tasks))
		for _, t := range tasks {
			byID[t.ID] = t
		}
		changed, regraded := map[string]bool{}, map[string]bool{}
		for _, row := range parseResults(operations.ReadFile.Result(r).Content) {
			t, ok := byID[row.TaskID]
			if !ok || row.Chain < 0 || row.Chain >= s.NumChains {
				continue
			}
			if row.InputHash != "" && row.InputHash != t.inputHash() {
				// The task changed: its stored answer answers another task.
				st.Rerun++
				if !changed[t.ID] {
					changed[t.ID] = true
					changedTasks = append(changedTasks, t.ID)
				}
				continue
			}
			if !row.Success && *s.RetryFailed && !s.Regrade {
				continue
			}
			row.TaskIndex = t.Index
			gh := gradingHash(s.EvaluationMetric, *s.CorrectThreshold, s.Judge, s.Verifier, t, s.extras())
			k := sampleKey{row.TaskID, row.Chain}
			if s.Regrade || row.GradingHash != gh {
				row.Summary = "re-grade: " + rowSummary(row)
				out.Append = append(out.Append, phases.MustEntry(EntryRegrade, row))
				regrade[k] = true
				if !regraded[t.ID] {
					regraded[t.ID] = true
					regradedTasks = append(regradedTasks, t.ID)
				}
				continue
			}
			row.Summary = "earlier: " + rowSummary(row)
			out.Append = append(out.Append, phases.MustEntry(EntryRow, row))
			done[k] = true
		}
	}
	st.Previous = len(done)
	st.Regrade = len(regrade)
	var notes []string
	if st.Regrade > 0 {
		why := st.GradingChanges
		switch {
		case s.Regrade:
			why = []string{"regrade requested"}
		case len(why) == 0:
			why = []string{"references or verifier changed for " + idList(regradedTasks)}
		}
		notes = append(notes, fmt.Sprintf("re-grade %d samples from their stored answers (%s)", st.Regrade, strings.Join(why, "; ")))
	}
	if st.Rerun > 0 {
		verb := "run again"
		if s.Regrade {
			verb = "dropped (not run with regrade)"
		}
		notes = append(notes, fmt.Sprintf("%d samples of changed tasks %s: %s", st.Rerun, verb, idList(changedTasks)))
	}
	st.Notice = strings.Join(notes, "; ")
	if st.Notice != "" {
		out.Append = append(out.Append, phases.MustEntry("warning", agent.NewWarning(st.Notice)))
	}
	return plan(in, s, st, out, tasks, done, regrade)
}

// tasksOf returns the task entries in order.
func tasksOf(s phases.State) ([]Task, error) {
	var tasks []Task
	for i := 0; i < s.Len(); i++ {
		e := s.Entry(i)
		if e.Type != EntryTask {
			continue
		}
		var t Task
		if err := e.Decode(&t); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// plan records the samples still to run, writes the manifest and starts
// the first round (or finishes when nothing is left).
// With regrade set, only the samples to re-grade are planned.
func plan(in phases.Input, s *Settings, st runState, out phases.Output, tasks []Task, done, regrade map[sampleKey]bool) (phases.Output, error) {
	p := Plan{Items: [][2]int{}}
	for pos, t := range tasks {
		for c := 0; c < s.NumChains; c++ {
			k := sampleKey{t.ID, c}
			if regrade[k] || (!done[k] && !s.Regrade) {
				p.Items = append(p.Items, [2]int{pos, c})
			}
		}
	}
	p.Summary = fmt.Sprintf("%d tasks × %d chains: %d samples to run, %d to re-grade, %d finished earlier",
		len(tasks), s.NumChains, len(p.Items)-len(regrade), len(regrade), len(done))
	out.Append = append(out.Append, phases.MustEntry(EntryPlan, p))
	st.Planned, st.PlanMade = len(p.Items), true
	if len(p.Items) == 0 {
		// Nothing to run: finalize writes the final manifest.
		out.Ops = nil
		return finalize(in, s, st, out, nil)
	}
	man, err := manifest(in, s, st, false)
	if err != nil {
		return out, err
	}
	out.Ops = []operations.Request{man}
	return spawnRound(in, s, st, out, tasks, p)
}

func manifest(in phases.Input, s *Settings, st runState, complete bool) (operations.Request, error) {
	b, err := json.MarshalIndent(Manifest{SchemaVersion: SchemaVersion, BenchmarkName: s.BenchmarkName, Timestamp: st.Timestamp,
		RunID: in.Run.ID, Complete: complete, Grading: s.grading(st.BenchmarkSHA256), Files: st.Files}, "", "  ")
	if err != nil {
		return operations.Request{}, err
	}
	return operations.NewWriteFile(st.Files.Manifest, string(b)+"\n", false).WithMeta("purpose", "manifest"), nil
}

// spawnRound spawns the next round of lanes: up to max_concurrency lanes,
// each with items_per_lane samples (all remaining samples when 0), dealt
// round-robin so the chains of a task run side by side.
func spawnRound(in phases.Input, s *Settings, st runState, out phases.Output, tasks []Task, p Plan) (phases.Output, error) {
	remaining := p.Items[st.Next:]
	size := len(remaining)
	if s.ItemsPerLane > 0 {
		size = min(size, s.MaxConcurrency*s.ItemsPerLane)
	}
	round := remaining[:size]
	lanes := min(s.MaxConcurrency, len(round))
	agentSettings, err := s.agentSettings()
	if err != nil {
		return out, err
	}
	trajFile := trajectoryFile
	var am map[string]json.RawMessage
	if json.Unmarshal(agentSettings, &am) == nil {
		var name string
		if json.Unmarshal(am["trajectory_file"], &name) == nil && name != "" {
			trajFile = name
		}
	}
	regrades, err := regradeRows(in.State, out.Append)
	if err != nil {
		return out, err
	}
	for j := 0; j < lanes; j++ {
		l := Lane{Round: st.Round, Index: j, Workflow: s.Agent.Workflow, Settings: agentSettings, TrajectoryFile: trajFile,
			Metric: s.EvaluationMetric, Threshold: *s.CorrectThreshold, Judge: s.Judge, Verifier: s.Verifier, Extras: s.extras(),
			ResultsFile: st.Files.Results, EpisodesFile: st.Files.Episodes, SegmentReward: s.SegmentReward, Gamma: s.Gamma}
		for k := j; k < len(round); k += lanes {
			pos, chain := round[k][0], round[k][1]
			if pos < 0 || pos >= len(tasks) {
				return out, fmt.Errorf("%w: plan names task %d of %d", ErrState, pos, len(tasks))
			}
			it := Item{Task: tasks[pos], Chain: chain}
			if r, ok := regrades[sampleKey{tasks[pos].ID, chain}]; ok {
				r.Summary = ""
				it.Regrade = &r
			}
			l.Items = append(l.Items, it)
		}
		b, err := json.Marshal(LaneSettings{Models: s.Models, Lane: l})
		if err != nil {
			return out, err
		}
		out.Ops = append(out.Ops, operations.NewSpawn(operations.SpawnRequest{
			Workflow: LaneName, Settings: b, Name: fmt.Sprintf("lane-r%d-%03d", st.Round, j),
			Task: fmt.Sprintf("%s: round %d, lane %d (%d samples)", s.BenchmarkName, st.Round, j, len(l.Items)),
		}).WithMeta("lane", strconv.Itoa(j)))
	}
	st.Next += size
	st.Round++
	st.Lanes += lanes
	if err := out.SetVar(varState, st); err != nil {
		return out, err
	}
	out.Next = PhaseRun
	return out, nil
}

// regradeRows returns the rows to re-grade, from the log and from entries
// about to be appended.
func regradeRows(s phases.State, pending []phases.Entry) (map[sampleKey]Row, error) {
	rows := map[sampleKey]Row{}
	add := func(e phases.Entry) error {
		if e.Type != EntryRegrade {
			return nil
		}
		var r Row
		if err := e.Decode(&r); err != nil {
			return err
		}
		rows[sampleKey{r.TaskID, r.Chain}] = r
		return nil
	}
	for i := 0; i < s.Len(); i++ {
		if err := add(s.Entry(i)); err != nil {
			return nil, err
		}
	}
	for _, e := range pending {
		if err := add(e); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// Run collects the rows of a finished round; it starts the next round
// (rewriting the evaluation and summary files with the rows so far) or
// finishes.
func Run(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	var fresh []Row
	for _, r := range in.Results {
		switch r.Kind {
		case operations.KindWriteFile:
			if r.Error != "" {
				st.WriteErrors++
			}
		case operations.KindSpawn:
			var lr LaneResult
			sp := operations.Spawn.Result(r)
			ok := r.Error == "" && sp != nil && sp.Status == record.StatusSucceeded && json.Unmarshal(sp.Result, &lr) == nil
			if f := fatalOf(r); f != nil && json.Unmarshal(sp.Result, &lr) == nil {
				// The lane stopped on a model failure: its rows are
				// good, and no further sample can do better.
				ok = true
				if st.Fatal == nil {
					st.Fatal = f
					out.Append = append(out.Append, phases.MustEntry("warning", agent.NewWarning(
						fmt.Sprintf("stopping: %s: %s", f.Code, agent.Line(f.Error, 300)))))
				}
			}
			if !ok {
				st.LaneFailed++
				le := LaneError{Error: r.Error}
				if sp != nil {
					le.RunID, le.Status = sp.RunID, sp.Status
					if le.Error == "" {
						le.Error = sp.Error
					}
				}
				le.Summary = fmt.Sprintf("lane %s %s: %s", r.Meta["lane"], le.Status, agent.Line(le.Error, 160))
				out.Append = append(out.Append, phases.MustEntry(EntryLaneError, le))
				continue
			}
			st.WriteErrors += lr.WriteErrors
			for _, row := range lr.Rows {
				row.Summary = rowSummary(row)
				out.Append = append(out.Append, phases.MustEntry(EntryRow, row))
				fresh = append(fresh, row)
			}
		}
	}
	if st.Next < st.Planned && st.Fatal == nil {
		tasks, err := tasksOf(in.State)
		if err != nil {
			return out, err
		}
		i := phases.Last(in.State, EntryPlan)
		if i < 0 {
			return out, fmt.Errorf("%w: no plan entry", ErrState)
		}
		var p Plan
		if err := in.State.Entry(i).Decode(&p); err != nil {
			return out, err
		}
		rows, err := rowsOf(in.State, fresh)
		if err != nil {
			return out, err
		}
		writes, err := reports(in, s, st, rows, false)
		if err != nil {
			return out, err
		}
		out.Ops = writes
		return spawnRound(in, s, st, out, tasks, p)
	}
	return finalize(in, s, st, out, fresh)
}

// rowsOf returns the deduplicated rows of the log plus fresh ones.
func rowsOf(s phases.State, fresh []Row) ([]Row, error) {
	var rows []Row
	for i := 0; i < s.Len(); i++ {
		e := s.Entry(i)
		if e.Type != EntryRow {
			continue
		}
		var r Row
		if err := e.Decode(&r); err != nil {
			return nil, err
		}
		r.Summary = ""
		rows = append(rows, r)
	}
	for _, r := range fresh {
		r.Summary = ""
		rows = append(rows, r)
	}
	return dedupe(rows), nil
}

func progressOf(in phases.Input, s *Settings, st runState, now time.Time) progress {
	return progress{RunID: in.Run.ID, Bench: s.BenchmarkName, Timestamp: st.Timestamp, Workflow: s.Agent.Workflow,
		Metric: s.primary(), Primary: s.primary(), Reducers: s.Reducers, NumChains: s.NumChains, Tasks: st.Tasks, Samples: st.Samples, StartedAt: st.StartedAt,
		Now: now, LaneFailed: st.LaneFailed, WriteError: st.WriteErrors, Files: st.Files,
		Regraded: st.Regrade, Rerun: st.Rerun, Notice: st.Notice}
}

// reports returns the writes of the evaluation and summary files (and,
// when final, the groups file and the completed manifest).
func reports(in phases.Input, s *Settings, st runState, rows []Row, final bool) ([]operations.Request, error) {
	now := in.Run.Now
	if final {
		now = st.FinishedAt
	}
	sum, ev := summarize(rows, progressOf(in, s, st, now))
	eb, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return nil, err
	}
	sb, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return nil, err
	}
	ops := []operations.Request{
		operations.NewWriteFile(st.Files.Evaluation, string(eb)+"\n", false).WithMeta("purpose", "evaluation"),
		operations.NewWriteFile(st.Files.Summary, string(sb)+"\n", false).WithMeta("purpose", "summary"),
	}
	if !final {
		return ops, nil
	}
	man, err := manifest(in, s, st, sum.Complete)
	if err != nil {
		return nil, err
	}
	return append(ops, man), nil
}

// GroupLine is one line of groups_<bench>_<ts>.jsonl: rLLM's
// TrajectoryGroup (group_id "task_id:name", the trajectories, metadata
// aligned with them) with its advantages per estimator, in trajectory
// order.
type GroupLine struct {
	grading.TrajectoryGroup
	Advantages map[string][]float64 `json:"advantages"`
}

// groups groups the episodes of graded samples (a failed agent is a
// member with reward 0, unless groups_drop_failed) by
// "task_id:trajectory_name" and computes the requested advantages.
// Ungraded samples are in no group.
func groups(rows []Row, eps []grading.Episode, s *Settings) (string, error) {
	var members []grading.Episode
	for i, r := range rows {
		if !r.Evaluated || (s.GroupsDropFailed && !r.Success) {
			continue
		}
		members = append(members, eps[i])
	}
	gs, err := grading.GroupEpisodes(members)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, g := range gs {
		line := GroupLine{TrajectoryGroup: g, Advantages: map[string][]float64{}}
		for _, est := range s.Advantages {
			adv, err := grading.Advantages(g.Rewards(), grading.AdvantageOptions{Estimator: est, NoStdNorm: s.GRPONoStdNorm})
			if err != nil {
				return "", err
			}
			line.Advantages[est] = adv
		}
		lb, err := json.Marshal(line)
		if err != nil {
			return "", err
		}
		b.Write(lb)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// finalize writes the final reports and goes to done.
func finalize(in phases.Input, s *Settings, st runState, out phases.Output, fresh []Row) (phases.Output, error) {
	st.FinishedAt = in.Run.Now
	rows, err := rowsOf(in.State, fresh)
	if err != nil {
		return out, err
	}
	// Rows appended in this output but not passed as fresh (Resume's
	// earlier rows) are in out.Append.
	if fresh == nil {
		for _, e := range out.Append {
			if e.Type == EntryRow {
				var r Row
				if err := e.Decode(&r); err != nil {
					return out, err
				}
				r.Summary = ""
				rows = append(rows, r)
			}
		}
		rows = dedupe(rows)
	}
	// The results file (and the episodes file) is rewritten whole, one
	// line per sample with its final grade; Report reads them first, for
	// the rows of samples outside this rollout and the lanes' episodes.
	out.Ops = append(out.Ops, operations.NewReadFile(st.Files.Results).WithMeta("purpose", "results"))
	if st.Files.Episodes != "" {
		out.Ops = append(out.Ops, operations.NewReadFile(st.Files.Episodes).WithMeta("purpose", "episodes"))
	}
	if err := out.SetVar(varState, st); err != nil {
		return out, err
	}
	out.Next = PhaseReport
	return out, nil
}

// resultsFile is the content of the results file: one line per sample,
// the newest row of each. Those of rows (the rollout's current rows) come
// first, in task and chain order; then, as they were, the lines of the
// earlier file (old, the last line of each sample) for samples this
// rollout has no row of: other tasks or chains, or samples it meant to
// run again or re-grade but did not (it stopped on a model failure). A
// rewrite never loses a sample's row, only replaces it with a newer one.
func resultsFile(rows []Row, old string) (string, error) {
	var b strings.Builder
	have := make(map[sampleKey]bool, len(rows))
	for _, r := range rows {
		have[sampleKey{r.TaskID, r.Chain}] = true
		r.Summary = ""
		line, err := json.Marshal(r)
		if err != nil {
			return "", fmt.Errorf("encode row: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	var order []sampleKey
	kept := map[sampleKey]string{}
	for _, line := range strings.Split(old, "\n") {
		var k struct {
			TaskID string `json:"task_id"`
			Chain  int    `json:"chain"`
		}
		if json.Unmarshal([]byte(line), &k) != nil || k.TaskID == "" {
			continue // a line cut short by a crash, or not a row
		}
		key := sampleKey{k.TaskID, k.Chain}
		if have[key] {
			continue
		}
		if _, ok := kept[key]; !ok {
			order = append(order, key)
		}
		kept[key] = strings.TrimSpace(line)
	}
	for _, k := range order {
		b.WriteString(kept[k])
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// Report rewrites the results file (one line per sample, see
// resultsFile) and the episodes file from the lanes' episode lines (the
// last line per id, regraded samples given their new grade, samples
// without a line given an episode without steps), and writes the groups,
// evaluation, summary and manifest.
func Report(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	rows, err := rowsOf(in.State, nil)
	if err != nil {
		return out, err
	}
	tasks, err := tasksOf(in.State)
	if err != nil {
		return out, err
	}
	taskRow := make(map[string]json.RawMessage, len(tasks))
	for _, t := range tasks {
		taskRow[t.ID] = t.Row
	}
	var read, results *operations.Result
	for i := range in.Results {
		r := &in.Results[i]
		switch {
		case r.Kind == operations.KindReadFile && r.Meta["purpose"] == "results":
			results = r
		case r.Kind == operations.KindReadFile: // the episodes file
			read = r
		case r.Kind == operations.KindWriteFile && r.Error != "":
			st.WriteErrors++
		}
	}
	switch {
	case results == nil:
		// A report step journaled before finalize read the results file:
		// rewritten from the rollout's rows alone.
	case results.Error != "":
		// Unreadable: left as appended, rather than lose the rows of
		// other samples it may hold.
		st.WriteErrors++
		out.Append = append(out.Append, phases.MustEntry("warning", agent.NewWarning("results: "+results.Error+"; the file is left as appended")))
	}
	if results == nil || results.Error == "" {
		old := ""
		if results != nil && exists(*results) {
			old = operations.ReadFile.Result(*results).Content
		}
		content, err := resultsFile(rows, old)
		if err != nil {
			return out, err
		}
		out.Ops = append(out.Ops, operations.NewWriteFile(st.Files.Results, content, false).WithMeta("purpose", "results"))
	}
	byID := map[string]grading.Episode{}
	switch {
	case st.Files.Episodes == "":
		return toDone(in, s, st, rows, out)
	case read == nil:
		return out, fmt.Errorf("%w: report without the episodes read", ErrState)
	case read.Error != "":
		// The appended file stays as it is; without it there are no groups.
		st.WriteErrors++
		out.Append = append(out.Append, phases.MustEntry("warning", agent.NewWarning("episodes: "+read.Error+"; the file is left as appended and no groups are written")))
		return toDone(in, s, st, rows, out)
	case exists(*read):
		for _, line := range strings.Split(operations.ReadFile.Result(*read).Content, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if ep, err := grading.DecodeEpisode([]byte(line)); err == nil {
				byID[ep.ID] = ep
			}
		}
	}
	eps := make([]grading.Episode, len(rows))
	var b strings.Builder
	for i, r := range rows {
		ep, ok := byID[r.EpisodeID]
		if !ok {
			name := r.Trajectory
			if name == "" {
				name = s.Agent.Workflow
			}
			ep = grading.Episode{SchemaVersion: grading.EpisodeSchemaVersion, ID: r.EpisodeID, Task: taskRow[r.TaskID],
				Trajectories: []grading.Trajectory{{Name: name, Steps: []grading.Step{}}}}
		}
		gradeEpisode(&ep, r, s.SegmentReward, s.Gamma)
		eps[i] = ep
		line, err := json.Marshal(ep)
		if err != nil {
			return out, fmt.Errorf("encode episode: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	out.Ops = append(out.Ops, operations.NewWriteFile(st.Files.Episodes, b.String(), false).WithMeta("purpose", "episodes"))
	if st.Files.Groups != "" {
		g, err := groups(rows, eps, s)
		if err != nil {
			return out, err
		}
		out.Ops = append(out.Ops, operations.NewWriteFile(st.Files.Groups, g, false).WithMeta("purpose", "groups"))
	}
	return toDone(in, s, st, rows, out)
}

// toDone adds the final reports to out and goes to done.
func toDone(in phases.Input, s *Settings, st runState, rows []Row, out phases.Output) (phases.Output, error) {
	writes, err := reports(in, s, st, rows, true)
	if err != nil {
		return out, err
	}
	out.Ops = append(out.Ops, writes...)
	if err := out.SetVar(varState, st); err != nil {
		return out, err
	}
	out.Next = PhaseDone
	return out, nil
}

// Done checks the final writes and ends the run with the summary as its
// result. The run fails when a lane failed or a file could not be written.
func Done(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	for _, r := range in.Results {
		if r.Kind == operations.KindWriteFile && r.Error != "" {
			st.WriteErrors++
			out.Append = append(out.Append, phases.MustEntry("warning", agent.NewWarning("write "+r.Meta["purpose"]+": "+r.Error)))
		}
	}
	rows, err := rowsOf(in.State, nil)
	if err != nil {
		return out, err
	}
	sum, _ := summarize(rows, progressOf(in, s, st, st.FinishedAt))
	b, err := json.Marshal(sum)
	if err != nil {
		return out, err
	}
	if err := out.SetVar(varState, st); err != nil {
		return out, err
	}
	end := &phases.End{Result: b, Reason: record.ReasonCompleted}
	switch {
	case st.Fatal != nil:
		end.Failed, end.Reason, end.Error = true, st.Fatal.Code, st.Fatal.Error
	case st.LaneFailed > 0:
		end.Failed, end.Reason = true, fmt.Sprintf("lanes_failed: %d of %d", st.LaneFailed, st.Lanes)
	case st.WriteErrors > 0:
		end.Failed, end.Reason = true, fmt.Sprintf("write_errors: %d", st.WriteErrors)
	}
	out.End = end
	return out, nil
}

// failed ends the run at once with reason.
func failed(out phases.Output, reason string) (phases.Output, error) {
	out.Ops, out.Next = nil, ""
	out.End = &phases.End{Failed: true, Reason: reason}
	return out, nil
}

// exists reports whether r, a read_file result, read a file that exists.
func exists(r operations.Result) bool {
	f := operations.ReadFile.Result(r)
	return f != nil && f.Exists
}
