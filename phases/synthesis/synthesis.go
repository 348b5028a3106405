package synthesis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	cfgpkg "github.com/flockrun/flock/synthesis/config"
	"github.com/flockrun/flock/synthesis/trajectory"
)

// Name is the synthesis workflow's registry name.
const Name = "synthesis"

// Phase names of the synthesis workflow.
const (
	PhaseInit    = "init"
	PhaseLoad    = "load"
	PhaseSpawn   = "spawn"
	PhaseCollect = "collect"
	PhaseReport  = "report"
	PhaseDone    = "done"
)

// EntryLaneFailed records a lane or seed run that did not succeed.
const EntryLaneFailed = "seed_failed"

// Workflow returns the synthesis declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name:        Name,
		Description: "AgentFlow-style synthesis: per seed, a trajectory tree over sandbox tools, path selection and checked multi-hop QA; writes synthesized_qa.jsonl, trajectories.jsonl, trees.jsonl and summary.json; skips finished seeds on a re-run.",
		Start:       PhaseInit,
		Phases: []phases.PhaseSpec{
			{Name: PhaseInit, Run: typed.Phase(Init), Next: []string{PhaseLoad}},
			{Name: PhaseLoad, Run: typed.Phase(Load), Next: []string{PhaseSpawn}},
			{Name: PhaseSpawn, Run: typed.Phase(Spawn), Next: []string{PhaseCollect, PhaseReport}},
			{Name: PhaseCollect, Run: typed.Phase(Collect), Next: []string{PhaseReport}},
			{Name: PhaseReport, Run: typed.Phase(Report), Next: []string{PhaseDone}},
			{Name: PhaseDone, Run: typed.Phase(Done)},
		},
		Settings:      settingsKeys(),
		CheckSettings: CheckSettings,
		// limits is the budget of the whole synthesis, handed out to the
		// lanes (laneShare) so that it ends with its summary.
		SharesLimits: true,
	}
}

func settingsKeys() []string { return cfgpkg.Keys() }

// runState is the synthesis run's var "synthesis".
type runState struct {
	StartedAt time.Time   `json:"started_at"`
	OutputDir string      `json:"output_dir"`
	Files     outputFiles `json:"files"`
	Seeds     int         `json:"seeds"`
	Skipped   int         `json:"skipped"`
	Planned   int         `json:"planned"`
	Lanes     int         `json:"lanes"`
	Repaired  []string    `json:"repaired,omitempty"`
}

const varRun = "synthesis"

func getRunState(s phases.State) (runState, error) {
	var st runState
	ok, err := phases.GetVar(s, varRun, &st)
	if err == nil && !ok {
		err = fmt.Errorf("%w: var %q is not set", ErrState, varRun)
	}
	return st, err
}

func failed(reason string) (phases.Output, error) {
	return phases.Output{End: &phases.End{Failed: true, Reason: reason}}, nil
}

// Init reads the seeds and, in output_dir, the earlier seeds_done.jsonl
// and output files (a re-run skips finished seeds and drops the lines of
// unfinished ones).
func Init(in phases.Input, s *Settings) (phases.Output, error) {
	dir := abs(in.Run.WorkDir, s.OutputDir)
	st := runState{StartedAt: in.Run.Now, OutputDir: dir, Files: files(dir)}
	var out phases.Output
	if s.SeedsFile != "" {
		out.Ops = append(out.Ops, operations.NewReadFile(abs(in.Run.WorkDir, s.SeedsFile)))
	}
	for _, f := range []string{st.Files.Done, st.Files.QA, st.Files.Trajectories, st.Files.Trees} {
		out.Ops = append(out.Ops, operations.NewReadFile(f))
	}
	out.Next = PhaseLoad
	return out, out.SetVar(varRun, st)
}

