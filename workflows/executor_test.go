package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/handlers"
	_ "github.com/flockrun/flock/handlers/spawn"
	"github.com/flockrun/flock/handlers/task"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/workflows"
)

// env bundles a store file and the pieces to (re)build an executor on it.
type env struct {
	t        testing.TB
	dir      string
	store    *bolt.Store
	reg      *phases.Registry
	handlers map[operations.Kind]handlers.Handler
	ex       *workflows.Executor
	// refusals says the test makes the store refuse commits on purpose.
	refusals bool
	// configure, if set, edits the executor's Config before each open.
	configure func(*workflows.Config)
}

func newEnv(t testing.TB, reg *phases.Registry, hs map[operations.Kind]handlers.Handler) *env {
	t.Helper()
	return newEnvWith(t, reg, hs, nil)
}

// newEnvWith is newEnv whose executor's Config configure edits.
func newEnvWith(t testing.TB, reg *phases.Registry, hs map[operations.Kind]handlers.Handler, configure func(*workflows.Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), reg: reg, handlers: hs, configure: configure}
	if e.handlers == nil {
		e.handlers = map[operations.Kind]handlers.Handler{}
	}
	th := task.New()
	for _, k := range task.Kinds() {
		if e.handlers[k] == nil {
			e.handlers[k] = th
		}
	}
	e.open()
	t.Cleanup(func() { e.close() })
	return e
}

func (e *env) open() {
	e.t.Helper()
	st := teststore.OpenAt(e.t, e.dir)
	e.store = st
	hs := make(map[operations.Kind]handlers.Handler, len(e.handlers)+1)
	for k, h := range e.handlers {
		hs[k] = h
	}
	infos := handlers.FromMap(hs)
	if _, ok := hs[operations.KindSpawn]; !ok {
		sp, _ := handlers.Lookup(operations.KindSpawn)
		infos = append(infos, sp)
	}
	cfg := workflows.Config{Store: st, Registry: e.reg, Handlers: infos,
		RunsDir: filepath.Join(e.dir, "runs"), Concurrency: map[string]int{"bash": 4}}
	if e.configure != nil {
		e.configure(&cfg)
	}
	ex, err := workflows.New(cfg)
	if err != nil {
		e.t.Fatalf("new executor: %v", err)
	}
	if err := ex.Start(context.Background()); err != nil {
		e.t.Fatalf("start executor: %v", err)
	}
	e.ex = ex
}

func (e *env) close() {
	if e.ex == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.ex.Stop(ctx); err != nil {
		e.t.Errorf("stop executor: %v", err)
	}
	// The executor's own commits are never refused: its revisions follow
	// the heads it wrote (fencing never trips on the normal path).
	if st := e.store.Stats(); st.Rejected != 0 && !e.refusals && !e.t.Failed() {
		e.t.Errorf("the store refused %d of the executor's commits", st.Rejected)
	}
	if err := e.store.Close(); err != nil {
		e.t.Errorf("close store: %v", err)
	}
	e.ex = nil
}

func (e *env) restart() {
	e.t.Helper()
	e.close()
	e.open()
}

func (e *env) start(wf, settings, taskText string) state.Run {
	e.t.Helper()
	if settings == "" {
		settings = "{}"
	}
	return testrun.Start(e.t, e.ex, workflows.StartRequest{Workflow: wf, Settings: json.RawMessage(settings), Task: taskText})
}

func (e *env) wait(id string) state.Run {
	e.t.Helper()
	return testrun.Wait(e.t, e.ex, id)
}

func (e *env) entries(id string) []phases.Entry {
	e.t.Helper()
	es, err := e.store.Entries(context.Background(), id, 0, 10000)
	if err != nil {
		e.t.Fatal(err)
	}
	return es
}

// counter is a test workflow: it logs n times, then submits the count.
func counter(n int) phases.Workflow {
	step := func(in phases.Input) (phases.Output, error) {
		var i int
		if _, err := phases.GetVar(in.State, "i", &i); err != nil {
			return phases.Output{}, err
		}
		out := phases.Output{Append: []phases.Entry{phases.MustEntry("tick", map[string]int{"i": i})}}
		if err := out.SetVar("i", i+1); err != nil {
			return out, err
		}
		if i+1 >= n {
			out.Ops = []operations.Request{operations.NewSubmit(fmt.Sprint(i + 1))}
			return out, nil
		}
		out.Ops = []operations.Request{operations.NewLog(fmt.Sprintf("tick %d", i))}
		out.Next = "step"
		return out, nil
	}
	return phases.Workflow{Name: "counter", Start: "step",
		Phases: []phases.PhaseSpec{{Name: "step", Run: step, Next: []string{"step"}}}}
}

