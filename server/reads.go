package server

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
)

// The read routes that serve the viewer's pages of evaluations and data:
// a search of the runs by task, an entry log filtered by type (a
// rollout's sample rows, a synthesis seed's QA pairs) and a run's tokens
// and cost by model. Each reads a bounded amount of the store per
// request and hands back a cursor for the rest.

// Bounds of one request (variables so that tests can lower them).
var (
	// searchBudget is how many runs one search request reads (their head
	// and task) before it answers with what it found and a cursor.
	searchBudget = 2000
	// entryScanBudget is how many entries one request filtered by type
	// reads before it answers with what it found and a cursor.
	entryScanBudget = 20000
)

const (
	// maxEntryTypes caps the types one request filters by.
	maxEntryTypes = 16
	// usageRunsBudget is how many runs GET /runs/{id}/usage?descendants
	// counts at most (the run and its first descendants, breadth first).
	usageRunsBudget = 1000
	// taskLineMax caps the task's first line shown in a list (runes).
	taskLineMax = 200
	// maxQuery caps a search's text (bytes).
	maxQuery = 500
)

// firstLine returns the first non-blank line of text, trimmed and cut to
// taskLineMax runes (with an ellipsis when cut).
func firstLine(text string) string {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > taskLineMax {
			r := []rune(line)
			line = string(r[:taskLineMax-1]) + "…"
		}
		return line
	}
	return ""
}

// task returns the task of run id, "" when the run has no spec (runs
// written by other means than a start).
func (s *Server) task(ctx context.Context, id string) (string, error) {
	sp, err := s.store.Spec(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		return "", nil
	}
	return sp.Task, err
}

// runView is the view of r in a list or on its own: the head plus its
// task's first line (task, when already read, else read here), the number
// of its children and of the questions it waits on.
func (s *Server) runView(ctx context.Context, r state.Run, task *string) (api.Run, error) {
	v := viewRun(r)
	if task == nil {
		t, err := s.task(ctx, r.ID)
		if err != nil {
			return v, &runError{id: r.ID, err: err}
		}
		task = &t
	}
	v.Task = firstLine(*task)
	kids, err := s.countChildren(ctx, r.ID)
	if err != nil {
		return v, &runError{id: r.ID, err: err}
	}
	v.Children = kids
	if !r.Status.Terminal() && r.NumOps > 0 {
		qs, err := s.roles.questioner.Questions(ctx, r.ID)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return v, &runError{id: r.ID, err: err}
		}
		v.Questions = len(qs)
	}
	return v, nil
}

// countChildren counts run id's children, without reading them where
// the store can (state.ChildCounter).
func (s *Server) countChildren(ctx context.Context, id string) (int, error) {
	if cc, ok := s.store.(state.ChildCounter); ok {
		return cc.CountChildren(ctx, id)
	}
	kids, err := s.store.Children(ctx, id)
	return len(kids), err
}

// searchRuns lists the runs of f whose task contains q (case-insensitive),
// newest first, reading at most searchBudget runs: next is the last run
// read when the budget ran out before the store did, so that the client
// can go on from there.
func (s *Server) searchRuns(ctx context.Context, f state.RunFilter, q string, limit int) ([]api.Run, string, error) {
	q = strings.ToLower(q)
	views := []api.Run{}
	read := 0
	for {
		f.Limit = min(state.RunsLimit(1000), searchBudget-read)
		runs, next, err := s.store.Runs(ctx, f)
		if err != nil {
			return nil, "", err
		}
		for _, r := range runs {
			read++
			f.After = r.ID
			task, err := s.task(ctx, r.ID)
			if err != nil {
				return nil, "", &runError{id: r.ID, err: err}
			}
			if !strings.Contains(strings.ToLower(task), q) {
				continue
			}
			v, err := s.runView(ctx, r, &task)
			if err != nil {
				return nil, "", err
			}
			views = append(views, v)
			if len(views) == limit {
				return views, r.ID, nil
			}
		}
		switch {
		case next == "":
			return views, "", nil // the store has no more
		case read >= searchBudget:
			return views, f.After, nil
		}
	}
}

