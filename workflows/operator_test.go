package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/flockrun/flock/handlers"
	_ "github.com/flockrun/flock/handlers/human"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// asker is a workflow asking one human question, then ending with the
// answer as its result.
func asker() phases.Workflow {
	return phases.Workflow{Name: "asker", Start: "ask", Phases: []phases.PhaseSpec{
		{Name: "ask", Next: []string{"end"}, Run: func(in phases.Input) (phases.Output, error) {
			return phases.Output{Ops: []operations.Request{operations.NewHuman(operations.HumanRequest{Question: "name?"})}, Next: "end"}, nil
		}},
		{Name: "end", Run: func(in phases.Input) (phases.Output, error) {
			b, _ := json.Marshal(operations.Human.Result(in.Results[0]).Text())
			return phases.Output{End: &phases.End{Result: b}}, nil
		}},
	}}
}

func humanHandler(t testing.TB) handlers.Handler {
	info, ok := handlers.Lookup(operations.KindHuman)
	if !ok {
		t.Fatal("no human handler")
	}
	return info.New()
}

// TestQuestionsParkWithoutGoroutine: runs waiting for an answer are
// parked like delayed ones: N of them cost a constant number of
// goroutines; each answer journals the result and the run goes on.
func TestQuestionsParkWithoutGoroutine(t *testing.T) {
	const n, slack = 100, 10
	reg := phases.NewRegistry()
	reg.MustRegister(asker())
	h := humanHandler(t)
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindHuman: h, operations.KindIntervention: h})
	base := runtime.NumGoroutine()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = e.start("asker", "", "").ID
	}
	testkit.WaitFor(t, "every run's question", func() bool {
		for _, id := range ids {
			if qs, err := e.ex.Questions(ctx, id); err != nil || len(qs) != 1 {
				return false
			}
		}
		return true
	})
	goroutinesAtMost(t, base+slack, fmt.Sprintf("%d runs waiting for answers", n))
	if got := len(e.ex.Active()); got != n {
		t.Fatalf("active = %d, want %d", got, n)
	}
	// Cancel ends a run waiting for an answer at once; its question goes.
	if err := e.ex.Cancel(ctx, ids[0]); err != nil {
		t.Fatalf("cancel a waiting run: %v", err)
	}
	if end := e.wait(ids[0]); end.Status != state.StatusCancelled {
		t.Fatalf("cancelled waiting run: %s", end.Status)
	}
	if err := e.ex.Answer(ctx, ids[0], state.OpID(ids[0], 1, 0), json.RawMessage(`"late"`)); !errors.Is(err, workflows.ErrEnded) {
		t.Fatalf("answer to a cancelled run = %v, want ErrEnded", err)
	}
	// An intervention on an ended run says that it ended, not how to
	// start one that waits; one on a run waiting for another kind of
	// question says that it waits for no intervention.
	if err := e.ex.Intervene(ctx, ids[0], json.RawMessage(`{"approve": true}`)); !errors.Is(err, workflows.ErrEnded) ||
		!strings.Contains(err.Error(), "has ended (cancelled)") {
		t.Fatalf("intervene on a cancelled run = %v, want ErrEnded saying it has ended (cancelled)", err)
	}
	if err := e.ex.Intervene(ctx, ids[1], json.RawMessage(`{"approve": true}`)); !errors.Is(err, workflows.ErrNotWaiting) {
		t.Fatalf("intervene on a run asking a question = %v, want ErrNotWaiting", err)
	}
	ids = ids[1:]
	for i, id := range ids {
		if err := e.ex.Answer(ctx, id, state.OpID(id, 1, 0), json.RawMessage(fmt.Sprintf(`"run %d"`, i))); err != nil {
			t.Fatalf("answer %s: %v", id, err)
		}
	}
	for i, id := range ids {
		if end := e.wait(id); end.Status != state.StatusSucceeded || string(end.Result) != fmt.Sprintf(`"run %d"`, i) {
			t.Fatalf("run %d: %s %s", i, end.Status, end.Result)
		}
	}
}