func TestRunToCompletion(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(counter(5))
	e := newEnv(t, reg, nil)
	h := e.start("counter", "", "count to five")
	if h.Status != state.StatusRunning {
		t.Fatalf("new run status = %s", h.Status)
	}
	end := e.wait(h.ID)
	if end.Status != state.StatusSucceeded || string(end.Result) != `"5"` {
		t.Fatalf("end = %s result %s err %q", end.Status, end.Result, end.Error)
	}
	var ticks, logs, subs int
	for i, en := range e.entries(h.ID) {
		if en.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i, en.Seq)
		}
		switch en.Type {
		case "tick":
			ticks++
		case "log":
			logs++
		case "submission":
			subs++
		}
	}
	if ticks != 5 || logs != 4 || subs != 1 {
		t.Fatalf("ticks=%d logs=%d submissions=%d", ticks, logs, subs)
	}
	if end.Usage.Actions != 1 {
		t.Fatalf("actions = %d, want 1 (the submit)", end.Usage.Actions)
	}
	ops, err := e.store.Ops(context.Background(), h.ID, "", 100)
	if err != nil || len(ops) != 5 {
		t.Fatalf("ops = %d, %v", len(ops), err)
	}
	for _, op := range ops {
		if op.Status != state.OpDone || op.Result == nil || op.FinishedAt == nil {
			t.Fatalf("op %s not finished: %+v", op.ID, op)
		}
	}
	evs, err := e.store.Events(context.Background(), h.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Type != "run" || last.Status != "succeeded" {
		t.Fatalf("last event = %+v", last)
	}
}

func TestPhaseFailures(t *testing.T) {
	boom := func(in phases.Input) (phases.Output, error) { panic("boom") }
	bad := func(in phases.Input) (phases.Output, error) { return phases.Output{Next: "nowhere"}, nil }
	errs := func(in phases.Input) (phases.Output, error) { return phases.Output{}, errors.New("settings are wrong") }
	badOp := func(in phases.Input) (phases.Output, error) {
		return phases.Output{Ops: []operations.Request{{Kind: operations.KindBash}}}, nil
	}
	tests := []struct {
		name  string
		fn    phases.Phase
		error string
	}{
		{name: "panic", fn: boom, error: "phase p panicked: boom"},
		{name: "undeclared next", fn: bad, error: `returned next "nowhere"`},
		{name: "error", fn: errs, error: "phase p: settings are wrong"},
		{name: "op without params", fn: badOp, error: "bash request has no params"},
	}
	reg := phases.NewRegistry()
	for _, tt := range tests {
		reg.MustRegister(phases.Workflow{Name: strings.ReplaceAll(tt.name, " ", "_"), Start: "p",
			Phases: []phases.PhaseSpec{{Name: "p", Run: tt.fn}}})
	}
	reg.MustRegister(counter(3))
	e := newEnv(t, reg, nil)
	ok := e.start("counter", "", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := e.start(strings.ReplaceAll(tt.name, " ", "_"), "", "")
			end := e.wait(h.ID)
			if end.Status != state.StatusFailed || end.EndReason != state.ReasonPhaseError || !strings.Contains(end.Error, tt.error) {
				t.Fatalf("got %s/%s %q, want failed with %q", end.Status, end.EndReason, end.Error, tt.error)
			}
			// A panic's stack goes to the server log, never into the
			// run's error (issue 23.7).
			if strings.Contains(end.Error, "\n") || strings.Contains(end.Error, "goroutine") {
				t.Fatalf("the run's error holds a stack: %q", end.Error)
			}
		})
	}
	if end := e.wait(ok.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("an unrelated run was affected: %s %s", end.Status, end.Error)
	}
}

