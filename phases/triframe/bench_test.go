package triframe_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/triframe"
)

// benchSettings: one advisor, two actors, two raters (the example file's shape).
const benchSettings = `{"advisors":[{"model":"m"}],"actors":[{"model":"m"},{"model":"m","n":2}],
"raters":[{"model":"m"},{"model":"m"}],"limit_type":"action","limits":{"actions":100000}}`

func gen(role string, outs ...operations.Output) operations.Result {
	return operations.Result{Kind: operations.KindGenerate, Meta: map[string]string{"role": role, "index": "0", "advice": "with"},
		Data: &operations.GenerateResult{Outputs: outs}}
}

// history appends n actions' worth of entries (advice, options, ratings,
// choice, tool output) to st, with 2 KB tool outputs.
func history(st *phasetest.State, n int) {
	out := strings.Repeat("x", 2000)
	for i := 0; i < n; i++ {
		c, _ := agent.Validate(fmt.Sprintf("call_%d", i), agent.ToolBash, fmt.Sprintf(`{"command":"echo %d"}`, i), nil)
		opt := agent.Option{Content: "Next.", Call: &c}
		for _, e := range []phases.Entry{
			phases.MustEntry(triframe.EntryAdvice, triframe.Advice{Summary: "a", Advice: "Keep going."}),
			phases.MustEntry(triframe.EntryOptions, triframe.Options{Summary: "o", Options: []agent.Option{opt, opt}}),
			phases.MustEntry(triframe.EntryRatings, triframe.Ratings{Summary: "r"}),
			phases.MustEntry(triframe.EntryChoice, triframe.Choice{Summary: "c", Option: opt}),
			phases.MustEntry(triframe.EntryToolOutput, agent.ToolOutput{Summary: "t", Tool: "bash", CallID: c.ID, Output: out}),
		} {
			e.Seq = uint64(len(st.Log) + 1)
			st.Log = append(st.Log, e)
		}
	}
}

// step calls the six phases of one action (advisor, actor,
// advisor_ratings, aggregate_ratings, process, tool_output) on st, feeding
// each the results a real step would get, and appends their entries.
func step(b *testing.B, wf phases.Workflow, st *phasetest.State, stepNo uint64) {
	advise := gen("advisor", operations.Output{ToolCalls: []operations.ToolCall{{ID: "a", Name: "advise", Arguments: `{"advice":"Count the bytes."}`}}})
	act := func(cmd string) operations.Output {
		return operations.Output{Content: "Doing " + cmd, ToolCalls: []operations.ToolCall{{ID: "c" + cmd, Name: "bash", Arguments: `{"command":"` + cmd + `"}`}}}
	}
	rate := gen("rater", operations.Output{ToolCalls: []operations.ToolCall{{ID: "r", Name: "rate_options",
		Arguments: `{"ratings":[{"option_index":0,"rating":1},{"option_index":1,"rating":0.5},{"option_index":2,"rating":-1}]}`}}})
	results := map[string][]operations.Result{
		triframe.PhaseAdvisor:          nil,
		triframe.PhaseActor:            {advise},
		triframe.PhaseAdvisorRatings:   {gen("actor", act("ls")), gen("actor", act("pwd")), gen("actor", act("ls"), act("wc -c f")), gen("actor", act("pwd"))},
		triframe.PhaseAggregateRatings: {rate, rate},
		triframe.PhaseProcess:          nil,
		triframe.PhaseToolOutput:       {{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: "6\n"}}},
	}
	for _, name := range []string{triframe.PhaseAdvisor, triframe.PhaseActor, triframe.PhaseAdvisorRatings,
		triframe.PhaseAggregateRatings, triframe.PhaseProcess, triframe.PhaseToolOutput} {
		spec, _ := wf.Phase(name)
		in := phases.Input{Run: phases.RunInfo{ID: "bench", Workflow: triframe.Name, Phase: name, Step: stepNo,
			Task: "Create hello.txt containing flock, then submit its byte count.", Settings: json.RawMessage(benchSettings),
			Now: phasetest.Now, WorkDir: "/work"}, State: st, Results: results[name]}
		out, err := spec.Run(in)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		for _, e := range out.Append {
			e.Seq = uint64(len(st.Log) + 1)
			st.Log = append(st.Log, e)
		}
		for k, v := range out.Set {
			st.Vars[k] = v
		}
	}
}

// BenchmarkPhases measures the phase functions alone (no store, no
// operations): phases per second of the steady advisor -> tool_output loop,
// with an empty history and with 500 actions of history.
func BenchmarkPhases(b *testing.B) {
	wf := triframe.Workflow()
	for _, n := range []int{0, 40, 500} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			st := &phasetest.State{Vars: map[string]json.RawMessage{}, Limited: operations.RunLimits{Actions: 100000}}
			history(st, n)
			base := len(st.Log)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st.Log = st.Log[:base] // keep the history length fixed
				step(b, wf, st, uint64(i+1))
			}
			b.ReportMetric(float64(6*b.N)/b.Elapsed().Seconds(), "phases/s")
		})
	}
}
