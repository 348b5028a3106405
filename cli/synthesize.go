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

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/configs/configfile"
	"github.com/flockrun/flock/phases/synthesis"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/state"
	synthcfg "github.com/flockrun/flock/synthesis/config"
	"github.com/flockrun/flock/workflows"
)

// synthesizeCmd runs `flock synthesize --config FILE`: an AgentFlow-style
// synthesis in-process, on an in-process sandbox (sandbox_config_path or
// --sandbox-config) or a remote one (sandbox_server_url), with a progress
// display. Run again after an interruption (even kill -9), the same
// command on the same --data resumes the unfinished synthesis where it
// was; with only the same output directory, it skips finished seeds. When
// a flock server holds the data directory, the synthesis is handed to it.
func synthesizeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("synthesize")
	cfg := configs.Server{Mode: "live"}
	var level logOpts
	var configPath, outputDir, sandboxConfig string
	var quiet, fresh bool
	var seeds, maxConc int
	fs.StringVar(&cfg.DataDir, "data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory; when a flock server holds it, the synthesis is handed to that server")
	modeFlags(fs, &cfg.Mode)
	logFlags(fs, &level, "warn")
	isolationFlag(fs, &cfg.Isolation)
	fs.StringVar(&configPath, "config", "", "synthesis config (JSON or YAML, AgentFlow's keys); relative paths in it are relative to the file")
	fs.StringVar(&outputDir, "output-dir", "", "override output_dir")
	fs.StringVar(&sandboxConfig, "sandbox-config", "", "sandbox-server config to host in-process (overrides sandbox_config_path)")
	fs.IntVar(&seeds, "number-of-seed", 0, "override number_of_seed")
	fs.IntVar(&maxConc, "max-concurrency", 0, "override max_concurrency")
	fs.BoolVar(&quiet, "quiet", false, "no progress; print only the summary")
	fs.BoolVar(&fresh, "new", false, "start a new synthesis run even when the unfinished run of this same command could be resumed")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if configPath == "" {
		return fmt.Errorf("%w: --config FILE is required (the synthesis config)", errUsage)
	}
	if err := noNegative(map[string]int{"number-of-seed": seeds, "max-concurrency": maxConc}); err != nil {
		return err
	}
	raw, err := readFlagFile("config", configPath)
	if err != nil {
		return err
	}
	doc, err := configfile.ToJSON(configPath, raw)
	if err != nil {
		return err
	}
	if doc, err = synthcfg.Expand(doc, os.LookupEnv); err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	var s map[string]any
	if err := json.Unmarshal(doc, &s); err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	found := takeLiteralKeys(s)
	if outputDir != "" {
		s["output_dir"] = outputDir
	}
	if seeds > 0 {
		s["number_of_seed"] = seeds
	}
	if maxConc > 0 {
		s["max_concurrency"] = maxConc
	}
	if sandboxConfig != "" {
		s["sandbox_config_path"] = sandboxConfig
	}
	base, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		return err
	}
	resolve := func(key, against string) string {
		p, _ := s[key].(string)
		if p != "" && !filepath.IsAbs(p) {
			p = filepath.Join(against, p)
			s[key] = p
		}
		return p
	}
	cwd, _ := os.Getwd()
	out := resolve("output_dir", map[bool]string{true: cwd, false: base}[outputDir != ""])
	seedsFile := resolve("seeds_file", base)
	sbConfig := resolve("sandbox_config_path", map[bool]string{true: cwd, false: base}[sandboxConfig != ""])
	settings, err := json.Marshal(s)
	if err != nil {
		return err
	}
	req := workflows.StartRequest{Workflow: synthesis.Name, Key: commandKey("synthesize", synthesis.Name, "", settings)}
	settings, keys := nameKeys(settings, req.Key, found)
	c, err := synthcfg.Parse(settings)
	if err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	req.Settings = settings
	if fresh {
		req.Key = ""
	}
	grants := &state.Grants{ReadRoots: []string{base}}
	if seedsFile != "" {
		if _, err := os.Stat(seedsFile); err != nil {
			return fmt.Errorf("%s: seeds_file: %w", configPath, err)
		}
		grants.ReadRoots = append(grants.ReadRoots, filepath.Dir(seedsFile))
	}
	grants.ReadRoots = dedupe(grants.ReadRoots)
	operatorGrants(&cfg, s, true)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("output_dir: %w", err)
	}
	grants.WriteRoots = []string{out}
	req.Grants = grants

	log, err := newLogger(stderr, level)
	if err != nil {
		return err
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Run in this process, the synthesis hosts the sandbox of
	// sandbox_config_path itself, unless sandbox_server_url names one.
	var sb *sandbox.Service
	defer func() {
		if sb != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = sb.Close(cctx)
		}
	}()
	needSandbox := c.SandboxServerURL == ""
	if needSandbox && sbConfig == "" {
		return fmt.Errorf("%s: no sandbox: set sandbox_server_url (a running sandbox) or sandbox_config_path (a sandbox-server config to host in-process), or pass --sandbox-config", configPath)
	}
	local := func() ([]app.Option, error) {
		if !needSandbox {
			return nil, nil
		}
		if sb, err = openSandbox(ctx, sbConfig, filepath.Join(cfg.DataDir, "sandbox"), log, cfg); err != nil {
			return nil, err
		}
		return []app.Option{app.WithSandbox(sb)}, nil
	}
	d, err := openDriverWith(ctx, "synthesize", cfg, flagSet(fs, "mode"), level, stderr, keys, local)
	if err != nil {
		return err
	}
	defer d.Close()
	warn := newNotices(stderr, level)
	if d.srv != nil && needSandbox {
		if !d.srv.info.Sandbox {
			return fmt.Errorf("the flock server at %s holds %s and hosts no sandbox, which this synthesis needs (it has no sandbox_server_url): "+
				"restart it with --sandbox-config %s, give sandbox_server_url (a running flock sandbox), or give another --data", d.srv.url, d.data, sbConfig)
		}
		warn.say(fmt.Sprintf("flock synthesize: the synthesis uses the sandbox service of the flock server at %s (not %s)", d.srv.url, sbConfig),
			"the synthesis uses the sandbox service of the flock server holding the data directory", "server", d.srv.url, "not", sbConfig)
	}
	h, warnings, resumed, err := d.launch(ctx, req)
	if err != nil {
		return err
	}
	id := h.ID
	if line := d.othersLine(ctx, id); line != "" {
		warn.say(line, line)
	}
	if resumed {
		fmt.Fprintf(stdout, "synthesis %s: resuming the unfinished run for %s\n", id, out)
	} else {
		warn.warn("flock synthesize", warnings)
		if !quiet {
			fmt.Fprintf(stdout, "synthesis %s: data %s, output %s\n", id, d.dataDir(), out)
		}
	}
	p := &synthProgress{w: stdout, store: d.reader(), id: id, out: out, tty: isTerminal(stdout), start: time.Now()}
	waitCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if quiet {
			return
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-waitCtx.Done():
				return
			case <-t.C:
				p.tick(waitCtx)
			}
		}
	}()
	end, err := d.wait(ctx, id)
	stop()
	<-done
	if err != nil {
		if ctx.Err() != nil {
			return d.interrupted(id, err)
		}
		return err
	}
	if !quiet {
		p.tick(ctx)
		p.finish()
	}
	printSynthesisSummary(stdout, end)
	if end.Status != state.StatusSucceeded {
		return errRunFailed
	}
	return nil
}

