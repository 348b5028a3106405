package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/rollout"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
	"github.com/schollz/progressbar/v3"
)

// rolloutCmd runs `flock rollout --config FILE`: a rollout in-process with
// a progress bar and a summary table at the end.
func rolloutCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rollout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg configs.Server
	var level, configPath, outputDir, metric, question string
	var taskIDs stringList
	var maxTasks, numChains, maxConc int
	var quiet, regrade bool
	fs.StringVar(&cfg.DataDir, "data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory")
	fs.StringVar(&cfg.Mode, "mode", "live", "live, or simulated (every generate uses the built-in simulated model)")
	fs.Var((*stringList)(&cfg.PluginDirs), "plugins", "directory of Go phase plugins (*.so); repeatable")
	fs.Var((*stringList)(&cfg.WorkflowDirs), "workflows", "directory of YAML/JSON workflow files; repeatable")
	fs.StringVar(&level, "log-level", "warn", "debug, info, warn or error")
	fs.StringVar(&configPath, "config", "", "rollout settings file (JSON or YAML); relative paths in it are relative to the file, and the runs may read the files it names and write the output directory")
	fs.StringVar(&outputDir, "output-dir", "", "override output_dir")
	fs.StringVar(&metric, "metric", "", "override evaluation_metric")
	fs.Var(&taskIDs, "task-ids", "override task_ids (comma-separated, repeatable)")
	fs.IntVar(&maxTasks, "max-tasks", 0, "override max_tasks")
	fs.IntVar(&numChains, "num-chains", 0, "override num_chains")
	fs.IntVar(&maxConc, "max-concurrency", 0, "override max_concurrency")
	fs.BoolVar(&quiet, "quiet", false, "no progress bar; print only the summary")
	fs.StringVar(&question, "question", "", "run this one question instead of the benchmark (AgentFlow's quick mode) and print the answer")
	fs.BoolVar(&regrade, "regrade", false, "re-grade the saved answers in the output directory with the current metric, judge and verifiers; run no agent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if configPath == "" {
		return fmt.Errorf("%w: --config is required", errUsage)
	}
	doc, err := configs.LoadSettingsFile(configPath)
	if err != nil {
		return err
	}
	var s map[string]any
	if err := json.Unmarshal(doc, &s); err != nil || s == nil {
		return fmt.Errorf("%s: must be an object of rollout settings", configPath)
	}
	set := func(k string, v any, ok bool) {
		if ok {
			s[k] = v
		}
	}
	set("output_dir", outputDir, outputDir != "")
	set("evaluation_metric", metric, metric != "")
	set("task_ids", []string(taskIDs), len(taskIDs) > 0)
	set("max_tasks", maxTasks, maxTasks > 0)
	set("num_chains", numChains, numChains > 0)
	set("max_concurrency", maxConc, maxConc > 0)
	set("regrade", true, regrade)
	if question != "" {
		// One question, not the benchmark: its own file names, no resume.
		for _, k := range []string{"data_path", "task_ids", "benchmark_name"} {
			delete(s, k)
		}
		s["question"], s["resume"] = question, false
	}
	if _, ok := s["output_dir"]; !ok {
		s["output_dir"] = "results"
	}
	base, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		return err
	}
	out := resolvePaths(s, base, outputDir)
	// The person at the terminal handed over these files and named the
	// output directory: the in-process server may read the former and
	// write the latter.
	cfg.ReadRoots = append(cfg.ReadRoots, base)
	for _, f := range localFiles(s, base) {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w", configPath, err)
		}
		cfg.ReadRoots = append(cfg.ReadRoots, filepath.Dir(f))
	}
	cfg.ReadRoots = dedupe(cfg.ReadRoots)
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return fmt.Errorf("output_dir: %w", err)
		}
		cfg.WriteRoots = append(cfg.WriteRoots, out)
	}
	settings, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := strictKeys(configPath, settings); err != nil {
		return err
	}
	a, closeApp, err := openApp(ctx, cfg, level, stderr, "rollout")
	if err != nil {
		return err
	}
	defer closeApp()
	h, warnings, err := a.Executor.StartRunWithWarnings(ctx, workflows.StartRequest{Workflow: rollout.Name, Settings: settings})
	if err != nil {
		return err
	}
	printWarnings(stderr, "flock rollout", warnings)
	if !quiet {
		fmt.Fprintf(stdout, "rollout %s: data %s\n", h.ID, a.Config.DataDir)
	}
	w := &rolloutWatch{store: a.Store, id: h.ID, out: stdout, tty: isTerminal(stdout), quiet: quiet, lanes: map[string]uint64{}}
	end, err := w.follow(ctx, a)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "flock rollout: interrupted; run %s stays resumable (flock serve --data %s resumes it; or run the same config again)\n", h.ID, a.Config.DataDir)
		}
		return err
	}
	printRolloutSummary(stdout, end)
	if question != "" {
		printAnswers(stdout, end)
	}
	if end.Status != state.StatusSucceeded {
		return errRunFailed
	}
	return nil
}

