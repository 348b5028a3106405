package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// driver is where the run of flock run, rollout or synthesize is driven:
// in this process, on the data directory it opened (a), or by the flock
// server that holds the data directory, to which the command hands its
// run (srv). Either way the command shows the same progress, result and
// exit code.
type driver struct {
	cmd    string // the command, for messages: "run", "rollout", "synthesize"
	data   string // the data directory, as given
	stderr io.Writer
	a      *app.App
	close  func()
	srv    *handle
	// keys are the API keys the command's config gave literally, by their
	// keyring names (handed over with the run).
	keys map[string]string
}

// openDriver finds the flock server that holds cfg.DataDir (its server
// file names one that answers) or, when none does, opens the data
// directory in this process, resuming no run (the command drives only its
// own). keys are put into the process's key ring. A data directory that
// another process holds without a server (another flock run) is an error
// saying so. modeSet says --mode was given: a server running in another
// mode is then refused rather than used.
func openDriver(ctx context.Context, cmd string, cfg configs.Server, modeSet bool, level logOpts, stderr io.Writer, keys map[string]string) (*driver, error) {
	return openDriverWith(ctx, cmd, cfg, modeSet, level, stderr, keys, nil)
}

// openDriverWith is openDriver; local, if set, is called before the data
// directory is opened in this process (never when a server takes the run)
// and returns more options for the App.
func openDriverWith(ctx context.Context, cmd string, cfg configs.Server, modeSet bool, level logOpts, stderr io.Writer, keys map[string]string,
	local func() ([]app.Option, error)) (*driver, error) {
	d := &driver{cmd: cmd, data: cfg.DataDir, stderr: stderr, keys: keys}
	h, err := findServer(ctx, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if h == nil {
		var opts []app.Option
		if local != nil {
			if opts, err = local(); err != nil {
				return nil, err
			}
		}
		opts = append(opts, app.WithoutResume(), app.WithKeys(keys))
		a, closeApp, err := openApp(ctx, cfg, level, stderr, cmd, opts...)
		if err == nil {
			// This process holds the directory: a server file left by a
			// server killed without its shutdown is stale.
			removeStaleServerFile(cfg.DataDir)
			d.a, d.close = a, closeApp
			return d, nil
		}
		if !errors.Is(err, state.ErrInUse) {
			return nil, err
		}
		// A server may have come up meanwhile and written its file.
		if h, _ = findServer(ctx, cfg.DataDir); h == nil {
			return nil, fmt.Errorf("%w; no flock server holding it answers (no live %s): another flock run, rollout or synthesize uses it, so wait for it to end or give another --data",
				err, filepath.Join(cfg.DataDir, serverFileName))
		}
	}
	if modeSet && h.info.Mode != "" && h.info.Mode != cfg.Mode {
		return nil, fmt.Errorf("the flock server at %s holds %s in mode %s, and this command asks for --mode %s: stop that server, drop --mode, or give another --data",
			h.url, cfg.DataDir, h.info.Mode, cfg.Mode)
	}
	d.srv, d.close = h, func() {}
	return d, nil
}

// Close closes the in-process App (a server is left as it is).
func (d *driver) Close() { d.close() }

// reader reads the runs the command shows.
func (d *driver) reader() runReader {
	if d.a != nil {
		return d.a.Store
	}
	return remote{d.srv.c}
}

// dataDir names the data directory in messages (the server's, absolute).
func (d *driver) dataDir() string {
	if d.a != nil {
		return d.a.Config.DataDir
	}
	return d.data
}

// launch starts the command's run, or resumes the unfinished run of the
// same command (req.Key) instead.
func (d *driver) launch(ctx context.Context, req workflows.StartRequest) (state.Run, []string, bool, error) {
	if d.a != nil {
		h, warnings, resumed, err := d.a.Executor.Launch(ctx, req)
		if errors.Is(err, workflows.ErrUnknownWorkflow) {
			err = unknownWorkflow(requestedWorkflow(req), graphNames(d.a.Executor.Workflows()))
		}
		return h, warnings, resumed, err
	}
	// The server would refuse an unknown workflow too; asked first, it
	// gives the names to find the closest among, as in-process.
	if name := requestedWorkflow(req); name != "" {
		if list, err := d.srv.c.Workflows(ctx); err == nil {
			names := make([]string, 0, len(list))
			for _, g := range list {
				names = append(names, g.Name)
			}
			if !slices.Contains(names, name) {
				return state.Run{}, nil, false, unknownWorkflow(name, names)
			}
		}
	}
	h := api.Handover{Workflow: req.Workflow, Settings: req.Settings, Task: req.Task, Key: req.Key, Keys: d.keys}
	if g := req.Grants; g != nil {
		h.ReadRoots, h.WriteRoots = g.ReadRoots, g.WriteRoots
	}
	// Ctrl-C during the hand-over must not lose the run: once the server
	// took the request it drives the run, so the request and the head
	// read are finished, and the caller, finding ctx done, pauses it
	// (interrupted) like a run it follows.
	hctx, cancel := handoverContext(ctx)
	defer cancel()
	st, err := d.srv.c.Handover(hctx, h)
	if err != nil {
		return state.Run{}, nil, false, d.refused(err)
	}
	d.announce(st.RunID)
	head, err := d.reader().Run(hctx, st.RunID)
	return head, st.Warnings, st.Resumed, err
}

// missingEnv finds the variable a server's refusal says is not set (a
// model's api_key_env, handlers/generate).
var missingEnv = regexp.MustCompile(`environment variable ([A-Za-z_][A-Za-z0-9_]*) is not set`)

// refused words a hand-over the server refused (400): the server, not
// this process, checked the run, so the refusal says which server, and a
// variable it lacks that is set here is named as the server's to set.
func (d *driver) refused(err error) error {
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest {
		return err
	}
	hint := ""
	if m := missingEnv.FindStringSubmatch(ce.Message); m != nil && os.Getenv(m[1]) != "" {
		hint = fmt.Sprintf(" (%s is set here, but the server reads its own environment: set it where the server runs, or stop the server and this command runs the run itself)", m[1])
	}
	return fmt.Errorf("the flock server at %s (pid %d) that holds %s refused the run: %w%s", d.srv.url, d.srv.info.PID, d.data, err, hint)
}

// handoverTimeout bounds a hand-over request and the head read after it
// once they no longer end with the command's context.
const handoverTimeout = 2 * time.Minute

// handoverContext is ctx without its cancellation (Ctrl-C), bounded by
// handoverTimeout: the context of a request that makes the server drive
// a run, whose answer (the run's id) the command needs to pause it.
func handoverContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), handoverTimeout)
}