// synthProgress shows seeds done, nodes, QA kept, tokens and an ETA: a
// status line redrawn on a terminal, a plain line whenever the numbers
// change otherwise (at most every 10 s while only nodes grow).
type synthProgress struct {
	w     io.Writer
	store runReader
	id    string
	out   string
	tty   bool
	start time.Time
	last  string
	lastT time.Time
	// seedsDone is the seeds done when the last line was printed.
	seedsDone int
	drawn     bool
}

func (p *synthProgress) tick(ctx context.Context) {
	head, err := p.store.Run(ctx, p.id)
	if err != nil {
		return
	}
	var st struct {
		Seeds   int `json:"seeds"`
		Skipped int `json:"skipped"`
		Planned int `json:"planned"`
	}
	_ = json.Unmarshal(head.Vars["synthesis"], &st)
	var total synthesis.Stats
	done := 0
	if b, err := os.ReadFile(filepath.Join(p.out, synthesis.FileDone)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var d synthesis.DoneLine
			if l != "" && json.Unmarshal([]byte(l), &d) == nil {
				total.Nodes += d.Nodes
				total.QAKept += d.QAKept
				total.Tokens += d.Tokens
				done++
			}
		}
	}
	// Seeds in flight: the running seed runs below the lanes.
	lanes, _ := p.store.Children(ctx, p.id)
	for _, l := range lanes {
		seeds, _ := p.store.Children(ctx, l)
		for _, sid := range seeds {
			r, err := p.store.Run(ctx, sid)
			if err != nil || r.Status != state.StatusRunning {
				continue
			}
			var ss struct {
				Stats synthesis.Stats `json:"stats"`
			}
			if json.Unmarshal(r.Vars["seed"], &ss) == nil {
				total.Nodes += ss.Stats.Nodes
				total.QAKept += ss.Stats.QAKept
				total.Tokens += ss.Stats.Tokens
			}
		}
	}
	elapsed := time.Since(p.start)
	ran := done - st.Skipped
	eta := "-"
	if ran > 0 && st.Planned > ran {
		eta = (time.Duration(float64(elapsed) / float64(ran) * float64(st.Planned-ran))).Round(time.Second).String()
	} else if st.Planned > 0 && ran >= st.Planned {
		eta = "0s"
	}
	line := fmt.Sprintf("seeds %d/%d · nodes %d · QA kept %d · tokens %d · %s elapsed · ETA %s",
		done, st.Seeds, total.Nodes, total.QAKept, total.Tokens, elapsed.Round(time.Second), eta)
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
		return
	}
	key := fmt.Sprintf("%d/%d %d %d", done, st.Seeds, total.Nodes, total.QAKept)
	if key != p.last && (done != p.seedsDone || time.Since(p.lastT) >= 10*time.Second) {
		fmt.Fprintln(p.w, line)
		p.last, p.lastT, p.seedsDone = key, time.Now(), done
	}
}