// printAnswers prints the answers of a rollout's results file.
func printAnswers(w io.Writer, h state.Run) {
	var s rollout.Summary
	if json.Unmarshal(h.Result, &s) != nil || s.Results == "" {
		return
	}
	b, err := os.ReadFile(s.Results)
	if err != nil {
		fmt.Fprintf(w, "answer: (results unreadable: %v)\n", err)
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		var r rollout.Row
		if json.Unmarshal([]byte(line), &r) != nil || r.TaskID == "" {
			continue
		}
		if !r.Success {
			fmt.Fprintf(w, "answer: (agent %s: %s)\n", r.EndReason, r.Error)
			continue
		}
		fmt.Fprintf(w, "answer: %s\n", r.PredictedAnswer)
	}
}

// resolvePaths makes output_dir absolute against base (the config file's
// directory), or against the working directory when given on the command
// line, and returns it (empty when it is not a string). The files the
// config reads are resolved by localFiles.
func resolvePaths(s map[string]any, base, outputFlag string) string {
	if outputFlag != "" {
		if p, err := filepath.Abs(outputFlag); err == nil {
			s["output_dir"] = p
		}
	} else if p, ok := s["output_dir"].(string); ok && p != "" && !filepath.IsAbs(p) {
		s["output_dir"] = filepath.Join(base, p)
	}
	p, _ := s["output_dir"].(string)
	return p
}

// rolloutWatch follows a rollout: it reads the rollout's plan from its
// vars and the rows its lanes append, and draws a progress bar.
type rolloutWatch struct {
	store state.Reader
	id    string
	out   io.Writer
	tty   bool
	quiet bool
	bar   *progressbar.ProgressBar
	// lanes maps a lane run id to the last entry seq read.
	lanes        map[string]uint64
	total, done  int
	correct      int
	graded       int
	tokens       int
	lastPrinted  int
	planReported bool
}

func (w *rolloutWatch) follow(ctx context.Context, a *app.App) (state.Run, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	ended := make(chan state.Run, 1)
	errc := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		h, err := a.Executor.Wait(wctx, w.id)
		if err != nil {
			errc <- err
			return
		}
		ended <- h
	}()
	for {
		select {
		case <-ctx.Done():
			return state.Run{}, ctx.Err()
		case err := <-errc:
			return state.Run{}, err
		case h := <-ended:
			w.poll(ctx)
			w.finish()
			return h, nil
		case <-tick.C:
			w.poll(ctx)
		}
	}
}

// poll reads new rows of every lane and updates the bar.
func (w *rolloutWatch) poll(ctx context.Context) {
	if w.quiet {
		return
	}
	if w.total == 0 {
		h, err := w.store.Run(ctx, w.id)
		if err != nil {
			return
		}
		var st struct {
			Planned  int    `json:"planned"`
			Previous int    `json:"previous"`
			Samples  int    `json:"samples"`
			Regrade  int    `json:"regrade"`
			Notice   string `json:"notice"`
			PlanMade bool   `json:"plan_made"`
		}
		if raw := h.Vars["rollout"]; raw == nil || json.Unmarshal(raw, &st) != nil || st.Samples == 0 {
			return
		}
		if !st.PlanMade {
			return // not planned yet
		}
		w.total = max(st.Planned, 1)
		if !w.planReported {
			w.planReported = true
			fmt.Fprintf(w.out, "%d samples to run, re-grade %d (%d finished earlier)\n", st.Planned-st.Regrade, st.Regrade, st.Previous)
			if st.Notice != "" {
				fmt.Fprintf(w.out, "note: %s\n", st.Notice)
			}
		}
		if w.tty {
			w.bar = progressbar.NewOptions(w.total, progressbar.OptionSetWriter(w.out), progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetDescription("rollout"), progressbar.OptionShowElapsedTimeOnFinish())
		}
	}
	lanes, err := w.store.Children(ctx, w.id)
	if err != nil {
		return
	}
	for _, id := range lanes {
		for {
			es, err := w.store.Entries(ctx, id, w.lanes[id], 1000)
			if err != nil || len(es) == 0 {
				break
			}
			for _, e := range es {
				w.lanes[id] = e.Seq
				if e.Type != rollout.EntryRow {
					continue
				}
				var r rollout.Row
				if json.Unmarshal(e.Data, &r) != nil {
					continue
				}
				w.done++
				w.tokens += r.Tokens
				if r.Evaluated || !r.Success {
					w.graded++
					if r.Correct {
						w.correct++
					}
				}
			}
			if len(es) < 1000 {
				break
			}
		}
	}
	desc := fmt.Sprintf("correct %d of %d graded · %s tokens", w.correct, w.graded, humanInt(w.tokens))
	if w.bar != nil {
		w.bar.Describe(desc)
		_ = w.bar.Set(min(w.done, w.total))
		return
	}
	if w.total > 0 && (w.done-w.lastPrinted)*10 >= w.total {
		w.lastPrinted = w.done
		fmt.Fprintf(w.out, "%d/%d samples · %s\n", w.done, w.total, desc)
	}
}