// Load parses the seeds, finds the finished ones, repairs the output files
// (drops lines of seeds not finished, and a torn last line) and plans the
// lanes.
func Load(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getRunState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	rest := in.Results
	var data []byte
	if s.SeedsFile != "" {
		if len(rest) == 0 {
			return phases.Output{}, fmt.Errorf("%w: load without the seeds read", ErrState)
		}
		r := rest[0]
		rest = rest[1:]
		switch {
		case r.Error != "":
			return failed("seeds_file: " + r.Error)
		case !exists(r):
			return failed(fmt.Sprintf("seeds_file: %s does not exist", abs(in.Run.WorkDir, s.SeedsFile)))
		}
		data = []byte(operations.ReadFile.Result(r).Content)
	} else {
		data = s.Seeds
	}
	seeds, err := cfgpkg.ParseSeeds(data, s.NumberOfSeed)
	if err != nil {
		return failed(err.Error())
	}
	if len(rest) != 4 {
		return phases.Output{}, fmt.Errorf("%w: load with %d output reads, want 4", ErrState, len(rest))
	}
	content := func(r operations.Result) (string, error) {
		if r.Error != "" {
			return "", fmt.Errorf("%s", r.Error)
		}
		if !exists(r) {
			return "", nil
		}
		return operations.ReadFile.Result(r).Content, nil
	}
	var out phases.Output
	doneText, err := content(rest[0])
	if err != nil {
		return failed("output_dir: " + err.Error())
	}
	done := map[string]bool{}
	keptDone, dropped := filterLines(doneText, func(id string) bool { return true })
	for _, l := range strings.Split(strings.TrimSuffix(keptDone, "\n"), "\n") {
		var d DoneLine
		if l != "" && json.Unmarshal([]byte(l), &d) == nil {
			done[d.SourceID] = true
		}
	}
	if dropped > 0 {
		out.Ops = append(out.Ops, operations.NewWriteFile(st.Files.Done, keptDone, false))
		st.Repaired = append(st.Repaired, FileDone)
	}
	for i, f := range []string{st.Files.QA, st.Files.Trajectories, st.Files.Trees} {
		text, err := content(rest[i+1])
		if err != nil {
			return failed("output_dir: " + err.Error())
		}
		kept, dropped := filterLines(text, func(id string) bool { return done[id] })
		if dropped > 0 {
			out.Ops = append(out.Ops, operations.NewWriteFile(f, kept, false))
			st.Repaired = append(st.Repaired, f)
		}
	}
	var todo []trajectory.Seed
	var skipped []string
	for _, sd := range seeds {
		if done[sd.ID] {
			st.Skipped++
			skipped = append(skipped, sd.ID)
		} else {
			todo = append(todo, sd)
		}
	}
	if len(skipped) > 0 {
		// Report counts this run's seeds only: the lanes' and these.
		out.Append = append(out.Append, phases.MustEntry(EntrySkipped, Skipped{Seeds: skipped}))
	}
	st.Seeds, st.Planned = len(seeds), len(todo)
	st.Lanes = min(len(todo), SeedsInFlight(&s.Config))
	lanes := make([][]trajectory.Seed, st.Lanes)
	for i, sd := range todo {
		lanes[i%st.Lanes] = append(lanes[i%st.Lanes], sd)
	}
	for i, l := range lanes {
		e, err := phases.NewEntry(EntryLane, Lane{Index: i, Seeds: l})
		if err != nil {
			return out, err
		}
		out.Append = append(out.Append, e)
	}
	out.Next = PhaseSpawn
	return out, out.SetVar(varRun, st)
}

// EntryLane is one lane's share of the seeds (Lane).
const EntryLane = "lane"

// EntrySkipped lists the seeds of the run an earlier run finished
// (Skipped).
const EntrySkipped = "seeds_skipped"

// Skipped is the ids of the run's seeds that an earlier run finished.
type Skipped struct {
	Seeds []string `json:"seeds"`
}

// Lane is one lane's share of the seeds.
type Lane struct {
	Index int               `json:"index"`
	Seeds []trajectory.Seed `json:"seeds"`
}

// filterLines keeps the complete lines of text whose JSON source_id
// passes keep, and counts the others (a torn last line, a line that is not
// a JSON object with a source_id, a line keep refuses).
func filterLines(text string, keep func(id string) bool) (string, int) {
	if text == "" {
		return "", 0
	}
	var b strings.Builder
	dropped := 0
	lines := strings.SplitAfter(text, "\n")
	for _, l := range lines {
		if l == "" {
			continue
		}
		var v struct {
			SourceID string `json:"source_id"`
		}
		if !strings.HasSuffix(l, "\n") || json.Unmarshal([]byte(l), &v) != nil || v.SourceID == "" || !keep(v.SourceID) {
			dropped++
			continue
		}
		b.WriteString(l)
	}
	return b.String(), dropped
}