func (p *synthProgress) finish() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// printSynthesisSummary prints the run's summary.
func printSynthesisSummary(w io.Writer, end state.Run) {
	var s synthesis.Summary
	if len(end.Result) == 0 || json.Unmarshal(end.Result, &s) != nil {
		fmt.Fprintf(w, "synthesis %s: %s %s %s\n", end.ID, end.Status, end.EndReason, end.Error)
		return
	}
	fmt.Fprintf(w, "synthesis %s: %s\n", end.ID, end.Status)
	fmt.Fprintf(w, "  seeds       %d done (%d skipped as done before), %d failed, of %d\n", s.SeedsDone, s.SeedsSkipped, s.SeedsFailed, s.SeedsTotal)
	fmt.Fprintf(w, "  tree nodes  %d (%d model calls, %d tool calls, %d duplicates re-asked)\n", s.Nodes, s.ModelCalls, s.ToolCalls, s.Duplicates)
	fmt.Fprintf(w, "  paths       %d selected\n", s.Selected)
	rej := 0
	var parts []string
	for k, v := range s.QARejected {
		rej += v
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	fmt.Fprintf(w, "  QA          %d kept, %d rejected", s.QAKept, rej)
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  tokens      %d (cost $%.4f)\n", s.Tokens, s.Cost)
	fmt.Fprintf(w, "  output      %s\n", filepath.Dir(s.Files.QA))
	for _, f := range s.Failures {
		fmt.Fprintf(w, "  failed      %s %s %s\n", f.SourceID, f.Reason, f.Error)
	}
}
