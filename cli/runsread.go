package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
)

// source is where flock runs reads runs: a server's API (--server, or the
// server that holds --data), or the data directory's store, opened
// read-only when no server holds it.
type source struct {
	r     runReader
	c     *client.Client // a server's, or nil
	store *bolt.Store    // the data directory's, or nil
	data  string
	// where names the source in messages: the data directory, or the
	// flock server given by --server.
	where string
}

// serverTarget returns the client of the server the runs commands talk to:
// --server (or FLOCK_SERVER) when given, else the live server that holds
// the data directory (its server file; the operator token), else nil.
func serverTarget(ctx context.Context, fs *flag.FlagSet, serverURL, token, data string) (*client.Client, error) {
	if flagSet(fs, "server") || getenv("FLOCK_SERVER", "") != "" {
		c, err := client.New(serverURL, client.WithToken(token))
		if err != nil {
			return nil, fmt.Errorf("%w: --server: %v", errUsage, err)
		}
		return c, nil
	}
	h, err := findServer(ctx, data)
	if err != nil || h == nil {
		return nil, err
	}
	return h.c, nil
}

// openSource opens where the read commands read runs.
func openSource(ctx context.Context, fs *flag.FlagSet, serverURL, token, data string) (*source, func(), error) {
	c, err := serverTarget(ctx, fs, serverURL, token, data)
	if err != nil {
		return nil, nil, err
	}
	if c != nil {
		where := data
		if flagSet(fs, "server") || getenv("FLOCK_SERVER", "") != "" {
			where = "the flock server at " + serverURL
		}
		return &source{r: remote{c}, c: c, data: data, where: where}, func() {}, nil
	}
	st, err := bolt.Open(filepath.Join(data, "flock.db"), bolt.Options{ReadOnly: true})
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s holds no runs (no flock.db, and no flock server holds it): give the data directory of your runs with --data DIR, or a server with --server URL", data)
	}
	if errors.Is(err, state.ErrInUse) {
		return nil, nil, fmt.Errorf("%w; no flock server holding it answers: a flock run, rollout or synthesize uses it, so wait for it to end (or give --server)", err)
	}
	if err != nil {
		return nil, nil, err
	}
	return &source{r: st, store: st, data: data, where: data}, func() { _ = st.Close() }, nil
}

// workflowNames are the workflows a --workflow filter may name: those
// registered (in the server, or in this build) and those of the newest
// runs (a run outlives the plugin of its workflow).
func (s *source) workflowNames(ctx context.Context) []string {
	seen := map[string]bool{}
	if s.c != nil {
		if list, err := s.c.Workflows(ctx); err == nil {
			for _, g := range list {
				seen[g.Name] = true
			}
		}
	} else {
		for _, w := range phases.Default.List() {
			seen[w.Name] = true
		}
	}
	if runs, _, err := s.r.Runs(ctx, state.RunFilter{Limit: 1000}); err == nil {
		for _, r := range runs {
			seen[r.Workflow] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// task is the first line of run id's task, "" when unknown.
func (s *source) task(ctx context.Context, r state.Run, listed string) string {
	if s.store == nil {
		return listed
	}
	spec, err := s.store.Spec(ctx, r.ID)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(spec.Task), "\n")
	return strings.TrimSpace(line)
}

// runsList prints the runs, newest first, as a table.
func runsList(ctx context.Context, src *source, f state.RunFilter, stdout io.Writer) error {
	limit := f.Limit
	var runs []state.Run
	var tasks []string
	q := f
	q.Limit = min(max(limit, 1), 1000)
	for len(runs) < limit {
		var page []state.Run
		var next string
		var err error
		var listed []string
		if src.c != nil {
			var p api.Runs
			p, err = src.c.Runs(ctx, client.RunsQuery{Status: q.Status, Workflow: q.Workflow, Top: q.TopLevel, After: q.After, Limit: q.Limit})
			for _, v := range p.Runs {
				page = append(page, stateRun(v))
				listed = append(listed, v.Task)
			}
			next = p.Next
		} else {
			page, next, err = src.store.Runs(ctx, q)
			listed = make([]string, len(page))
		}
		if err != nil {
			return err
		}
		for i, r := range page {
			if len(runs) == limit {
				break
			}
			runs = append(runs, r)
			tasks = append(tasks, src.task(ctx, r, listed[i]))
		}
		if next == "" {
			break
		}
		q.After = next
	}
	if len(runs) == 0 && f.Workflow != "" {
		if names := src.workflowNames(ctx); !slices.Contains(names, f.Workflow) {
			return unknownWorkflow(f.Workflow, names)
		}
	}
	t := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t, "ID\tWORKFLOW\tSTATUS\tEND REASON\tTASK\tAGE")
	now := time.Now()
	for i, r := range runs {
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Workflow, r.Status, dash(r.EndReason), dash(oneLine(tasks[i], 60)), age(now.Sub(r.CreatedAt)))
	}
	return t.Flush()
}

