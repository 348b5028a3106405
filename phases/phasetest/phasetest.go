package phasetest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
)

var update = flag.Bool("update", false, "rewrite the expected output of golden phase cases")

// Case is one golden file.
type Case struct {
	// Phase names the phase of the workflow under test.
	Phase    string                     `json:"phase"`
	Task     string                     `json:"task,omitempty"`
	Settings json.RawMessage            `json:"settings,omitempty"`
	Vars     map[string]json.RawMessage `json:"vars,omitempty"`
	Entries  []phases.Entry             `json:"entries,omitempty"`
	Usage    operations.RunUsage        `json:"usage"`
	Limits   operations.RunLimits       `json:"limits"`
	Results  []operations.Result        `json:"results,omitempty"`
	// Step is the phase call number (default 1).
	Step uint64 `json:"step,omitempty"`
	Want Output `json:"want"`
}

// Output is the JSON form of phases.Output plus the phase's error.
type Output struct {
	Ops    []operations.Request       `json:"ops,omitempty"`
	Append []phases.Entry             `json:"append,omitempty"`
	Set    map[string]json.RawMessage `json:"set,omitempty"`
	Next   string                     `json:"next"`
	Delay  string                     `json:"delay,omitempty"`
	End    *phases.End                `json:"end,omitempty"`
	Error  string                     `json:"error,omitempty"`
}

// Now is the fixed time golden inputs see.
var Now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// State is an in-memory phases.State for tests.
type State struct {
	Vars    map[string]json.RawMessage
	Log     []phases.Entry
	Used    operations.RunUsage
	Limited operations.RunLimits
}

func (s *State) Var(name string) json.RawMessage { return s.Vars[name] }
func (s *State) Len() int                        { return len(s.Log) }
func (s *State) Entry(i int) phases.Entry        { return s.Log[i] }
func (s *State) Usage() (operations.RunUsage, operations.RunLimits) {
	return s.Used, s.Limited
}

// Input builds the phase input of c for workflow wf.
func (c *Case) Input(wf string) phases.Input {
	step := c.Step
	if step == 0 {
		step = 1
	}
	settings := c.Settings
	if settings == nil {
		settings = json.RawMessage("{}")
	}
	for i := range c.Entries {
		if c.Entries[i].Seq == 0 {
			c.Entries[i].Seq = uint64(i + 1)
		}
	}
	return phases.Input{
		Run: phases.RunInfo{ID: "golden", Workflow: wf, Phase: c.Phase, Step: step, Task: c.Task,
			Settings: settings, Now: Now, WorkDir: "/work"},
		State:   &State{Vars: c.Vars, Log: c.Entries, Used: c.Usage, Limited: c.Limits},
		Results: c.Results,
	}
}

// FromOutput converts a phase's result to its golden form.
func FromOutput(out phases.Output, err error) Output {
	g := Output{Ops: out.Ops, Append: out.Append, Set: out.Set, Next: out.Next, End: out.End}
	if out.Delay > 0 {
		g.Delay = out.Delay.String()
	}
	if err != nil {
		g = Output{Error: err.Error()}
	}
	return g
}

// Run runs every testdata/golden/*.json case of the directory dir against
// workflow wf, comparing (or, with -update, rewriting) the expected output.
func Run(t *testing.T, dir string, wf phases.Workflow) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden cases in %s", dir)
	}
	sort.Strings(files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c Case
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatalf("decode case: %v", err)
			}
			spec, ok := wf.Phase(c.Phase)
			if !ok {
				t.Fatalf("workflow %s has no phase %q", wf.Name, c.Phase)
			}
			got := FromOutput(spec.Run(c.Input(wf.Name)))
			if got.Next != "" && !wf.Allows(c.Phase, got.Next) {
				t.Fatalf("phase %s returned undeclared next %q", c.Phase, got.Next)
			}
			// Determinism: the same input gives the same output.
			again := FromOutput(spec.Run(c.Input(wf.Name)))
			a, b := mustJSON(t, got), mustJSON(t, again)
			if !bytes.Equal(a, b) {
				t.Fatalf("phase %s is not deterministic:\n%s\nvs\n%s", c.Phase, a, b)
			}
			if *update {
				c.Want = got
				out, err := json.MarshalIndent(c, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, append(out, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want := mustJSON(t, c.Want)
			if !bytes.Equal(a, want) {
				t.Fatalf("output differs (run with -update to accept):\ngot:  %s\nwant: %s", a, want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

var _ phases.State = (*State)(nil)
