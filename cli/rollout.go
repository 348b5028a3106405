package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flockrun/flock/cli/rolloutview"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/rollout"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// rolloutCmd runs `flock rollout --config FILE`: a rollout in-process with
// a progress bar and a summary table at the end.
func rolloutCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rollout")
	cfg := configs.Server{Mode: "live"}
	var level logOpts
	var configPath, outputDir, metric, question string
	var taskIDs stringList
	var maxTasks, numChains, maxConc int
	var quiet, regrade, fresh bool
	fs.StringVar(&cfg.DataDir, "data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory; when a flock server holds it, the rollout is handed to that server")
	modeFlags(fs, &cfg.Mode)
	fs.Var((*stringList)(&cfg.PluginDirs), "plugins", "directory of Go phase plugins (*.so); repeatable")
	fs.Var((*stringList)(&cfg.WorkflowDirs), "workflows", "directory of YAML/JSON workflow files; repeatable")
	logFlags(fs, &level, "warn")
	isolationFlag(fs, &cfg.Isolation)
	fs.StringVar(&configPath, "config", "", "rollout settings file (JSON or YAML); relative paths in it are relative to the file, and the runs may read the files it names and write the output directory; API keys written in it (api_key, evaluator_api_key, models.NAME.api_key) are kept in memory only")
	fs.StringVar(&outputDir, "output-dir", "", "override output_dir")
	fs.StringVar(&metric, "metric", "", "override evaluation_metric")
	fs.Var(&taskIDs, "task-ids", "override task_ids (comma-separated, repeatable)")
	fs.IntVar(&maxTasks, "max-tasks", 0, "override max_tasks")
	fs.IntVar(&numChains, "num-chains", 0, "override num_chains")
	fs.IntVar(&maxConc, "max-concurrency", 0, "override max_concurrency")
	fs.BoolVar(&quiet, "quiet", false, "no progress bar; print only the summary")
	fs.StringVar(&question, "question", "", "run this one question instead of the benchmark (AgentFlow's quick mode) and print the answer")
	fs.BoolVar(&regrade, "regrade", false, "re-grade the saved answers in the output directory with the current metric, judge and verifiers; run no agent")
	fs.BoolVar(&fresh, "new", false, "start a new rollout run even when the unfinished run of this same command could be resumed")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if configPath == "" {
		return fmt.Errorf("%w: --config FILE is required (the rollout settings)", errUsage)
	}
	if err := noNegative(map[string]int{"max-tasks": maxTasks, "num-chains": numChains, "max-concurrency": maxConc}); err != nil {
		return err
	}
	raw, err := decodeConfig("config", configPath)
	if err != nil {
		return err
	}
	s, ok := raw.(map[string]any)
	if !ok || s == nil {
		return fmt.Errorf("%s: must be an object of rollout settings", configPath)
	}
	found := takeLiteralKeys(s)
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
	// output directory: the run may read the former and write the latter.
	grants := &state.Grants{ReadRoots: []string{base}}
	for _, f := range localFiles(s, base) {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w", configPath, err)
		}
		grants.ReadRoots = append(grants.ReadRoots, filepath.Dir(f))
	}
	grants.ReadRoots = dedupe(grants.ReadRoots)
	operatorGrants(&cfg, s, true)
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return fmt.Errorf("output_dir: %w", err)
		}
		if out, err = filepath.Abs(out); err != nil {
			return err
		}
		grants.WriteRoots = []string{out}
	}
	settings, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := strictKeys(configPath, settings); err != nil {
		return err
	}
	req := workflows.StartRequest{Workflow: rollout.Name, Grants: grants, Key: commandKey("rollout", rollout.Name, "", settings)}
	settings, keys := nameKeys(settings, req.Key, found)
	req.Settings = settings
	if fresh {
		req.Key = ""
	}
	d, err := openDriver(ctx, "rollout", cfg, flagSet(fs, "mode"), level, stderr, keys)
	if err != nil {
		return err
	}
	defer d.Close()
	h, warnings, resumed, err := d.launch(ctx, req)
	if err != nil {
		return err
	}
	warn := newNotices(stderr, level)
	warn.warn("flock rollout", warnings)
	if line := d.othersLine(ctx, h.ID); line != "" {
		warn.say(line, line)
	}
	if !quiet {
		fmt.Fprintf(stdout, "rollout %s: data %s\n", h.ID, d.dataDir())
		if resumed {
			fmt.Fprintf(stdout, "rollout %s: resuming the unfinished rollout of this command, started %s (--new starts another)\n", h.ID, h.CreatedAt.Local().Format(time.DateTime))
		}
	}
	end, err := rolloutview.New(d.reader(), h.ID, stdout, isTerminal(stdout), quiet).Follow(ctx, d.wait)
	if err != nil {
		if ctx.Err() != nil {
			return d.interrupted(h.ID, err)
		}
		return err
	}
	rolloutview.PrintSummary(stdout, end)
	if question != "" {
		rolloutview.PrintAnswers(stdout, end)
	}
	if end.Status != state.StatusSucceeded {
		return errRunFailed
	}
	return nil
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