// runsShow prints a run's head, result, usage against its limits and its
// children by status.
func runsShow(ctx context.Context, src *source, id string, stdout io.Writer) error {
	h, err := src.r.Run(ctx, id)
	if err != nil {
		return runNotFound(err, id, src.where)
	}
	t := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(t, "%s\t%s\n", k, v) }
	row("run", h.ID)
	row("workflow", h.Workflow)
	st := string(h.Status)
	if h.EndReason != "" {
		st += " (" + h.EndReason + ")"
	}
	row("status", st)
	if h.ParentID != "" {
		row("parent", h.ParentID)
	}
	if h.ForkedFrom != nil {
		row("forked from", fmt.Sprintf("%s at step %d", h.ForkedFrom.Run, h.ForkedFrom.Step))
	}
	row("step", fmt.Sprintf("%d (phase %s)", h.Step, dash(h.Phase)))
	row("entries", fmt.Sprint(h.Entries))
	row("created", h.CreatedAt.Local().Format(time.DateTime))
	if h.EndedAt != nil {
		row("ended", h.EndedAt.Local().Format(time.DateTime))
	} else {
		row("updated", h.UpdatedAt.Local().Format(time.DateTime))
	}
	u, l := h.Usage, h.Limits
	row("tokens", against(fmt.Sprint(u.Tokens), l.Tokens > 0, fmt.Sprint(l.Tokens)))
	row("actions", against(fmt.Sprint(u.Actions), l.Actions > 0, fmt.Sprint(l.Actions)))
	row("seconds", against(fmt.Sprintf("%.1f", u.Seconds), l.Seconds > 0, fmt.Sprintf("%.1f", l.Seconds)))
	row("cost", against(fmt.Sprintf("$%.4f", u.Cost), l.Cost > 0, fmt.Sprintf("$%.4f", l.Cost)))
	if h.Error != "" {
		row("error", h.Error)
	}
	if len(h.Result) > 0 {
		row("result", string(h.Result))
	}
	counts, n, err := childCounts(ctx, src.r, id)
	if err != nil {
		return err
	}
	if n > 0 {
		var parts []string
		for _, s := range []state.Status{state.StatusRunning, state.StatusPaused, state.StatusSucceeded, state.StatusFailed, state.StatusCancelled} {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
			}
		}
		row("children", fmt.Sprintf("%d: %s", n, strings.Join(parts, ", ")))
	}
	return t.Flush()
}

// against shows a usage and, when there is one, its limit.
func against(used string, limited bool, limit string) string {
	if !limited {
		return used + " (no limit)"
	}
	return used + " of " + limit
}

// childCounts counts a run's children by status.
func childCounts(ctx context.Context, r runReader, id string) (map[state.Status]int, int, error) {
	counts := map[state.Status]int{}
	n := 0
	f := state.RunFilter{ParentID: id, Limit: 1000}
	for {
		page, next, err := r.Runs(ctx, f)
		if err != nil {
			return nil, 0, err
		}
		for _, c := range page {
			counts[c.Status]++
			n++
		}
		if next == "" {
			return counts, n, nil
		}
		f.After = next
	}
}

// runsLogs prints a run's transcript as flock run prints it: its steps
// from the stored events, then, once it has ended, its result. With
// follow, a run still going is followed (through its server) to its end.
func runsLogs(ctx context.Context, src *source, id string, follow bool, stdout, stderr io.Writer) error {
	h, err := src.r.Run(ctx, id)
	if err != nil {
		return runNotFound(err, id, src.where)
	}
	if follow && !h.Status.Terminal() && src.c != nil {
		d := &driver{cmd: "runs logs", data: src.data, stderr: stderr, srv: &handle{c: src.c}}
		end, err := d.follow(ctx, id, newProgress(stdout, src.r, id, isTerminal(stdout)))
		if err != nil {
			return err
		}
		printResult(stdout, end)
		return nil
	}
	p := newProgress(stdout, src.r, id, false)
	var last uint64
	for {
		evs, err := src.r.Events(ctx, id, last, 1000)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			last = ev.Seq
			p.event(ctx, ev)
		}
		if len(evs) < 1000 {
			break
		}
	}
	if h, err = src.r.Run(ctx, id); err != nil {
		return err
	}
	if h.Status.Terminal() {
		printResult(stdout, h)
		return nil
	}
	switch {
	case src.c != nil:
		fmt.Fprintf(stderr, "flock runs logs: run %s is %s (--follow follows it to its end)\n", id, h.Status)
	default:
		fmt.Fprintf(stderr, "flock runs logs: run %s is %s and nothing drives it (no process holds %s): flock run --resume %s --data %s resumes it\n",
			id, h.Status, src.data, id, src.data)
	}
	return nil
}