// resume resumes run id and its unfinished descendants (flock run
// --resume) and returns its head.
func (d *driver) resume(ctx context.Context, id string) (state.Run, error) {
	if d.a != nil {
		if err := d.a.Executor.ResumeTree(ctx, id); err != nil && !errors.Is(err, workflows.ErrEnded) {
			return state.Run{}, runNotFound(err, id, d.dataDir())
		}
		return d.a.Store.Run(ctx, id)
	}
	// As for launch: the server drives the run once it took the request.
	hctx, cancel := handoverContext(ctx)
	defer cancel()
	if _, err := d.srv.c.HandoverResume(hctx, id, d.keys); err != nil && !errors.Is(err, client.ErrConflict) {
		return state.Run{}, runNotFound(err, id, d.dataDir())
	} else if err != nil {
		// 409: the run has ended, or a key is still missing.
		if h, herr := d.reader().Run(hctx, id); herr != nil || !h.Status.Terminal() {
			return state.Run{}, err
		}
	}
	d.announce(id)
	return d.reader().Run(hctx, id)
}

// announce tells the person at the terminal, on stderr, that the run is
// driven by the server (and where the viewer shows it).
func (d *driver) announce(id string) {
	fmt.Fprintf(d.stderr, "flock %s: the flock server at %s (pid %d) holds %s: run %s is driven there and shows in its viewer at %s/#/runs/%s\n",
		d.cmd, d.srv.url, d.srv.info.PID, d.data, id, d.srv.url, id)
}

// requestedWorkflow is the workflow req names: its Workflow, or its
// settings' workflow_type.
func requestedWorkflow(req workflows.StartRequest) string {
	if req.Workflow != "" {
		return req.Workflow
	}
	rs, err := configs.ParseRunSettings(req.Settings)
	if err != nil {
		return ""
	}
	return rs.WorkflowType
}

// graphNames are the names of graphs.
func graphNames(graphs []phases.Graph) []string {
	names := make([]string, 0, len(graphs))
	for _, g := range graphs {
		names = append(names, g.Name)
	}
	return names
}

// wait waits for run id to end and returns its final head.
func (d *driver) wait(ctx context.Context, id string) (state.Run, error) {
	if d.a != nil {
		return d.a.Executor.Wait(ctx, id)
	}
	if _, err := d.srv.c.Wait(ctx, id); err != nil {
		return state.Run{}, err
	}
	return d.reader().Run(ctx, id)
}