// Spawn starts the lanes once the repairs are written.
func Spawn(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getRunState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	for _, r := range in.Results {
		if r.Error != "" {
			return failed("output_dir: repair: " + r.Error)
		}
	}
	var out phases.Output
	if st.Planned == 0 {
		out.Ops = []operations.Request{operations.NewReadFile(st.Files.Done)}
		out.Next = PhaseReport
		return out, nil
	}
	base, err := baseSeedSettings(s, st.OutputDir)
	if err != nil {
		return out, err
	}
	for i := 0; i < in.State.Len(); i++ {
		e := in.State.Entry(i)
		if e.Type != EntryLane {
			continue
		}
		var l Lane
		if err := json.Unmarshal(e.Data, &l); err != nil {
			return out, fmt.Errorf("%w: lane entry: %v", ErrState, err)
		}
		ls := LaneSettings{Base: base, Seeds: l.Seeds}
		ls.Budget, ls.Deadline = laneShare(s.Config.Limits, st.Lanes, st.StartedAt)
		doc, err := phases.Marshal(ls)
		if err != nil {
			return out, err
		}
		r := operations.NewSpawn(operations.SpawnRequest{Workflow: LaneName, Settings: doc, Name: fmt.Sprintf("lane-%03d", l.Index)})
		r.Meta = operations.Meta{"lane": fmt.Sprint(l.Index)}
		out.Ops = append(out.Ops, r)
	}
	out.Next = PhaseCollect
	return out, nil
}

// laneShare is one lane's share of the synthesis's limits: tokens,
// actions and cost split equally over the lanes (at least 1 token or
// action each), and the time limit as a deadline from the start.
func laneShare(total operations.RunLimits, lanes int, started time.Time) (operations.RunLimits, *time.Time) {
	var b operations.RunLimits
	if total.Tokens > 0 {
		b.Tokens = max(1, total.Tokens/lanes)
	}
	if total.Actions > 0 {
		b.Actions = max(1, total.Actions/lanes)
	}
	if total.Cost > 0 {
		b.Cost = total.Cost / float64(lanes)
	}
	if total.Seconds <= 0 {
		return b, nil
	}
	d := started.Add(time.Duration(total.Seconds * float64(time.Second)))
	return b, &d
}

// baseSeedSettings are the seed runs' settings without the seed.
func baseSeedSettings(s *Settings, outputDir string) (SeedSettings, error) {
	c := s.Config
	c.OutputDir = outputDir
	c.Seeds, c.SeedsFile = nil, "" // each seed run gets its own seed
	models, err := c.ModelsDoc()
	if err != nil {
		return SeedSettings{}, err
	}
	var limits json.RawMessage
	if c.SeedLimits != (operations.RunLimits{}) {
		if limits, err = json.Marshal(c.SeedLimits); err != nil {
			return SeedSettings{}, err
		}
	}
	url := s.SandboxURL
	if url == "" {
		url = c.SandboxServerURL
	}
	return SeedSettings{Config: c, SandboxTools: s.SandboxTools, Models: models, SandboxURL: url, SandboxTokenEnv: s.SandboxTokenEnv, Limits: limits}, nil
}

// Collect records the lanes that failed and reads seeds_done.jsonl.
func Collect(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getRunState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	for _, r := range in.Results {
		var lr LaneResult
		sp := operations.Spawn.Result(r)
		switch {
		case r.Error != "":
			out.Append = append(out.Append, phases.MustEntry(EntryLaneFailed, SeedFailure{Lane: r.Meta["lane"], Error: r.Error}))
		case sp == nil:
		case len(sp.Result) > 0 && json.Unmarshal(sp.Result, &lr) == nil:
			for _, f := range lr.Failed {
				out.Append = append(out.Append, phases.MustEntry(EntryLaneFailed, f))
			}
			if sp.Status != "succeeded" && len(lr.Failed) == 0 {
				out.Append = append(out.Append, phases.MustEntry(EntryLaneFailed, SeedFailure{Lane: r.Meta["lane"], Error: sp.Error, Reason: sp.EndReason}))
			}
		default:
			out.Append = append(out.Append, phases.MustEntry(EntryLaneFailed, SeedFailure{Lane: r.Meta["lane"], Error: sp.Error, Reason: sp.EndReason}))
		}
	}
	out.Ops = []operations.Request{operations.NewReadFile(st.Files.Done)}
	out.Next = PhaseReport
	return out, nil
}