func (w *rolloutWatch) finish() {
	if w.bar != nil {
		_ = w.bar.Finish()
		fmt.Fprintln(w.out)
	}
}

func humanInt(n int) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.Itoa(n)
}

// printRolloutSummary prints the rollout's end and its summary as a table.
func printRolloutSummary(w io.Writer, h state.Run) {
	fmt.Fprintf(w, "\nrollout %s %s", h.ID, h.Status)
	if h.EndReason != "" {
		fmt.Fprintf(w, " (%s)", h.EndReason)
	}
	fmt.Fprintln(w)
	if h.Error != "" && h.Error != h.EndReason {
		fmt.Fprintf(w, "error: %s\n", h.Error)
	}
	var s rollout.Summary
	if len(h.Result) == 0 || json.Unmarshal(h.Result, &s) != nil || s.BenchmarkName == "" {
		return
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(t, "%s\t%s\n", k, v) }
	row("benchmark", fmt.Sprintf("%s (%s, agent %s)", s.BenchmarkName, s.Timestamp, s.AgentWorkflow))
	row("samples", fmt.Sprintf("%d of %d (%d tasks × %d chains)", s.FinishedSamples, s.TotalSamples, s.TotalTasks, s.NumChains))
	row("metric", s.Metric)
	row("mean score", fmt.Sprintf("%.4f (failures count 0)", s.MeanScore))
	row("correct", fmt.Sprintf("%d of %d graded", s.Correct, s.Samples))
	row("success rate", fmt.Sprintf("%.4f (%d agent runs failed)", s.SuccessRate, s.Failed))
	if len(s.FailedBy) > 0 {
		codes := make([]string, 0, len(s.FailedBy))
		for c, n := range s.FailedBy {
			codes = append(codes, fmt.Sprintf("%s %d", c, n))
		}
		sort.Strings(codes)
		row("failed by", strings.Join(codes, ", "))
	}
	for k, v := range s.PassAtK {
		row(fmt.Sprintf("pass@%d", k+1), fmt.Sprintf("%.4f", v))
	}
	sorted := func(m map[string]float64) []string {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		return names
	}
	for _, n := range sorted(s.ScoreMeans) {
		label := "score " + n
		if n == s.Primary {
			label += " (primary)"
		}
		row(label, fmt.Sprintf("%.4f", s.ScoreMeans[n]))
	}
	for _, n := range sorted(s.Reduced) {
		row("reduced "+n, fmt.Sprintf("%.4f", s.Reduced[n]))
	}
	if len(s.SignalMeans) > 0 {
		names := make([]string, 0, len(s.SignalMeans))
		for n := range s.SignalMeans {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			row("signal "+n, fmt.Sprintf("%.4f", s.SignalMeans[n]))
		}
	}
	if s.NotEvaluated > 0 {
		row("not graded", strconv.Itoa(s.NotEvaluated))
	}
	if s.Notice != "" {
		row("note", s.Notice)
	}
	if len(s.Errors) > 0 {
		kinds := make([]string, 0, len(s.Errors))
		for k, n := range s.Errors {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		row("errors", strings.Join(kinds, ", "))
	}
	row("tokens", fmt.Sprintf("%d ($%.4f)", s.Tokens, s.Cost))
	row("time", fmt.Sprintf("%.1fs (mean agent %.2fs)", s.TotalTimeSeconds, s.MeanAgentSeconds))
	row("results", s.Results)
	row("summary", s.Files.Summary)
	if s.Episodes != "" {
		row("episodes", s.Episodes)
	}
	if s.Groups != "" {
		row("groups", s.Groups)
	}
	_ = t.Flush()
}

// strictKeys refuses a rollout config with a key that neither flock nor
// AgentFlow knows, naming it (and the closest known key). A config file is
// read by the person who wrote it at the terminal, so a typo there is an
// error, where a run's settings sent over HTTP only warn. Flock keys that
// flock does not use stay warnings.
func strictKeys(configPath string, settings []byte) error {
	wf, ok := phases.Default.Lookup(rollout.Name)
	if !ok {
		return nil
	}
	var unknown []string
	for _, w := range configs.SettingsWarnings(settings, rollout.Name, wf.Settings) {
		if k, ok := strings.CutPrefix(w, "unknown settings key "); ok {
			unknown = append(unknown, "unknown key "+k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", configPath, strings.Join(unknown, "; "))
}
