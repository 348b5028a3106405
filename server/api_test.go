package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
)

func TestHealth(t *testing.T) {
	e := newEnv(t)
	r := e.do(t, http.MethodGet, "/health", nil)
	if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
		t.Fatalf("GET /health = %d %s", r.status, r.body)
	}
	if r.header.Get("X-Request-ID") == "" {
		t.Errorf("no X-Request-ID header")
	}
}

func TestStartRunAndPoll(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		body string
	}{
		{"workflow field", `{"workflow":"test.log","settings":{},"task":"say hi"}`},
		{"workflow_type in settings", `{"settings":{"workflow_type":"test.log"},"task":"say hi"}`},
		{"no settings", `{"workflow":"test.log"}`},
		{"null settings", `{"workflow":"test.log","settings":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, "/start_workflow", strings.NewReader(tt.body))
			if r.status != http.StatusCreated {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var out api.RunStatus
			if err := json.Unmarshal(r.body, &out); err != nil {
				t.Fatal(err)
			}
			if out.RunID == "" || out.Status != state.StatusRunning {
				t.Fatalf("start = %+v, want a run id and status running", out)
			}
			if loc := r.header.Get("Location"); loc != "/runs/"+out.RunID {
				t.Errorf("Location = %q", loc)
			}
			v := e.waitStatus(t, out.RunID, state.StatusSucceeded)
			if v.ID != out.RunID || v.Workflow != "test.log" || v.Phase != "finish" || v.EndReason != "done" {
				t.Errorf("head = %+v", v)
			}
			if string(v.Result) != `{"answer":42}` {
				t.Errorf("result = %s", v.Result)
			}
			if v.CreatedAt.IsZero() || v.UpdatedAt.Before(v.CreatedAt) || v.EndedAt == nil {
				t.Errorf("times: created %v updated %v ended %v", v.CreatedAt, v.UpdatedAt, v.EndedAt)
			}
		})
	}
}

func TestRunHeadFields(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.fail", "")
	e.waitStatus(t, id, state.StatusFailed)
	r := e.do(t, http.MethodGet, "/runs/"+id, nil)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "workflow", "status", "phase", "parent_id", "usage", "limits",
		"end_reason", "result", "error", "created_at", "updated_at"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("head has no %q: %s", k, r.body)
		}
	}
	for _, k := range []string{"work_dir", "vars", "pending_end", "next"} {
		if _, ok := fields[k]; ok {
			t.Errorf("head leaks internal field %q", k)
		}
	}
}

func TestListRuns(t *testing.T) {
	e := newEnv(t)
	var ok, failed []string
	for i := 0; i < 3; i++ {
		ok = append(ok, e.start(t, "test.log", fmt.Sprint(i)))
	}
	for i := 0; i < 2; i++ {
		failed = append(failed, e.start(t, "test.fail", fmt.Sprint(i)))
	}
	for _, id := range ok {
		e.waitStatus(t, id, state.StatusSucceeded)
	}
	for _, id := range failed {
		e.waitStatus(t, id, state.StatusFailed)
	}

	type page struct {
		Runs []api.Run `json:"runs"`
		Next string    `json:"next"`
	}
	ids := func(p page) []string {
		var out []string
		for _, r := range p.Runs {
			out = append(out, r.ID)
		}
		return out
	}
	tests := []struct {
		name  string
		query string
		want  []string // newest first
	}{
		{"all", "", []string{failed[1], failed[0], ok[2], ok[1], ok[0]}},
		{"status", "?status=failed", []string{failed[1], failed[0]}},
		{"workflow", "?workflow=test.log", []string{ok[2], ok[1], ok[0]}},
		{"status and workflow", "?status=succeeded&workflow=test.fail", nil},
		{"running", "?status=running", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p page
			e.getJSON(t, "/runs"+tt.query, &p)
			if got := ids(p); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("runs = %v, want %v", got, tt.want)
			}
			if p.Runs == nil {
				t.Errorf("runs is null, want []")
			}
		})
	}

	t.Run("paginate", func(t *testing.T) {
		var all []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatalf("too many pages: %v", all)
			}
			var p page
			e.getJSON(t, "/runs?limit=2&after="+after, &p)
			if len(p.Runs) > 2 {
				t.Fatalf("page of %d runs with limit 2", len(p.Runs))
			}
			all = append(all, ids(p)...)
			if p.Next == "" {
				break
			}
			after = p.Next
		}
		want := []string{failed[1], failed[0], ok[2], ok[1], ok[0]}
		if fmt.Sprint(all) != fmt.Sprint(want) {
			t.Fatalf("pages = %v, want %v", all, want)
		}
	})
}

func TestEntries(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)

	type page struct {
		Entries []phases.Entry `json:"entries"`
		Next    string         `json:"next"`
	}
	// Three messages from "start", one log entry per log op, then "d".
	var p page
	e.getJSON(t, "/runs/"+id+"/entries", &p)
	var texts []string
	for i, en := range p.Entries {
		if en.Seq != uint64(i+1) {
			t.Errorf("entry %d has seq %d", i, en.Seq)
		}
		if en.Type == "message" {
			texts = append(texts, string(en.Data))
		}
	}
	if len(p.Entries) != 7 || strings.Join(texts, ",") != `"a","b","c","d"` || p.Next != "" {
		t.Fatalf("%d entries, messages %v, next %q", len(p.Entries), texts, p.Next)
	}

	tests := []struct {
		name     string
		query    string
		wantSeqs string
		wantNext string
	}{
		{"first page", "?limit=3", "[1 2 3]", "3"},
		{"second page", "?limit=3&after=3", "[4 5 6]", "6"},
		{"last page", "?limit=3&after=6", "[7]", ""},
		{"exact last page", "?limit=2&after=5", "[6 7]", ""},
		{"past the end", "?after=7", "[]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p page
			e.getJSON(t, "/runs/"+id+"/entries"+tt.query, &p)
			seqs := []uint64{}
			for _, en := range p.Entries {
				seqs = append(seqs, en.Seq)
			}
			if fmt.Sprint(seqs) != tt.wantSeqs || p.Next != tt.wantNext {
				t.Fatalf("seqs %v next %q, want %s next %q", seqs, p.Next, tt.wantSeqs, tt.wantNext)
			}
		})
	}
}

func TestOps(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)

	type page struct {
		Ops  []json.RawMessage `json:"ops"`
		Next string            `json:"next"`
	}
	var all page
	e.getJSON(t, "/runs/"+id+"/ops", &all)
	if len(all.Ops) != 3 || all.Next != "" {
		t.Fatalf("ops = %d next %q", len(all.Ops), all.Next)
	}
	for i, raw := range all.Ops {
		var op struct {
			ID         string          `json:"id"`
			Status     string          `json:"status"`
			Request    json.RawMessage `json:"request"`
			Result     json.RawMessage `json:"result"`
			CreatedAt  string          `json:"created_at"`
			FinishedAt *string         `json:"finished_at"`
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Fatal(err)
		}
		if op.ID != fmt.Sprintf("%s/1/%d", id, i) || op.Status != string(state.OpDone) {
			t.Errorf("op %d: id %q status %q", i, op.ID, op.Status)
		}
		if !strings.Contains(string(op.Request), `"log"`) || len(op.Result) == 0 || op.CreatedAt == "" || op.FinishedAt == nil {
			t.Errorf("op %d lacks request, result or timings: %s", i, raw)
		}
	}

	var first, second page
	e.getJSON(t, "/runs/"+id+"/ops?limit=2", &first)
	if len(first.Ops) != 2 || first.Next != id+"/1/1" {
		t.Fatalf("first page: %d ops, next %q", len(first.Ops), first.Next)
	}
	e.getJSON(t, "/runs/"+id+"/ops?limit=2&after="+first.Next, &second)
	if len(second.Ops) != 1 || second.Next != "" || string(second.Ops[0]) != string(all.Ops[2]) {
		t.Fatalf("second page: %d ops, next %q", len(second.Ops), second.Next)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.wait", "")
	// Wait until the bash op is in flight.
	e.waitOps(t, id, 1)
	if v := e.head(t, id); v.Status != state.StatusRunning {
		t.Fatalf("status %s before cancel", v.Status)
	}

	tests := []struct {
		name       string
		wantStatus int
		wantBody   string
	}{
		{"running run", http.StatusOK, `"status":"cancelled"`},
		{"ended run", http.StatusConflict, `has already ended (cancelled)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, "/runs/"+id+"/cancel", nil)
			if r.status != tt.wantStatus || !strings.Contains(string(r.body), tt.wantBody) {
				t.Fatalf("cancel = %d %s, want %d with %s", r.status, r.body, tt.wantStatus, tt.wantBody)
			}
		})
	}
	if v := e.head(t, id); v.Status != state.StatusCancelled || v.EndReason != state.ReasonCancelled {
		t.Fatalf("after cancel: status %s reason %q", v.Status, v.EndReason)
	}
}

