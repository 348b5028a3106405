package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
)

// lowerBudget sets a request budget for one test.
func lowerBudget(t *testing.T, budget *int, n int) {
	old := *budget
	*budget = n
	t.Cleanup(func() { *budget = old })
}

func runIDs(runs []api.Run) []string {
	out := []string{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// TestListRunsTopAndSearch lists top-level runs with their task's first
// line and number of children, searches by task text (paging through a
// budget smaller than the store) and refuses bad parameters.
func TestListRunsTopAndSearch(t *testing.T) {
	e := newEnv(t)
	close(e.gate) // test.parent's child finishes at once
	a := e.start(t, "test.log", "\n  Count the apples \nthen the pears")
	b := e.start(t, "test.log", "Count the PEARS")
	parent := e.start(t, "test.parent", "spawn one "+strings.Repeat("x", 300))
	c := e.start(t, "test.log", "weigh the melons")
	for _, id := range []string{a, b, parent, c} {
		e.waitStatus(t, id, state.StatusSucceeded)
	}
	var all api.Runs
	e.getJSON(t, "/runs", &all)
	if len(all.Runs) != 5 {
		t.Fatalf("%d runs, want 5 (4 started and a child)", len(all.Runs))
	}
	var top api.Runs
	e.getJSON(t, "/runs?top=true", &top)
	if got, want := runIDs(top.Runs), []string{c, parent, b, a}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("top-level runs %v, want %v", got, want)
	}
	byID := map[string]api.Run{}
	for _, r := range top.Runs {
		byID[r.ID] = r
	}
	if got := byID[a].Task; got != "Count the apples" {
		t.Errorf("task of a = %q, want its first line", got)
	}
	if got := byID[parent]; got.Children != 1 || len([]rune(got.Task)) != 200 || !strings.HasSuffix(got.Task, "…") {
		t.Errorf("parent: children %d, task %q (%d runes), want 1 child and a task cut to 200", got.Children, got.Task, len([]rune(got.Task)))
	}
	if byID[a].Children != 0 {
		t.Errorf("a has %d children", byID[a].Children)
	}
	var one api.Run
	e.getJSON(t, "/runs/"+a, &one)
	if one.Task != "Count the apples" {
		t.Errorf("GET /runs/a task %q", one.Task)
	}

	var found api.Runs
	e.getJSON(t, "/runs?q=pears&top=true", &found)
	if got, want := runIDs(found.Runs), []string{b, a}; fmt.Sprint(got) != fmt.Sprint(want) || found.Next != "" {
		t.Fatalf("search pears: %v next %q, want %v", got, found.Next, want)
	}
	e.getJSON(t, "/runs?q=pears&limit=1", &found)
	if got := runIDs(found.Runs); fmt.Sprint(got) != fmt.Sprint([]string{b}) || found.Next != b {
		t.Fatalf("search pears limit 1: %v next %q", got, found.Next)
	}

	// A budget of two runs per request: the search pages through the
	// store, with pages that may be empty, and finds the same runs.
	lowerBudget(t, &searchBudget, 2)
	var got []string
	after, requests := "", 0
	for {
		var p api.Runs
		e.getJSON(t, "/runs?top=true&q=PEAR&after="+after, &p)
		requests++
		got = append(got, runIDs(p.Runs)...)
		if p.Next == "" {
			break
		}
		if requests > 5 {
			t.Fatalf("search does not end: %v", got)
		}
		after = p.Next
	}
	if want := []string{b, a}; fmt.Sprint(got) != fmt.Sprint(want) || requests < 2 {
		t.Fatalf("budgeted search found %v in %d requests, want %v in at least 2", got, requests, want)
	}

	for _, q := range []string{"?top=true&parent_id=" + parent, "?top=maybe", "?q=" + strings.Repeat("a", 501)} {
		r := e.do(t, http.MethodGet, "/runs"+q, nil)
		if r.status != http.StatusBadRequest {
			t.Errorf("GET /runs%s: %d, want 400", q[:min(len(q), 40)], r.status)
		}
	}
}

// TestRunQuestionsAndVars: a run waiting on a question says so in the
// list and on its own; its head carries its vars.
func TestRunQuestionsAndVars(t *testing.T) {
	e := newEnvSetup(t, envSetup{operator: true})
	ask := e.start(t, "test.ask", "ask")
	count := e.start(t, "test.count", "count")
	e.waitStatus(t, count, state.StatusSucceeded)
	var runs api.Runs
	testkit.WaitFor(t, "the question in the list", func() bool {
		e.getJSON(t, "/runs?top=true", &runs)
		return len(runs.Runs) == 2 && runs.Runs[1].ID == ask && runs.Runs[1].Questions == 1
	})
	var head api.Run
	e.getJSON(t, "/runs/"+count, &head)
	if string(head.Vars["n"]) != "5" || head.Questions != 0 {
		t.Errorf("test.count head: vars %v, questions %d", head.Vars, head.Questions)
	}
}

// TestEntriesByType filters the entry log by type, by pages and through a
// scan budget smaller than the log.
func TestEntriesByType(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)
	// The log: messages a, b, c (1-3), log entries (4-6), message d (7).
	seqs := func(p api.Entries) string {
		var s []string
		for _, en := range p.Entries {
			s = append(s, fmt.Sprintf("%d:%s", en.Seq, en.Type))
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		name, query, want, next string
		budget                  int
	}{
		{"messages", "type=message", "1:message 2:message 3:message 7:message", "", 0},
		{"messages paged", "type=message&limit=2", "1:message 2:message", "2", 0},
		{"two types", "type=log,message&after=3&limit=10", "4:log 5:log 6:log 7:message", "", 0},
		{"none", "type=nothing", "", "", 0},
		{"budget: nothing found yet", "type=message&after=3", "", "6", 3},
		{"budget: the rest", "type=message&after=6", "7:message", "", 3},
		{"budget: full pages", "type=message", "1:message 2:message 3:message", "3", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.budget > 0 {
				lowerBudget(t, &entryScanBudget, tt.budget)
			}
			var p api.Entries
			e.getJSON(t, "/runs/"+id+"/entries?"+tt.query, &p)
			if got := seqs(p); got != tt.want || p.Next != tt.next {
				t.Fatalf("got %q next %q, want %q next %q", got, p.Next, tt.want, tt.next)
			}
		})
	}
	many := []string{}
	for i := range 17 {
		many = append(many, fmt.Sprint("t", i))
	}
	for _, q := range []string{"type=a,,b", "type=,", "type=" + strings.Join(many, ",")} {
		if r := e.do(t, http.MethodGet, "/runs/"+id+"/entries?"+q, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, r.status)
		}
	}
}