// scribe is a workflow whose step k runs the k-th command of its task
// (commands separated by ";"), through a bash handler that writes files:
// "put NAME TEXT" writes NAME, "rm NAME" removes it, "noop" nothing.
func scribe() (phases.Workflow, handlers.Handler) {
	wf := phases.Workflow{Name: "scribe", Start: "do", Phases: []phases.PhaseSpec{{Name: "do", Next: []string{"do"},
		Run: func(in phases.Input) (phases.Output, error) {
			cmds := strings.Split(in.Run.Task, ";")
			k := int(in.Run.Step) - 1
			stop := len(cmds)
			if b := in.State.Var("stop"); b != nil {
				_ = json.Unmarshal(b, &stop)
			}
			if k >= min(stop, len(cmds)) {
				return phases.Output{}, nil
			}
			return phases.Output{Ops: []operations.Request{operations.NewBash(strings.TrimSpace(cmds[k]), 0)}, Next: "do"}, nil
		}}}}
	h := handlers.HandlerFunc(func(_ context.Context, env handlers.Env, req operations.Request) operations.Result {
		f := strings.Fields(operations.Bash.Params(req).Command)
		var err error
		switch f[0] {
		case "put":
			err = os.WriteFile(filepath.Join(env.WorkDir, f[1]), []byte(strings.Join(f[2:], " ")), 0o640)
		case "rm":
			err = os.Remove(filepath.Join(env.WorkDir, f[1]))
		}
		if err != nil {
			return operations.Failed(req, "%v", err)
		}
		return operations.Result{Kind: req.Kind, Data: &operations.BashResult{}}
	})
	return wf, h
}

func dirFiles(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out = append(out, e.Name()+"="+string(b))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestWorkDirSnapshots: a manifest is written only for steps that changed
// the work directory, each distinct content is stored once, and a fork at
// any step gets the work directory as that step left it (modes kept).
func TestWorkDirSnapshots(t *testing.T) {
	wf, bash := scribe()
	reg := phases.NewRegistry()
	reg.MustRegister(wf)
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: bash})
	task := "put a.txt one; noop; put b.txt two; put a.txt one; rm a.txt; put c.txt one"
	want := []string{
		"",                    // step 0
		"a.txt=one",           // 1
		"a.txt=one",           // 2 noop
		"a.txt=one b.txt=two", // 3
		"a.txt=one b.txt=two", // 4 same content again
		"b.txt=two",           // 5
		"b.txt=two c.txt=one", // 6
	}
	src := e.start("scribe", "", task)
	if end := e.wait(src.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("source %s %s", end.Status, end.Error)
	}
	snapDir := filepath.Join(e.dir, "runs", ".snapshots")
	// Steps 1, 3, 5, 6 changed the directory; 2 and 4 did not, and the
	// empty directory of step 0 needs none.
	if got, err := e.ex.ManifestSteps(src.ID); got != "1,3,5,6" || err != nil {
		t.Errorf("manifests at steps %q, want 1,3,5,6", got)
	}
	objects, _ := filepath.Glob(filepath.Join(snapDir, "objects", "*", "*"))
	if len(objects) != 2 {
		t.Errorf("%d objects stored, want 2 (one per distinct content)", len(objects))
	}
	ctx := context.Background()
	for step := range want {
		// A fork told to stop at once: its directory is what it restored.
		f, err := e.ex.Fork(ctx, src.ID, workflows.ForkRequest{Step: uint64(step), Vars: map[string]json.RawMessage{"stop": json.RawMessage(fmt.Sprint(step))}})
		if err != nil {
			t.Fatalf("fork at %d: %v", step, err)
		}
		end := e.wait(f.ID)
		if end.Status != state.StatusSucceeded {
			t.Fatalf("fork at %d: %s %s", step, end.Status, end.Error)
		}
		if got := dirFiles(t, end.WorkDir); got != want[step] {
			t.Errorf("fork at %d: work dir %q, want %q", step, got, want[step])
		}
		if step == 3 {
			if st, err := os.Stat(filepath.Join(end.WorkDir, "a.txt")); err != nil || st.Mode().Perm() != 0o640 {
				t.Errorf("restored a.txt: %v %v, want mode 0640", st.Mode(), err)
			}
		}
	}
	// A full fork at 3 runs the remaining commands itself.
	f, err := e.ex.Fork(ctx, src.ID, workflows.ForkRequest{Step: 3})
	if err != nil {
		t.Fatal(err)
	}
	if end := e.wait(f.ID); dirFiles(t, end.WorkDir) != want[6] {
		t.Errorf("full fork at 3 ended with %q", dirFiles(t, end.WorkDir))
	}
}