func TestWorkflows(t *testing.T) {
	e := newEnv(t)
	var out struct {
		Workflows []phases.Graph `json:"workflows"`
	}
	e.getJSON(t, "/workflows", &out)
	var names []string
	for _, g := range out.Workflows {
		names = append(names, g.Name)
	}
	if fmt.Sprint(names) != "[test.fail test.log test.parent test.wait]" {
		t.Fatalf("workflows = %v", names)
	}
	g := out.Workflows[1]
	if g.Start != "start" || g.Source != "builtin" || g.Description == "" ||
		fmt.Sprint(g.Phases) != "[start finish]" || fmt.Sprint(g.Transitions) != "map[finish:[] start:[finish]]" {
		t.Fatalf("graph = %+v", g)
	}
}

func TestPauseResume(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.wait", "")
	e.waitOps(t, id, 1)
	tests := []struct {
		name, action string
		wantStatus   int
		wantBody     string
	}{
		{"resume a running run", "resume", http.StatusConflict, `is not paused (running)`},
		{"pause", "pause", http.StatusOK, `"status":"paused"`},
		{"pause again", "pause", http.StatusOK, `"status":"paused"`},
		{"resume", "resume", http.StatusOK, `"status":"running"`},
		{"cancel", "cancel", http.StatusOK, `"status":"cancelled"`},
		{"pause an ended run", "pause", http.StatusConflict, `has already ended (cancelled)`},
		{"resume an ended run", "resume", http.StatusConflict, `is not paused (cancelled)`},
		{"unknown run", "pause", http.StatusNotFound, `not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := id
			if tt.name == "unknown run" {
				target = "nosuchrun"
			}
			r := e.do(t, http.MethodPost, "/runs/"+target+"/"+tt.action, nil)
			if r.status != tt.wantStatus || !strings.Contains(string(r.body), tt.wantBody) {
				t.Fatalf("%s = %d %s, want %d with %s", tt.action, r.status, r.body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}