// follow shows run id's events on p (nil: shows nothing) until the run
// ends, and returns its final head.
func (d *driver) follow(ctx context.Context, id string, p *progress) (state.Run, error) {
	if d.a != nil {
		return followLocal(ctx, d.a, id, p)
	}
	s, err := d.srv.c.Events(ctx, id, client.EventsOptions{})
	if err != nil {
		return state.Run{}, err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return state.Run{}, err
		}
		p.event(ctx, stateEvent(ev))
	}
	p.done()
	return d.reader().Run(ctx, id)
}

// interrupted reports, after Ctrl-C, how run id can be resumed, and
// returns err as reported (Main adds nothing). A run handed to a server is
// paused there first: like a run of this process, it stops until someone
// resumes it.
func (d *driver) interrupted(id string, err error) error {
	err = fmt.Errorf("%w: %w", errReported, err)
	if d.a != nil {
		fmt.Fprintf(d.stderr, "flock %s: interrupted; run %s stays resumable: %s\n", d.cmd, id, d.resumeHint(id))
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, perr := d.srv.c.Pause(ctx, id); perr != nil && !errors.Is(perr, client.ErrConflict) {
		fmt.Fprintf(d.stderr, "flock %s: interrupted; run %s goes on in the flock server at %s (pausing it failed: %s)\n", d.cmd, id, d.srv.url, terminalText(perr))
		return err
	}
	fmt.Fprintf(d.stderr, "flock %s: interrupted; run %s is paused in the flock server at %s and stays resumable: %s\n", d.cmd, id, d.srv.url, d.resumeHint(id))
	return err
}

// resumeHint is the command that resumes run id.
func (d *driver) resumeHint(id string) string {
	return fmt.Sprintf("flock run --resume %s --data %s", id, d.dataDir())
}

// othersLine is the line naming the unfinished top-level runs of the data
// directory other than id's tree, which this process does not drive, with
// the command that resumes each; "" when there are none or a server
// drives them all.
func (d *driver) othersLine(ctx context.Context, id string) string {
	if d.a == nil {
		return ""
	}
	heads, err := d.a.Store.Unfinished(ctx)
	if err != nil {
		return ""
	}
	unfinished := map[string]bool{}
	for _, h := range heads {
		unfinished[h.ID] = true
	}
	var parts []string
	n := 0
	for _, h := range heads {
		if h.ID == id || (h.ParentID != "" && unfinished[h.ParentID]) {
			continue
		}
		n++
		if len(parts) < 5 {
			parts = append(parts, fmt.Sprintf("%s (%s, %s): %s", h.ID, h.Workflow, h.Status, d.resumeHint(h.ID)))
		}
	}
	if n == 0 {
		return ""
	}
	if n > len(parts) {
		parts = append(parts, fmt.Sprintf("and %d more (flock runs list --status running --data %s)", n-len(parts), d.dataDir()))
	}
	return fmt.Sprintf("flock %s: %d other unfinished run(s) in %s are not resumed by this command: %s", d.cmd, n, d.dataDir(), strings.Join(parts, "; "))
}

// followLocal streams a run's events to p until the run ends.
func followLocal(ctx context.Context, a *app.App, id string, p *progress) (state.Run, error) {
	var last uint64
	for {
		ch, unsub := a.Executor.Subscribe(id)
		evs, err := a.Store.Events(ctx, id, last, 100000)
		if err != nil {
			unsub()
			return state.Run{}, err
		}
		ended := false
		handle := func(ev state.Event) {
			if ev.Seq <= last {
				return
			}
			last = ev.Seq
			p.event(ctx, ev)
			if ev.Final() {
				ended = true
			}
		}
		for _, ev := range evs {
			handle(ev)
		}
		for !ended {
			select {
			case ev, ok := <-ch:
				if !ok {
					goto resubscribe
				}
				handle(ev)
			case <-ctx.Done():
				unsub()
				return state.Run{}, ctx.Err()
			}
		}
		unsub()
		p.done()
		return a.Store.Run(ctx, id)
	resubscribe:
		unsub()
		if h, err := a.Store.Run(ctx, id); err == nil && h.Status.Terminal() {
			if rest, err := a.Store.Events(ctx, id, last, 100000); err == nil {
				for _, ev := range rest {
					handle(ev)
				}
			}
			p.done()
			return h, nil
		}
	}
}
