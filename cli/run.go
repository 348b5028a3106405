package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
	"golang.org/x/term"
)

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run")
	cfg := configs.Server{Mode: "live"}
	var level logOpts
	var wf, settingsPath, taskText, resume string
	var quiet, fresh bool
	fs.StringVar(&cfg.DataDir, "data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory; when a flock server holds it, the run is handed to that server")
	modeFlags(fs, &cfg.Mode)
	fs.Var((*stringList)(&cfg.PluginDirs), "plugins", "directory of Go phase plugins (*.so); repeatable")
	fs.Var((*stringList)(&cfg.WorkflowDirs), "workflows", "directory of YAML/JSON workflow files; repeatable")
	logFlags(fs, &level, "warn")
	fs.BoolVar(&cfg.NewStore, "new-store", false, "start even though flock.db is missing or empty while the data directory holds run directories")
	isolationFlag(fs, &cfg.Isolation)
	fs.StringVar(&wf, "workflow", "", "workflow to run (default: the settings' workflow_type)")
	fs.StringVar(&settingsPath, "settings", "", "settings file (JSON or YAML); the system_prompt_file, script and data_path it names are relative to it, and the run may read them; API keys written in it (models.NAME.api_key) are kept in memory only")
	fs.StringVar(&taskText, "task", "", "task text")
	fs.BoolVar(&quiet, "quiet", false, "print only the result")
	fs.StringVar(&resume, "resume", "", "follow an existing run of the data directory to its end instead of starting one (an interrupted run resumes where it stopped; a paused one is resumed)")
	fs.BoolVar(&fresh, "new", false, "start a new run even when the unfinished run of this same command could be resumed")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if resume != "" && (settingsPath != "" || wf != "" || taskText != "" || fresh) {
		return fmt.Errorf("%w: --resume takes no --workflow, --settings, --task or --new", errUsage)
	}
	if resume == "" && settingsPath == "" && wf == "" {
		return fmt.Errorf("%w: --workflow or --settings is required", errUsage)
	}
	var req workflows.StartRequest
	var keys map[string]string
	if resume == "" {
		var err error
		if req, keys, err = startRequest("run", wf, settingsPath, taskText); err != nil {
			return err
		}
		grantSettings(&cfg, req.Settings, true)
		if fresh {
			req.Key = ""
		}
	}
	d, err := openDriver(ctx, "run", cfg, flagSet(fs, "mode"), level, stderr, keys)
	if err != nil {
		return err
	}
	defer d.Close()
	var h state.Run
	resumed := false
	warn := newNotices(stderr, level)
	if resume != "" {
		if h, err = d.resume(ctx, resume); err != nil {
			return err
		}
	} else {
		var warnings []string
		if h, warnings, resumed, err = d.launch(ctx, req); err != nil {
			return err
		}
		warn.warn("flock run", warnings)
	}
	if line := d.othersLine(ctx, h.ID); line != "" {
		warn.say(line, line)
	}
	var p *progress
	if !quiet {
		p = newProgress(stdout, d.reader(), h.ID, isTerminal(stdout))
		fmt.Fprintf(stdout, "run %s: workflow %s, data %s\n", h.ID, h.Workflow, d.dataDir())
		if resumed {
			fmt.Fprintf(stdout, "run %s: resuming the unfinished run of this command, started %s (--new starts another)\n", h.ID, h.CreatedAt.Local().Format(time.DateTime))
		}
	}
	end, err := d.follow(ctx, h.ID, p)
	if err != nil {
		if ctx.Err() != nil {
			return d.interrupted(h.ID, err)
		}
		return err
	}
	printResult(stdout, end)
	if end.Status != state.StatusSucceeded {
		return errRunFailed
	}
	return nil
}

func printResult(w io.Writer, h state.Run) {
	fmt.Fprintf(w, "\nrun %s %s", h.ID, h.Status)
	if h.EndReason != "" {
		fmt.Fprintf(w, " (%s)", h.EndReason)
	}
	fmt.Fprintf(w, " after %.2fs: %d tokens, %d actions, $%.4f\n", h.Usage.Seconds, h.Usage.Tokens, h.Usage.Actions, h.Usage.Cost)
	if h.Error != "" {
		fmt.Fprintf(w, "error: %s\n", h.Error)
	}
	if len(h.Result) > 0 {
		var s string
		if json.Unmarshal(h.Result, &s) == nil {
			fmt.Fprintf(w, "result: %s\n", s)
		} else {
			fmt.Fprintf(w, "result: %s\n", h.Result)
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// openApp opens an App for an in-process command and returns the function
// that closes it, reporting a close error on stderr.
func openApp(ctx context.Context, cfg configs.Server, level logOpts, stderr io.Writer, cmd string, opts ...app.Option) (*app.App, func(), error) {
	log, err := newLogger(stderr, level)
	if err != nil {
		return nil, nil, err
	}
	a, err := app.Open(ctx, cfg, log, opts...)
	if err != nil {
		return nil, nil, err
	}
	return a, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Close(cctx); err != nil {
			fmt.Fprintf(stderr, "flock %s: close: %v\n", cmd, err)
		}
	}, nil
}

// printWarnings writes a run's settings warnings to w, one a line, before
// any progress: they never stop the run, but a typo in a key should not
// pass unseen.
func printWarnings(w io.Writer, cmd string, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintf(w, "%s: warning: %s\n", cmd, m)
	}
}
