package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
)

func newOperatorEnv(tb testing.TB) *env {
	tb.Helper()
	return newEnvSetup(tb, envSetup{operator: true})
}

// fork POSTs a fork request and returns the new run's id.
func (e *env) fork(tb testing.TB, id, body string) string {
	tb.Helper()
	r := e.do(tb, http.MethodPost, "/runs/"+id+"/fork", strings.NewReader(body))
	if r.status != http.StatusCreated {
		tb.Fatalf("fork %s %s: status %d: %s", id, body, r.status, r.body)
	}
	var out api.Forked
	if err := json.Unmarshal(r.body, &out); err != nil || out.RunID == "" {
		tb.Fatalf("fork: bad body %q (%v)", r.body, err)
	}
	if loc := r.header.Get("Location"); loc != "/runs/"+out.RunID {
		tb.Errorf("fork: Location %q", loc)
	}
	return out.RunID
}

func files(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("read %s: %v", dir, err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func keys(m map[string]string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// TestForkFromStep forks a finished run at step 3 over HTTP: the fork
// starts with the source's entries and ops up to step 3, its vars and
// usage, the work directory as step 3 left it (n1..n3.txt, not n4, n5),
// a forked_from link, and runs to the end on its own.
func TestForkFromStep(t *testing.T) {
	e := newOperatorEnv(t)
	src := e.start(t, "test.count", "count")
	done := e.waitStatus(t, src, state.StatusSucceeded)
	if string(done.Result) != `{"n":5,"note":""}` {
		t.Fatalf("source result %s", done.Result)
	}
	srcHead, _ := e.store.Run(t.Context(), src)
	if got := keys(files(t, srcHead.WorkDir)); got != "n1.txt,n2.txt,n3.txt,n4.txt,n5.txt" {
		t.Fatalf("source work dir: %s", got)
	}

	id := e.fork(t, src, `{"step": 3}`)
	fh, err := e.store.Run(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if fh.ForkedFrom == nil || *fh.ForkedFrom != (state.ForkRef{Run: src, Step: 3}) {
		t.Fatalf("forked_from %+v", fh.ForkedFrom)
	}
	end := e.waitStatus(t, id, state.StatusSucceeded)
	if string(end.Result) != `{"n":5,"note":""}` {
		t.Errorf("fork result %s, want n 5", end.Result)
	}
	if end.ForkedFrom == nil || end.ForkedFrom.Run != src || end.ForkedFrom.Step != 3 {
		t.Errorf("view forked_from %+v", end.ForkedFrom)
	}
	// The fork's log: the source's first 3 steps' entries, then its own.
	var ents api.Entries
	e.getJSON(t, "/runs/"+id+"/entries?limit=100", &ents)
	var texts []string
	for _, en := range ents.Entries {
		if en.Type == "message" {
			texts = append(texts, string(en.Data))
		}
	}
	if got := strings.Join(texts, " "); got != `"step 1" "step 2" "step 3" "step 4" "step 5"` {
		t.Errorf("fork entries %s", got)
	}
	// Ops of steps 1..3 copied under the fork's ids, done; 4, 5 its own.
	var ops api.Ops
	e.getJSON(t, "/runs/"+id+"/ops", &ops)
	if len(ops.Ops) != 5 || ops.Ops[0].ID != id+"/1/0" || ops.Ops[2].Result == nil {
		t.Errorf("fork ops %+v", ops.Ops)
	}
	if got := keys(files(t, fh.WorkDir)); got != "n1.txt,n2.txt,n3.txt,n4.txt,n5.txt" {
		t.Errorf("fork work dir: %s", got)
	}
}

// TestForkEditedVarsAndMessage forks at step 3 with var n set to 10 and an
// injected message: the fork counts on from 10 (writes n11.txt and ends),
// its work dir holds step 3's files only plus its own, and the done phase
// sees the operator's message in the log.
func TestForkEditedVarsAndMessage(t *testing.T) {
	e := newOperatorEnv(t)
	src := e.start(t, "test.count", "count")
	e.waitStatus(t, src, state.StatusSucceeded)
	id := e.fork(t, src, `{"step": 3, "vars": {"n": 10}, "message": "skip ahead"}`)
	end := e.waitStatus(t, id, state.StatusSucceeded)
	if string(end.Result) != `{"n":11,"note":"skip ahead"}` {
		t.Errorf("fork result %s", end.Result)
	}
	fh, _ := e.store.Run(t.Context(), id)
	got := files(t, fh.WorkDir)
	if keys(got) != "n1.txt,n11.txt,n2.txt,n3.txt" || got["n3.txt"] != "n=3" || got["n11.txt"] != "n=11" {
		t.Errorf("fork work dir %v", got)
	}
	var ents api.Entries
	e.getJSON(t, "/runs/"+id+"/entries", &ents)
	found := false
	for _, en := range ents.Entries {
		if en.Type == "operator_message" {
			found = en.Seq == 4 && strings.Contains(string(en.Data), `"content":"skip ahead"`)
		}
	}
	if !found {
		t.Errorf("no operator_message entry after the step-3 entries: %+v", ents.Entries)
	}
	// A fork of the fork from before its fork step reads the origin.
	id2 := e.fork(t, id, `{"step": 2}`)
	if end := e.waitStatus(t, id2, state.StatusSucceeded); string(end.Result) != `{"n":5,"note":""}` {
		t.Errorf("fork of fork at 2: result %s", end.Result)
	}
	// And one from after its fork step sees the edits.
	id3 := e.fork(t, id, `{"step": 4}`)
	if end := e.waitStatus(t, id3, state.StatusSucceeded); string(end.Result) != `{"n":11,"note":"skip ahead"}` {
		t.Errorf("fork of fork at 4: result %s", end.Result)
	}
}

// TestForkBadRequests: clear 400s and 404s.
func TestForkBadRequests(t *testing.T) {
	e := newOperatorEnv(t)
	src := e.start(t, "test.count", "count")
	e.waitStatus(t, src, state.StatusSucceeded)
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"no step", `{}`, 400, "step"},
		{"step past the end", `{"step": 99}`, 400, "run " + src + " is at step 6"},
		{"negative step", `{"step": -1}`, 400, "step"},
		{"vars not an object", `{"step": 1, "vars": [1]}`, 400, "vars"},
		{"unknown field", `{"step": 1, "stpe": 2}`, 400, `"stpe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, "/runs/"+src+"/fork", strings.NewReader(tc.body))
			if r.status != tc.status || !strings.Contains(r.errorMessage(t), tc.want) {
				t.Errorf("status %d %q, want %d containing %q", r.status, r.body, tc.status, tc.want)
			}
		})
	}
	r := e.do(t, http.MethodPost, "/runs/nope/fork", strings.NewReader(`{"step": 1}`))
	if r.status != http.StatusNotFound {
		t.Errorf("unknown run: %d %s", r.status, r.body)
	}
}

// questions GETs a run's pending questions.
func (e *env) questions(tb testing.TB, id string) []api.Question {
	tb.Helper()
	var q api.Questions
	e.getJSON(tb, "/runs/"+id+"/human", &q)
	return q.Pending
}

func (e *env) answer(tb testing.TB, id, op, body string) response {
	tb.Helper()
	return e.do(tb, http.MethodPost, "/runs/"+id+"/human/"+url.PathEscape(op)+"/answer", strings.NewReader(body))
}

// TestHumanAnswer: a run asking a human op parks (no goroutine: it is
// not in the active runs' goroutines, only registered) until answered
// over HTTP; a wrong op id is 404, an answer outside the choices 400, a
// second answer 409; the answer is the op's journaled result.
func TestHumanAnswer(t *testing.T) {
	e := newOperatorEnv(t)
	id := e.start(t, "test.ask", "")
	var qs []api.Question
	testkit.WaitFor(t, "the question", func() bool { qs = e.questions(t, id); return len(qs) == 1 })
	q := qs[0]
	if q.OpID != id+"/1/0" || q.Kind != "human" || q.Question != "Ship it?" || strings.Join(q.Choices, ",") != "yes,no" || q.AskedAt.IsZero() {
		t.Fatalf("question %+v", q)
	}
	// A run that parks for an answer tells its live subscribers which
	// op waits (a live-only event): pause, follow, resume.
	if r := e.do(t, http.MethodPost, "/runs/"+id+"/pause", nil); r.status != http.StatusOK {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	stream := e.openEvents(t, id, "")
	if r := e.do(t, http.MethodPost, "/runs/"+id+"/resume", nil); r.status != http.StatusOK {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	for {
		ev, ok := stream.next(t)
		if !ok {
			t.Fatal("stream ended before the waiting event")
		}
		if ev.data.Seq == 0 && ev.data.Status == "waiting" {
			if ev.data.OpID != q.OpID || ev.data.Kind != "human" || ev.data.Message != "waiting for an answer: Ship it?" {
				t.Errorf("waiting event %+v", ev.data)
			}
			break
		}
	}
	stream.close()
	if r := e.answer(t, id, id+"/1/1", `{"answer":"yes"}`); r.status != http.StatusNotFound {
		t.Errorf("wrong op: %d %s", r.status, r.body)
	}
	if r := e.answer(t, id, "garbage", `{"answer":"yes"}`); r.status != http.StatusNotFound {
		t.Errorf("garbage op: %d %s", r.status, r.body)
	}
	if r := e.answer(t, id, q.OpID, `{"answer":"maybe"}`); r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(t), "not one of the choices") {
		t.Errorf("bad choice: %d %s", r.status, r.body)
	}
	if r := e.answer(t, id, q.OpID, `{}`); r.status != http.StatusBadRequest {
		t.Errorf("no answer: %d %s", r.status, r.body)
	}
	if r := e.answer(t, id, q.OpID, `{"answer":"yes"}`); r.status != http.StatusOK || string(r.body) != `{"ok":true}`+"\n" && string(r.body) != `{"ok":true}` {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	if r := e.answer(t, id, q.OpID, `{"answer":"no"}`); r.status != http.StatusConflict {
		t.Errorf("second answer: %d %s", r.status, r.body)
	}
	end := e.waitStatus(t, id, state.StatusSucceeded)
	if string(end.Result) != `{"answer":"yes"}` {
		t.Errorf("result %s", end.Result)
	}
	var ops api.Ops
	e.getJSON(t, "/runs/"+id+"/ops", &ops)
	if ops.Ops[0].Result == nil || !strings.Contains(string(ops.Ops[0].Result.Data), `"answer":"yes"`) {
		t.Errorf("journaled result %+v", ops.Ops[0].Result)
	}
	if got := e.questions(t, id); len(got) != 0 {
		t.Errorf("questions after the end: %+v", got)
	}
}

// TestHumanAnswerAcrossRestart: the server stops while a run waits for an
// answer; a new server on the same data directory resumes it, still
// waiting, and takes the answer.
func TestHumanAnswerAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	e := newEnvSetup(t, envSetup{dir: dir, operator: true})
	id := e.start(t, "test.ask", "")
	testkit.WaitFor(t, "the question", func() bool { return len(e.questions(t, id)) == 1 })
	e.stop(t)

	e2 := newEnvSetup(t, envSetup{dir: dir, operator: true})
	qs := e2.questions(t, id)
	if len(qs) != 1 {
		t.Fatalf("questions after restart: %+v", qs)
	}
	if got := e2.ex.Active(); len(got) != 1 || got[0] != id {
		t.Errorf("active after restart %v", got)
	}
	if r := e2.answer(t, id, qs[0].OpID, `{"answer":"no"}`); r.status != http.StatusOK {
		t.Fatalf("answer after restart: %d %s", r.status, r.body)
	}
	if end := e2.waitStatus(t, id, state.StatusSucceeded); string(end.Result) != `{"answer":"no"}` {
		t.Errorf("result %s", end.Result)
	}
}

// TestHumanAnswerPaused: a paused run's question can be answered; the
// run reads the answer when resumed.
func TestHumanAnswerPaused(t *testing.T) {
	e := newOperatorEnv(t)
	id := e.start(t, "test.ask", "")
	testkit.WaitFor(t, "the question", func() bool { return len(e.questions(t, id)) == 1 })
	if r := e.do(t, http.MethodPost, "/runs/"+id+"/pause", nil); r.status != http.StatusOK {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	if r := e.answer(t, id, id+"/1/0", `{"answer":"yes"}`); r.status != http.StatusOK {
		t.Fatalf("answer paused: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPost, "/runs/"+id+"/resume", nil); r.status != http.StatusOK {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if end := e.waitStatus(t, id, state.StatusSucceeded); string(end.Result) != `{"answer":"yes"}` {
		t.Errorf("result %s", end.Result)
	}
}

// TestInterveneNotWaiting: /intervene on a run with no intervention is a
// 409; a bad body a 400.
func TestInterveneNotWaiting(t *testing.T) {
	e := newOperatorEnv(t)
	id := e.start(t, "test.ask", "")
	testkit.WaitFor(t, "the question", func() bool { return len(e.questions(t, id)) == 1 })
	r := e.do(t, http.MethodPost, "/runs/"+id+"/intervene", strings.NewReader(`{"action":{"name":"bash","arguments":{"command":"ls"}}}`))
	if r.status != http.StatusConflict {
		t.Errorf("not waiting: %d %s", r.status, r.body)
	}
	r = e.do(t, http.MethodPost, "/runs/"+id+"/intervene", strings.NewReader(`{"action":"ls"}`))
	if r.status != http.StatusBadRequest {
		t.Errorf("bad action: %d %s", r.status, r.body)
	}
}