func TestStartValidation(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(counter(1))
	e := newEnv(t, reg, nil)
	tests := []struct {
		name     string
		req      workflows.StartRequest
		sentinel error
		text     string
	}{
		{name: "unknown workflow", req: workflows.StartRequest{Workflow: "nope"}, sentinel: workflows.ErrUnknownWorkflow, text: `"nope"`},
		{name: "no workflow", req: workflows.StartRequest{}, sentinel: workflows.ErrBadRequest, text: "workflow: required"},
		{name: "settings not object", req: workflows.StartRequest{Workflow: "counter", Settings: json.RawMessage(`[1]`)}, sentinel: workflows.ErrBadRequest, text: "settings: must be a JSON object"},
		{name: "bad limit", req: workflows.StartRequest{Workflow: "counter", Settings: json.RawMessage(`{"limits":{"tokens":-1}}`)}, sentinel: workflows.ErrBadRequest, text: "limits.tokens"},
		{name: "wrong type", req: workflows.StartRequest{Workflow: "counter", Settings: json.RawMessage(`{"limits":{"tokens":"many"}}`)}, sentinel: workflows.ErrBadRequest, text: "limits.tokens"},
		{name: "workflow and workflow_type disagree", req: workflows.StartRequest{Workflow: "counter", Settings: json.RawMessage(`{"workflow_type":"triframe"}`)},
			sentinel: workflows.ErrBadRequest, text: `workflow "counter" and settings.workflow_type "triframe"`},
		// A typo in the workflow beside settings naming the right one is
		// answered as the typo it is, not as a disagreement.
		{name: "workflow typo beside workflow_type", req: workflows.StartRequest{Workflow: "cuonter", Settings: json.RawMessage(`{"workflow_type":"counter"}`)},
			sentinel: workflows.ErrUnknownWorkflow, text: `"cuonter" is not registered; did you mean "counter"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.ex.StartRun(context.Background(), tt.req)
			if !errors.Is(err, tt.sentinel) || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.sentinel, tt.text)
			}
		})
	}
	// A refused start names the typo that likely caused it.
	strict := counter(1)
	strict.Name = "strict"
	strict.Settings = struct {
		Actors []string `json:"actors"`
	}{}
	strict.CheckSettings = func(doc json.RawMessage) error {
		var s struct {
			Actors []string `json:"actors"`
		}
		if json.Unmarshal(doc, &s) != nil || len(s.Actors) == 0 {
			return errors.New("actors: required")
		}
		return nil
	}
	reg.MustRegister(strict)
	_, err := e.ex.StartRun(context.Background(), workflows.StartRequest{Workflow: "strict", Settings: json.RawMessage(`{"actor":["a"]}`)})
	if want := `actors: required (also: unknown settings key "actor" (did you mean "actors"?))`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("refused start: err = %v, want it to contain %q", err, want)
	}
	// Both naming the same workflow agree.
	if _, err := e.ex.StartRun(context.Background(), workflows.StartRequest{Workflow: "counter", Settings: json.RawMessage(`{"workflow_type":"counter"}`)}); err != nil {
		t.Fatalf("workflow and the same workflow_type: %v", err)
	}
	// Flock style: the workflow named inside the settings.
	h, err := e.ex.StartRun(context.Background(), workflows.StartRequest{Settings: json.RawMessage(`{"workflow_type":"counter"}`)})
	if err != nil || h.Workflow != "counter" {
		t.Fatalf("workflow_type start: %v %+v", err, h)
	}
}

// blocker is a handler whose ops block until released or cancelled, and
// that counts calls per op id.
type blocker struct {
	mu      sync.Mutex
	calls   map[string]int
	started chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{calls: map[string]int{}, started: make(chan string, 100), release: make(chan struct{})}
}

func (b *blocker) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	b.mu.Lock()
	b.calls[env.OpID]++
	b.mu.Unlock()
	b.started <- env.OpID
	select {
	case <-b.release:
		return operations.Result{Kind: req.Kind, Data: &operations.BashResult{Stdout: "done"}}
	case <-ctx.Done():
		return operations.Failed(req, "interrupted")
	}
}

func (b *blocker) count(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[id]
}

// fanout asks for k bash ops and ends.
func fanout(k int) phases.Workflow {
	first := func(in phases.Input) (phases.Output, error) {
		out := phases.Output{Next: "last"}
		for i := 0; i < k; i++ {
			out.Ops = append(out.Ops, operations.NewBash(fmt.Sprintf("op %d", i), 0))
		}
		return out, nil
	}
	last := func(in phases.Input) (phases.Output, error) {
		var outs []string
		for _, r := range in.Results {
			if operations.Bash.Result(r) != nil {
				outs = append(outs, operations.Bash.Result(r).Stdout)
			} else {
				outs = append(outs, "error: "+r.Error)
			}
		}
		res, _ := json.Marshal(outs)
		return phases.Output{End: &phases.End{Result: res}}, nil
	}
	return phases.Workflow{Name: "fanout", Start: "first", Phases: []phases.PhaseSpec{
		{Name: "first", Run: first, Next: []string{"last"}}, {Name: "last", Run: last}}}
}

func TestCancel(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(3))
	b := newBlocker()
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: b})
	h := e.start("fanout", "", "")
	for i := 0; i < 3; i++ {
		<-b.started
	}
	if err := e.ex.Cancel(context.Background(), h.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	end := e.wait(h.ID)
	if end.Status != state.StatusCancelled || end.EndReason != state.ReasonCancelled {
		t.Fatalf("end = %s/%s", end.Status, end.EndReason)
	}
	if err := e.ex.Cancel(context.Background(), h.ID); !errors.Is(err, workflows.ErrEnded) {
		t.Fatalf("second cancel: %v, want ErrEnded", err)
	}
	if err := e.ex.Cancel(context.Background(), "nosuchrun"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
}

func TestResumeAfterStop(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(3))
	b := newBlocker()
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: b})
	h := e.start("fanout", "", "")
	for i := 0; i < 3; i++ {
		<-b.started
	}
	e.restart() // ops were interrupted by the stop: not journaled
	for i := 0; i < 3; i++ {
		<-b.started
	}
	close(b.release)
	end := e.wait(h.ID)
	if end.Status != state.StatusSucceeded || string(end.Result) != `["done","done","done"]` {
		t.Fatalf("end = %s %s %q", end.Status, end.Result, end.Error)
	}
	for i := 0; i < 3; i++ {
		id := state.OpID(h.ID, 1, i)
		if n := b.count(id); n != 2 {
			t.Fatalf("op %s ran %d times, want 2 (once before the stop, once after)", id, n)
		}
	}
}

func TestResumeSkipsJournaledOps(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(2))
	var calls sync.Map
	gate := make(chan struct{})
	h := handlers.HandlerFunc(func(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
		n, _ := calls.LoadOrStore(env.OpID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if strings.HasSuffix(env.OpID, "/1") {
			select { // the second op hangs until after the restart
			case <-gate:
			case <-ctx.Done():
				return operations.Failed(req, "interrupted")
			}
		}
		return operations.Result{Kind: req.Kind, Data: &operations.BashResult{Stdout: env.OpID}}
	})
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: h})
	run := e.start("fanout", "", "")
	first := state.OpID(run.ID, 1, 0)
	testkit.WaitFor(t, "first op journaled", func() bool {
		ops, _ := e.store.StepOps(context.Background(), run.ID, 1)
		return len(ops) == 2 && ops[0].Status == state.OpDone
	})
	e.restart()
	close(gate)
	end := e.wait(run.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("end = %s %q", end.Status, end.Error)
	}
	n, _ := calls.Load(first)
	if got := n.(*atomic.Int32).Load(); got != 1 {
		t.Fatalf("journaled op ran %d times after resume, want 1", got)
	}
}

func TestLimits(t *testing.T) {
	gen := handlers.HandlerFunc(func(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
		return operations.Result{Kind: req.Kind, Data: &operations.GenerateResult{
			Outputs: []operations.Output{{Content: "x"}}, Usage: operations.Usage{PromptTokens: 60, CompletionTokens: 40, Cost: 0.5}}}
	})
	bash := handlers.HandlerFunc(func(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
		return operations.Result{Kind: req.Kind, Data: &operations.BashResult{}}
	})
	loop := func(in phases.Input) (phases.Output, error) {
		return phases.Output{Next: "loop", Ops: []operations.Request{
			operations.NewGenerate(operations.GenerateRequest{Model: "m"}), operations.NewBash("true", 0)}}, nil
	}
	reg := phases.NewRegistry()
	reg.MustRegister(phases.Workflow{Name: "loop", Start: "loop", Phases: []phases.PhaseSpec{{Name: "loop", Run: loop, Next: []string{"loop"}}}})
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindGenerate: gen, operations.KindBash: bash})
	tests := []struct {
		name     string
		settings string
		reason   string
	}{
		{name: "tokens", settings: `{"limits":{"tokens":450}}`, reason: state.ReasonLimitTokens},
		{name: "actions", settings: `{"limits":{"actions":3}}`, reason: state.ReasonLimitActions},
		{name: "cost", settings: `{"limits":{"cost":2}}`, reason: state.ReasonLimitCost},
		{name: "time", settings: `{"limits":{"seconds":0.2}}`, reason: state.ReasonLimitTime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end := e.wait(e.start("loop", tt.settings, "").ID)
			if end.Status != state.StatusFailed || end.EndReason != tt.reason {
				t.Fatalf("end = %s/%s, want failed/%s", end.Status, end.EndReason, tt.reason)
			}
			switch tt.name {
			case "tokens":
				if end.Usage.Tokens != 500 {
					t.Fatalf("tokens = %d, want 500", end.Usage.Tokens)
				}
			case "actions":
				if end.Usage.Actions != 3 {
					t.Fatalf("actions = %d", end.Usage.Actions)
				}
			}
		})
	}
}

func TestSpawnAndCancelChildren(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(counter(3))
	reg.MustRegister(fanout(1))
	parent := func(in phases.Input) (phases.Output, error) {
		if len(in.Results) == 0 {
			return phases.Output{Next: "parent", Ops: []operations.Request{
				operations.NewSpawn(operations.SpawnRequest{Workflow: "counter", Name: "a"}),
				operations.NewSpawn(operations.SpawnRequest{Workflow: "counter", Name: "b"}),
			}}, nil
		}
		var got []string
		for i, r := range in.Results {
			if operations.Spawn.Result(r) == nil {
				return phases.Output{}, fmt.Errorf("spawn failed: %s", r.Error)
			}
			got = append(got, string(operations.Spawn.Result(r).Status)+":"+string(operations.Spawn.Result(r).Result))
			// The result names the child's work directory, so that the
			// parent need not know where spawn puts it.
			if want := filepath.Join(in.Run.WorkDir, "children", []string{"a", "b"}[i]); operations.Spawn.Result(r).WorkDir != want {
				return phases.Output{}, fmt.Errorf("child work dir %q, want %q", operations.Spawn.Result(r).WorkDir, want)
			}
		}
		res, _ := json.Marshal(strings.Join(got, ","))
		return phases.Output{End: &phases.End{Result: res}}, nil
	}
	reg.MustRegister(phases.Workflow{Name: "parent", Start: "parent", Phases: []phases.PhaseSpec{{Name: "parent", Run: parent, Next: []string{"parent"}}}})
	hang := func(in phases.Input) (phases.Output, error) {
		return phases.Output{Next: "wait", Ops: []operations.Request{operations.NewSpawn(operations.SpawnRequest{Workflow: "fanout"})}}, nil
	}
	reg.MustRegister(phases.Workflow{Name: "hang", Start: "hang", Phases: []phases.PhaseSpec{
		{Name: "hang", Run: hang, Next: []string{"wait"}},
		{Name: "wait", Run: func(phases.Input) (phases.Output, error) { return phases.Output{}, nil }}}})
	b := newBlocker()
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: b})

	end := e.wait(e.start("parent", "", "").ID)
	if end.Status != state.StatusSucceeded || string(end.Result) != `"succeeded:\"3\",succeeded:\"3\""` {
		t.Fatalf("parent end = %s %s %q", end.Status, end.Result, end.Error)
	}
	if end.Usage.Actions != 2 {
		t.Fatalf("parent actions = %d, want the children's 2 submits", end.Usage.Actions)
	}
	kids, err := e.store.Children(context.Background(), end.ID)
	if err != nil || len(kids) != 2 {
		t.Fatalf("children = %v, %v", kids, err)
	}

	h := e.start("hang", "", "")
	<-b.started // the grandchild's op is running
	if err := e.ex.Cancel(context.Background(), h.ID); err != nil {
		t.Fatal(err)
	}
	kids, _ = e.store.Children(context.Background(), h.ID)
	if len(kids) != 1 {
		t.Fatalf("children = %v", kids)
	}
	child := e.wait(kids[0])
	if child.Status != state.StatusCancelled {
		t.Fatalf("child status = %s", child.Status)
	}
	if p := e.wait(h.ID); p.Status != state.StatusCancelled {
		t.Fatalf("parent status = %s", p.Status)
	}
}

func TestSubscribeDeliversInOrder(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(8))
	bash := handlers.HandlerFunc(func(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
		return operations.Result{Kind: req.Kind, Data: &operations.BashResult{Stdout: "x"}}
	})
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: bash})
	for i := 0; i < 20; i++ {
		h := e.start("fanout", "", "")
		ch, unsub := e.ex.Subscribe(h.ID)
		var last uint64
		stored, _ := e.store.Events(context.Background(), h.ID, 0, 100)
		for _, ev := range stored {
			last = ev.Seq
		}
		for ev := range ch {
			if ev.Seq <= last {
				continue
			}
			if ev.Seq != last+1 {
				t.Fatalf("run %d: got seq %d after %d", i, ev.Seq, last)
			}
			last = ev.Seq
		}
		unsub()
		all, _ := e.store.Events(context.Background(), h.ID, 0, 100)
		if last != uint64(len(all)) {
			t.Fatalf("run %d: saw up to %d of %d events", i, last, len(all))
		}
	}
}

func TestDelay(t *testing.T) {
	var calls []time.Time
	var mu sync.Mutex
	p := func(in phases.Input) (phases.Output, error) {
		mu.Lock()
		calls = append(calls, time.Now())
		n := len(calls)
		mu.Unlock()
		if n == 1 {
			return phases.Output{Next: "p", Delay: 150 * time.Millisecond}, nil
		}
		return phases.Output{}, nil
	}
	reg := phases.NewRegistry()
	reg.MustRegister(phases.Workflow{Name: "delay", Start: "p", Phases: []phases.PhaseSpec{{Name: "p", Run: p, Next: []string{"p"}}}})
	e := newEnv(t, reg, nil)
	e.wait(e.start("delay", "", "").ID)
	if len(calls) != 2 || calls[1].Sub(calls[0]) < 150*time.Millisecond {
		t.Fatalf("calls = %v", calls)
	}
}

func TestPauseResume(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(2))
	b := newBlocker()
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: b})
	h := e.start("fanout", "", "")
	<-b.started
	<-b.started
	if err := e.ex.Pause(context.Background(), h.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := e.store.Run(context.Background(), h.ID)
	if got.Status != state.StatusPaused || len(e.ex.Active()) != 0 {
		t.Fatalf("after pause: %s, active %v", got.Status, e.ex.Active())
	}
	if err := e.ex.Resume(context.Background(), "nosuch"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("resume unknown: %v", err)
	}
	// A paused run stays paused across a restart.
	e.restart()
	if got, _ := e.store.Run(context.Background(), h.ID); got.Status != state.StatusPaused {
		t.Fatalf("after restart: %s", got.Status)
	}
	if err := e.ex.Resume(context.Background(), h.ID); err != nil {
		t.Fatal(err)
	}
	<-b.started // the interrupted ops run again
	<-b.started
	close(b.release)
	end := e.wait(h.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("end = %s %q", end.Status, end.Error)
	}
	if err := e.ex.Resume(context.Background(), h.ID); !errors.Is(err, workflows.ErrNotPaused) {
		t.Fatalf("resume of an ended run: %v", err)
	}
	if err := e.ex.Pause(context.Background(), h.ID); !errors.Is(err, workflows.ErrEnded) {
		t.Fatalf("pause of an ended run: %v", err)
	}
	evs, _ := e.store.Events(context.Background(), h.ID, 0, 100)
	var seen []string
	for _, ev := range evs {
		if ev.Type == "run" {
			seen = append(seen, string(ev.Status))
		}
	}
	if strings.Join(seen, ",") != "running,paused,running,succeeded" {
		t.Fatalf("run events = %v", seen)
	}
}

// TestSubscribeTree follows a parent that spawns a child: a tree
// subscriber of the parent sees the child's events (tagged with its run
// id) and operations starting, live; a plain subscriber sees neither.
func TestSubscribeTree(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(counter(3))
	parent := func(in phases.Input) (phases.Output, error) {
		if len(in.Results) == 0 {
			return phases.Output{Next: "parent", Ops: []operations.Request{
				operations.NewSpawn(operations.SpawnRequest{Workflow: "counter", Name: "kid"})}}, nil
		}
		return phases.Output{}, nil
	}
	reg.MustRegister(phases.Workflow{Name: "parent", Start: "parent", Phases: []phases.PhaseSpec{{Name: "parent", Run: parent, Next: []string{"parent"}}}})
	gate := make(chan struct{})
	slowLog := handlers.HandlerFunc(func(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
		<-gate // hold the child until both subscribers are in place
		return operations.Result{Kind: req.Kind, Data: &operations.RecordedResult{Recorded: true}}
	})
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindLog: slowLog})
	h := e.start("parent", "", "")
	tree, untree := e.ex.SubscribeTree(h.ID)
	defer untree()
	plain, unplain := e.ex.Subscribe(h.ID)
	defer unplain()
	close(gate)
	child := workflows.ChildID(state.OpID(h.ID, 1, 0))
	var fromChild, childStarts int
	for ev := range tree {
		switch {
		case ev.Seq == 0 && ev.RunID == child:
			fromChild++
			if ev.Status == "started" {
				childStarts++
			}
		case ev.Seq == 0 && ev.RunID == h.ID:
		case ev.Seq == 0:
			t.Fatalf("live event of an unknown run: %+v", ev)
		}
		if ev.Seq > 0 && ev.Type == "run" && state.Status(ev.Status).Terminal() {
			break
		}
	}
	if fromChild < 3 || childStarts < 1 {
		t.Fatalf("tree subscriber saw %d events of the child, %d op starts", fromChild, childStarts)
	}
	for ev := range plain {
		if ev.Seq == 0 {
			t.Fatalf("plain subscriber got a live-only event: %+v", ev)
		}
	}
	e.wait(h.ID)
}

func TestStartWarnings(t *testing.T) {
	reg := phases.NewRegistry()
	declared := counter(1)
	declared.Name = "declared"
	declared.Settings = struct {
		Count int `json:"count"`
	}{}
	reg.MustRegister(declared)
	reg.MustRegister(counter(1)) // declares nothing
	e := newEnv(t, reg, nil)
	tests := []struct {
		name     string
		workflow string
		settings string
		want     []string
	}{
		{name: "clean", workflow: "declared", settings: `{"count":1,"limits":{"actions":5}}`},
		{name: "typos", workflow: "declared", settings: `{"limts":{},"cuont":2,"bogus_key":1,"limits":{"tokns":5},"python":{"timout_s":1},"models":{"m":{"bse_url":"x"}}}`,
			want: []string{
				`unknown settings key "bogus_key"`,
				`unknown settings key "cuont" (did you mean "count"?)`,
				`unknown settings key "limits.tokns" (did you mean "limits.tokens"?)`,
				`unknown settings key "limts" (did you mean "limits"?)`,
				`unknown settings key "models.m.bse_url" (did you mean "models.m.base_url"?)`,
				`unknown settings key "python.timout_s" (did you mean "python.timeout_s"?)`,
			}},
		{name: "flock key", workflow: "declared", settings: `{"advisors":[]}`,
			want: []string{`settings key "advisors" is a Flock setting that flock does not use in workflow "declared"`}},
		{name: "undeclared workflow: common sections only", workflow: "counter", settings: `{"cuont":2,"limits":{"tokns":5}}`,
			want: []string{`unknown settings key "limits.tokns" (did you mean "limits.tokens"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, warnings, err := e.ex.StartRunWithWarnings(context.Background(),
				workflows.StartRequest{Workflow: tt.workflow, Settings: json.RawMessage(tt.settings)})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if fmt.Sprint(warnings) != fmt.Sprint(tt.want) {
				t.Errorf("warnings\n got %q\nwant %q", warnings, tt.want)
			}
			evs, err := e.store.Events(context.Background(), h.ID, 0, 1)
			if err != nil || len(evs) != 1 {
				t.Fatalf("first event: %v %v", evs, err)
			}
			first := evs[0]
			if first.Type != "run" || first.Status != state.EventStatus(state.StatusRunning) || !strings.HasPrefix(first.Message, "created") {
				t.Fatalf("first event = %+v, want the run's creation", first)
			}
			var data struct {
				Warnings []string `json:"warnings"`
			}
			if len(first.Data) > 0 {
				if err := json.Unmarshal(first.Data, &data); err != nil {
					t.Fatalf("first event data %s: %v", first.Data, err)
				}
			}
			if fmt.Sprint(data.Warnings) != fmt.Sprint(tt.want) {
				t.Errorf("first event warnings\n got %q\nwant %q", data.Warnings, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(first.Message, w) {
					t.Errorf("first event message %q lacks %q", first.Message, w)
				}
			}
			e.wait(h.ID)
		})
	}
}
