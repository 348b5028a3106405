// Package rolloutview is the terminal view of flock rollout: a progress bar
// (or a line per change) fed by the rows the rollout's lanes append, then
// the summary as a table and, for a single question, its answers. It reads
// runs from the store or the server's API, so it lives with the command
// line rather than in the phases tree (phase packages stay pure); it knows
// the rollout's row and summary types so that the rest of the CLI holds no
// rollout-specific display.
package rolloutview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flockrun/flock/phases/rollout"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/schollz/progressbar/v3"
)

// PrintAnswers prints the answers of a rollout's results file.
func PrintAnswers(w io.Writer, h state.Run) {
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

// Source is what a Watch reads of runs: a state.Reader, or the command
// line's reader of a server's API.
type Source interface {
	Run(ctx context.Context, id string) (state.Run, error)
	Children(ctx context.Context, id string) ([]string, error)
	Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error)
}

// Watch follows a rollout: it reads the rollout's plan from its
// vars and the rows its lanes append, and draws a progress bar.
type Watch struct {
	store Source
	id    string
	out   io.Writer
	tty   bool
	quiet bool
	bar   *progressbar.ProgressBar
	// lanes maps a lane run id to the last entry seq read.
	lanes       map[string]uint64
	total, done int
	correct     int
	graded      int
	tokens      int
	lastPrinted int
}

// New returns a Watch of rollout run id that reads store and writes to
// out: a progress bar when tty is set, a line per change otherwise,
// nothing when quiet.
func New(store Source, id string, out io.Writer, tty, quiet bool) *Watch {
	return &Watch{store: store, id: id, out: out, tty: tty, quiet: quiet, lanes: map[string]uint64{}}
}

// Follow draws the rollout's progress until wait returns its end (or
// fails, or ctx ends) and returns that end.
func (w *Watch) Follow(ctx context.Context, wait func(context.Context, string) (state.Run, error)) (state.Run, error) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	ended := make(chan state.Run, 1)
	errc := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		h, err := wait(wctx, w.id)
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
func (w *Watch) poll(ctx context.Context) {
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
		w.total = max(st.Planned, 1) // not 0 again: the plan is reported once
		fmt.Fprintf(w.out, "%d samples to run, re-grade %d (%d finished earlier)\n", st.Planned-st.Regrade, st.Regrade, st.Previous)
		if st.Notice != "" {
			fmt.Fprintf(w.out, "note: %s\n", st.Notice)
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

func (w *Watch) finish() {
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

// PrintSummary prints the rollout's end and its summary as a table.
func PrintSummary(w io.Writer, h state.Run) {
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
		row("failed by", counts(s.FailedBy))
	}
	for k, v := range s.PassAtK {
		row(fmt.Sprintf("pass@%d", k+1), fmt.Sprintf("%.4f", v))
	}
	for _, n := range slices.Sorted(maps.Keys(s.ScoreMeans)) {
		label := "score " + n
		if n == s.Primary {
			label += " (primary)"
		}
		row(label, fmt.Sprintf("%.4f", s.ScoreMeans[n]))
	}
	for _, n := range slices.Sorted(maps.Keys(s.Reduced)) {
		row("reduced "+n, fmt.Sprintf("%.4f", s.Reduced[n]))
	}
	for _, n := range slices.Sorted(maps.Keys(s.SignalMeans)) {
		row("signal "+n, fmt.Sprintf("%.4f", s.SignalMeans[n]))
	}
	if s.NotEvaluated > 0 {
		row("not graded", strconv.Itoa(s.NotEvaluated))
	}
	if s.Notice != "" {
		row("note", s.Notice)
	}
	if len(s.Errors) > 0 {
		row("errors", counts(s.Errors))
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

// counts writes m as "key n" pairs, sorted, joined by ", ".
func counts(m map[string]int) string {
	pairs := make([]string, 0, len(m))
	for k, n := range m {
		pairs = append(pairs, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ", ")
}