// Summary is summary.json and the synthesis run's result.
type Summary struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
	// SeedsTotal seeds were read; SeedsDone of them have their lines in
	// the output files (SeedsSkipped of them finished by an earlier run;
	// other seeds' lines there are not counted);
	// SeedsFailed did not finish (a re-run retries them).
	SeedsTotal   int           `json:"seeds_total"`
	SeedsDone    int           `json:"seeds_done"`
	SeedsSkipped int           `json:"seeds_skipped"`
	SeedsFailed  int           `json:"seeds_failed"`
	Failures     []SeedFailure `json:"failures,omitempty"`
	// Totals over the finished seeds.
	Stats
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Seconds    float64   `json:"seconds"`
	// Repaired lists output files from which lines of unfinished seeds (or
	// a torn last line) were dropped at start.
	Repaired []string    `json:"repaired,omitempty"`
	Files    outputFiles `json:"files"`
	// Limits is the synthesis's budget (the config's limits), when set;
	// seeds it left unstarted are failures with reason budget_spent.
	Limits *operations.RunLimits `json:"limits,omitempty"`
}

// Report sums seeds_done.jsonl into summary.json.
func Report(in phases.Input, s *Settings) (phases.Output, error) {
	st, err := getRunState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	if len(in.Results) != 1 {
		return phases.Output{}, fmt.Errorf("%w: report without the seeds_done read", ErrState)
	}
	r := in.Results[0]
	if r.Error != "" {
		return failed("seeds_done: " + r.Error)
	}
	sum := Summary{SchemaVersion: 1, RunID: in.Run.ID, SeedsTotal: st.Seeds, SeedsSkipped: st.Skipped,
		StartedAt: st.StartedAt, FinishedAt: in.Run.Now, Seconds: in.Run.Now.Sub(st.StartedAt).Seconds(),
		Repaired: st.Repaired, Files: st.Files}
	if l := s.Config.Limits; l != (operations.RunLimits{}) {
		sum.Limits = &l
	}
	// The run's own seeds: an output_dir may hold the lines of seeds of
	// other runs (another seeds file), which are not this run's to count.
	mine := map[string]bool{}
	for i := 0; i < in.State.Len(); i++ {
		e := in.State.Entry(i)
		switch e.Type {
		case EntryLaneFailed:
			var f SeedFailure
			if json.Unmarshal(e.Data, &f) == nil {
				sum.Failures = append(sum.Failures, f)
			}
		case EntryLane:
			var l Lane
			if json.Unmarshal(e.Data, &l) == nil {
				for _, sd := range l.Seeds {
					mine[sd.ID] = true
				}
			}
		case EntrySkipped:
			var sk Skipped
			if json.Unmarshal(e.Data, &sk) == nil {
				for _, id := range sk.Seeds {
					mine[id] = true
				}
			}
		}
	}
	seen := map[string]bool{}
	if exists(r) {
		for _, l := range strings.Split(operations.ReadFile.Result(r).Content, "\n") {
			var d DoneLine
			if l == "" || json.Unmarshal([]byte(l), &d) != nil || seen[d.SourceID] || !mine[d.SourceID] {
				continue
			}
			seen[d.SourceID] = true
			sum.SeedsDone++
			sum.Stats.add(d.Stats)
		}
	}
	sort.SliceStable(sum.Failures, func(i, j int) bool { return sum.Failures[i].SourceID < sum.Failures[j].SourceID })
	sum.SeedsFailed = len(sum.Failures)
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return phases.Output{}, err
	}
	out := phases.Output{Ops: []operations.Request{operations.NewWriteFile(st.Files.Summary, string(b)+"\n", false)}, Next: PhaseDone}
	return out, out.SetVar("summary", json.RawMessage(compact(b)))
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// Done ends the run with the summary as its result.
func Done(in phases.Input, s *Settings) (phases.Output, error) {
	for _, r := range in.Results {
		if r.Error != "" {
			return failed("summary: " + r.Error)
		}
	}
	res := in.State.Var("summary")
	var sum Summary
	if err := json.Unmarshal(res, &sum); err == nil {
		// A seed met a model failure that stopped the synthesis: the run
		// ends with it (summary written), as a rollout does; the seed run
		// that met it names it best, before the seeds it left unstarted.
		var fatal *SeedFailure
		for i, f := range sum.Failures {
			if operations.Code(f.Reason).Fatal() && (fatal == nil || fatal.RunID == "" && f.RunID != "") {
				fatal = &sum.Failures[i]
			}
		}
		if fatal != nil {
			return phases.Output{End: &phases.End{Failed: true, Reason: fatal.Reason, Error: fatal.Error, Result: res}}, nil
		}
	}
	return phases.Output{End: &phases.End{Reason: "synthesized", Result: res}}, nil
}

// exists reports whether r, a read_file result, read a file that exists.
func exists(r operations.Result) bool {
	f := operations.ReadFile.Result(r)
	return f != nil && f.Exists
}