// entryTypes parses the "type" parameter: a comma-separated list of entry
// types, or nil when absent.
func entryTypes(c *echo.Context) (map[string]bool, error) {
	v := c.QueryParam("type")
	if v == "" {
		return nil, nil
	}
	types := map[string]bool{}
	for t := range strings.SplitSeq(v, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, badInput("type", "must be entry types separated by commas, with none empty (got %q)", v)
		}
		types[t] = true
	}
	if len(types) > maxEntryTypes {
		return nil, badInput("type", "names %d types; at most %d", len(types), maxEntryTypes)
	}
	return types, nil
}

// filteredEntries returns up to limit entries of run id after seq after
// whose type is in types, reading at most entryScanBudget entries: next is
// the seq to go on after ("" once the log is read to its end).
func (s *Server) filteredEntries(ctx context.Context, id string, after uint64, limit int, types map[string]bool) ([]phases.Entry, string, error) {
	out := []phases.Entry{}
	read := 0
	for read < entryScanBudget {
		page := state.LogLimit(min(1000, entryScanBudget-read))
		entries, err := s.store.Entries(ctx, id, after, page)
		if err != nil {
			return nil, "", err
		}
		for _, e := range entries {
			read++
			after = e.Seq
			if !types[e.Type] {
				continue
			}
			out = append(out, e)
			if len(out) == limit {
				return out, strconv.FormatUint(e.Seq, 10), nil
			}
		}
		if len(entries) < page {
			return out, "", nil
		}
	}
	return out, strconv.FormatUint(after, 10), nil
}

// runUsage answers GET /runs/:id/usage: the tokens and cost of the run's
// generate operations by model, and with descendants=true those of its
// descendant runs too (breadth first, at most usageRunsBudget runs).
func (s *Server) runUsage(c *echo.Context) error {
	descendants, err := queryBool(c, "descendants")
	if err != nil {
		return err
	}
	head, err := s.run(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	byModel := map[string]*api.ModelUsage{}
	out := api.UsageByModel{Models: []api.ModelUsage{}}
	queue := []string{head.ID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if out.Runs == usageRunsBudget {
			out.Truncated = true
			break
		}
		out.Runs++
		for op, err := range state.AllOps(ctx, s.store, id) {
			if err != nil {
				return &runError{id: id, err: err}
			}
			addUsage(byModel, op)
		}
		if !descendants {
			break
		}
		kids, err := s.store.Children(ctx, id)
		if err != nil {
			return &runError{id: id, err: err}
		}
		queue = append(queue, kids...)
	}
	for _, m := range byModel {
		out.Models = append(out.Models, *m)
	}
	sort.Slice(out.Models, func(i, j int) bool { return out.Models[i].Model < out.Models[j].Model })
	return c.JSON(http.StatusOK, out)
}

// addUsage counts op in byModel when it is a finished generate.
func addUsage(byModel map[string]*api.ModelUsage, op state.Op) {
	req := operations.Generate.Params(op.Request)
	if req == nil || op.Status != state.OpDone || op.Result == nil {
		return
	}
	m := byModel[req.Model]
	if m == nil {
		m = &api.ModelUsage{Model: req.Model}
		byModel[m.Model] = m
	}
	m.Calls++
	if op.Result.Error != "" {
		m.Errors++
	}
	if g := operations.Generate.Result(*op.Result); g != nil {
		m.PromptTokens += g.Usage.PromptTokens
		m.CompletionTokens += g.Usage.CompletionTokens
		m.Cost += g.Usage.Cost
	}
}

// queryBool parses an optional boolean parameter (default false).
func queryBool(c *echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badInput(name, "must be true or false (got %q)", v)
	}
	return b, nil
}