// runsExport writes a run as JSON lines: {"run": head}, then {"entry": ...}
// for each entry and {"op": ...} for each operation, in the API's shapes.
func runsExport(ctx context.Context, src *source, id string, stdout io.Writer) error {
	enc := json.NewEncoder(stdout)
	line := func(k string, v any) error { return enc.Encode(map[string]any{k: v}) }
	if src.c != nil {
		head, err := src.c.Run(ctx, id)
		if err != nil {
			return runNotFound(err, id, src.where)
		}
		if err := line("run", head); err != nil {
			return err
		}
		for after := uint64(0); ; {
			page, err := src.c.Entries(ctx, id, after, 1000)
			if err != nil {
				return err
			}
			for _, e := range page.Entries {
				if err := line("entry", e); err != nil {
					return err
				}
				after = e.Seq
			}
			if page.Next == "" {
				break
			}
		}
		for after := ""; ; {
			page, err := src.c.Ops(ctx, id, after, 1000)
			if err != nil {
				return err
			}
			for _, op := range page.Ops {
				if err := line("op", op); err != nil {
					return err
				}
			}
			if after = page.Next; after == "" {
				return nil
			}
		}
	}
	h, err := src.store.Run(ctx, id)
	if err != nil {
		return runNotFound(err, id, src.where)
	}
	v := server.ViewRun(h)
	v.Vars = h.Vars
	if err := line("run", v); err != nil {
		return err
	}
	for after := uint64(0); ; {
		es, err := src.store.Entries(ctx, id, after, 1000)
		if err != nil {
			return err
		}
		for _, e := range es {
			if err := line("entry", server.ViewEntry(e)); err != nil {
				return err
			}
			after = e.Seq
		}
		if len(es) < 1000 {
			break
		}
	}
	for op, err := range state.AllOps(ctx, src.store, id) {
		if err != nil {
			return err
		}
		v, err := server.ViewOp(op)
		if err != nil {
			return err
		}
		if err := line("op", v); err != nil {
			return err
		}
	}
	return nil
}

// workflowsCmd is "flock workflows": every registered workflow with its
// one-line description and settings keys, of the server (--server, or the
// one holding --data) or, without one, of this build plus --plugins and
// --workflows.
func workflowsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("workflows")
	var cfg configs.Server
	serverURL := fs.String("server", getenv("FLOCK_SERVER", "http://"+configs.DefaultAddr), "a flock server's base URL (env FLOCK_SERVER): list its workflows")
	var tf tokenFlags
	tf.registerClient(fs)
	fs.StringVar(&cfg.DataDir, "data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory: the workflows of the server that holds it, if one does")
	fs.Var((*stringList)(&cfg.PluginDirs), "plugins", "directory of Go phase plugins (*.so) to list too; repeatable")
	fs.Var((*stringList)(&cfg.WorkflowDirs), "workflows", "directory of YAML/JSON workflow files to list too; repeatable")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	token, err := tf.resolve("", notices{w: io.Discard})
	if err != nil {
		return err
	}
	c, err := serverTarget(ctx, fs, *serverURL, token, cfg.DataDir)
	if err != nil {
		return err
	}
	var graphs []phases.Graph
	if c != nil {
		list, err := c.Workflows(ctx)
		if err != nil {
			return err
		}
		for _, g := range list {
			graphs = append(graphs, phases.Graph{Name: g.Name, Description: g.Description, Source: g.Source, Settings: g.Settings})
		}
	} else {
		reg := phases.Default.Clone()
		if err := app.LoadExtensions(reg, cfg); err != nil {
			return err
		}
		for _, w := range reg.List() {
			graphs = append(graphs, w.Graph())
		}
	}
	sort.Slice(graphs, func(i, j int) bool { return graphs[i].Name < graphs[j].Name })
	t := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t, "WORKFLOW\tDESCRIPTION\tSETTINGS")
	for _, g := range graphs {
		desc, _, _ := strings.Cut(g.Description, "\n")
		fmt.Fprintf(t, "%s\t%s\t%s\n", g.Name, dash(oneLine(desc, 160)), dash(strings.Join(g.Settings, ", ")))
	}
	return t.Flush()
}

// dash is s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age words a duration as people read it in a list: 42s, 5m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