// TestRunUsage sums the generate operations of a run, and of its
// descendants when asked, by model.
func TestRunUsage(t *testing.T) {
	gen := func(model string) operations.Request {
		return operations.Request{Kind: operations.KindGenerate, Params: &operations.GenerateRequest{Model: model,
			Messages: []operations.Message{{Role: "user", Content: "hi"}}}}
	}
	e := newEnvSetup(t, envSetup{extra: func(reg *phases.Registry, hs map[operations.Kind]handlers.Handler) {
		hs[operations.KindGenerate] = handlers.HandlerFunc(func(_ context.Context, _ handlers.Env, req operations.Request) operations.Result {
			if operations.Generate.Params(req).Model == "broken" {
				return operations.Failed(req, "no such model")
			}
			return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: &operations.GenerateResult{
				Outputs: []operations.Output{{Content: "ok"}},
				Usage:   operations.Usage{PromptTokens: 10, CompletionTokens: 3, Cost: 0.25}}}
		})
		end := func(in phases.Input) (phases.Output, error) {
			return phases.Output{End: &phases.End{Reason: "done"}}, nil
		}
		reg.MustRegister(phases.Workflow{Name: "test.gen", Start: "ask", Phases: []phases.PhaseSpec{
			{Name: "ask", Next: []string{"end"}, Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{Ops: []operations.Request{gen("m1"), gen("m1"), gen("m2"), gen("broken")}, Next: "end"}, nil
			}},
			{Name: "end", Run: end},
		}})
		reg.MustRegister(phases.Workflow{Name: "test.gen.parent", Start: "spawn", Phases: []phases.PhaseSpec{
			{Name: "spawn", Next: []string{"ask"}, Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{Ops: []operations.Request{
					operations.NewSpawn(operations.SpawnRequest{Workflow: "test.gen", Name: "a"}),
					operations.NewSpawn(operations.SpawnRequest{Workflow: "test.gen", Name: "b"})}, Next: "ask"}, nil
			}},
			{Name: "ask", Next: []string{"end"}, Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{Ops: []operations.Request{gen("judge")}, Next: "end"}, nil
			}},
			{Name: "end", Run: end},
		}})
	}})
	id := e.start(t, "test.gen.parent", "")
	e.waitStatus(t, id, state.StatusSucceeded)
	show := func(u api.UsageByModel) string {
		var s []string
		for _, m := range u.Models {
			s = append(s, fmt.Sprintf("%s:%d/%d:%d+%d:$%.2f", m.Model, m.Calls, m.Errors, m.PromptTokens, m.CompletionTokens, m.Cost))
		}
		return fmt.Sprintf("%d runs %s truncated=%v", u.Runs, strings.Join(s, " "), u.Truncated)
	}
	var u api.UsageByModel
	e.getJSON(t, "/runs/"+id+"/usage", &u)
	if got, want := show(u), "1 runs judge:1/0:10+3:$0.25 truncated=false"; got != want {
		t.Errorf("own usage: %s, want %s", got, want)
	}
	e.getJSON(t, "/runs/"+id+"/usage?descendants=true", &u)
	if got, want := show(u), "3 runs broken:2/2:0+0:$0.00 judge:1/0:10+3:$0.25 m1:4/0:40+12:$1.00 m2:2/0:20+6:$0.50 truncated=false"; got != want {
		t.Errorf("usage with descendants: %s, want %s", got, want)
	}
	raw := e.do(t, http.MethodGet, "/runs/"+id+"/usage", nil)
	var m map[string]any
	if err := json.Unmarshal(raw.body, &m); err != nil || m["models"] == nil {
		t.Errorf("usage body %s", raw.body)
	}
	if r := e.do(t, http.MethodGet, "/runs/"+id+"/usage?descendants=yes", nil); r.status != http.StatusBadRequest {
		t.Errorf("descendants=yes: %d, want 400", r.status)
	}
	if r := e.do(t, http.MethodGet, "/runs/nope/usage", nil); r.status != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", r.status)
	}
}