// bulk appends 100 entries per step with one log op, for as many steps
// as its task says, so a run of 100 steps has 10,000 entries.
func bulk() phases.Workflow {
	return phases.Workflow{Name: "bulk", Start: "s", Phases: []phases.PhaseSpec{{Name: "s", Next: []string{"s"},
		Run: func(in phases.Input) (phases.Output, error) {
			var steps uint64
			fmt.Sscan(in.Run.Task, &steps)
			if in.Run.Step > steps {
				return phases.Output{}, nil
			}
			out := phases.Output{Next: "s", Ops: []operations.Request{operations.NewLog(fmt.Sprintf("step %d", in.Run.Step))},
				Set: map[string]json.RawMessage{"step": json.RawMessage(fmt.Sprint(in.Run.Step))}}
			for i := range 100 {
				out.Append = append(out.Append, phases.MustEntry("message", map[string]any{
					"role": "assistant", "content": strings.Repeat("x", 150), "i": i}))
			}
			return out, nil
		}}}}
}

// BenchmarkFork10000Entries measures the server-side cost of forking a
// run of 10,000 entries (100 steps, 100 ops) at its last step: rebuilding
// the step's head from the events, copying the entries and ops into the
// new run in one commit, restoring its (empty) work-dir snapshot and
// launching it.
func BenchmarkFork10000Entries(b *testing.B) {
	reg := phases.NewRegistry()
	reg.MustRegister(bulk())
	e := newEnv(b, reg, nil)
	src := e.start("bulk", "", "100")
	if end := e.wait(src.ID); end.Status != state.StatusSucceeded || end.Entries < 10000 {
		b.Fatalf("source: %s, %d entries", end.Status, end.Entries)
	}
	ctx := context.Background()
	var ids []string
	for b.Loop() {
		f, err := e.ex.Fork(ctx, src.ID, workflows.ForkRequest{Step: 100})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	b.StopTimer()
	for _, id := range ids {
		if end := e.wait(id); end.Status != state.StatusSucceeded || end.Entries < 10000 {
			b.Fatalf("fork %s: %s %d entries", id, end.Status, end.Entries)
		}
	}
	b.ReportMetric(10000, "entries/fork")
}

// TestCommandKeyAndGrants: a top-level run keeps the command key and the
// grants it was started with (the file access reads them back by the
// run's id); a fork inherits neither; Launch with the key of a run that has
// ended starts a new run.
func TestCommandKeyAndGrants(t *testing.T) {
	wf, bash := scribe()
	reg := phases.NewRegistry()
	reg.MustRegister(wf)
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: bash})
	ctx := context.Background()
	grants := &state.Grants{ReadRoots: []string{t.TempDir()}}
	src, _, err := e.ex.StartRunWithWarnings(ctx, workflows.StartRequest{Workflow: "scribe", Task: "put a.txt one", Key: "k1", Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	if end := e.wait(src.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("source %s %s", end.Status, end.Error)
	}
	if spec, err := e.store.Spec(ctx, src.ID); err != nil || spec.Key != "k1" || spec.Grants == nil || spec.Grants.ReadRoots[0] != grants.ReadRoots[0] {
		t.Fatalf("spec %+v: %v", spec, err)
	}
	if g := e.ex.Grants(src.ID); g == nil || g.ReadRoots[0] != grants.ReadRoots[0] {
		t.Fatalf("Grants(%s) = %+v", src.ID, g)
	}
	f, err := e.ex.Fork(ctx, src.ID, workflows.ForkRequest{Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(f.ID)
	if spec, err := e.store.Spec(ctx, f.ID); err != nil || spec.Key != "" || spec.Grants != nil || e.ex.Grants(f.ID) != nil {
		t.Fatalf("the fork's spec %+v: %v", spec, err)
	}
	h, _, resumed, err := e.ex.Launch(ctx, workflows.StartRequest{Workflow: "scribe", Task: "noop", Key: "k1"})
	if err != nil || resumed || h.ID == src.ID {
		t.Fatalf("Launch with the key of an ended run: %s resumed=%v %v", h.ID, resumed, err)
	}
	e.wait(h.ID)
}
