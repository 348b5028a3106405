package fanout

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
)

// Name is the workflow's registry name.
const Name = "fanout"

// Limits of the settings.
const (
	DefaultParallel = 4
	MaxParallel     = 32
	// maxResultOutput caps each item's stdout in the result; entries keep
	// the whole output.
	maxResultOutput = 4096
	maxFailures     = 20
)

// Settings are the workflow's keys of the settings document.
type Settings struct {
	Items         []string `json:"items"`
	ItemsCommand  string   `json:"items_command"`
	Command       string   `json:"command"`
	Parallel      int      `json:"parallel"`
	TimeoutS      float64  `json:"timeout_s"`
	Reduce        string   `json:"reduce"`
	AllowFailures bool     `json:"allow_failures"`
}

// ParseSettings decodes, checks and defaults the settings.
func ParseSettings(doc json.RawMessage) (Settings, error) {
	var s Settings
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &s); err != nil {
			return s, fmt.Errorf("settings: %w", err)
		}
	}
	switch {
	case strings.TrimSpace(s.Command) == "":
		return s, errors.New("command: required (the shell command run per item, with $ITEM and $INDEX)")
	case len(s.Items) > 0 && s.ItemsCommand != "":
		return s, errors.New("items, items_command: give one, not both")
	case len(s.Items) == 0 && strings.TrimSpace(s.ItemsCommand) == "":
		return s, errors.New("items: give the inputs, or items_command to list them")
	case s.Parallel < 0 || s.Parallel > MaxParallel:
		return s, fmt.Errorf("parallel: must be between 1 and %d", MaxParallel)
	case s.TimeoutS < 0:
		return s, errors.New("timeout_s: must be >= 0")
	}
	if s.Parallel == 0 {
		s.Parallel = DefaultParallel
	}
	switch s.Reduce {
	case "":
		s.Reduce = "list"
	case "list", "sum", "concat":
	default:
		return s, fmt.Errorf("reduce: %q is not one of list, sum, concat", s.Reduce)
	}
	return s, nil
}

// Item is the entry appended for each finished item.
type Item struct {
	Index    int    `json:"index"`
	Item     string `json:"item"`
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"`
}

// OK reports whether the item's command succeeded.
func (it Item) OK() bool { return it.ExitCode == 0 && !it.TimedOut && it.Error == "" }

// Inputs is the entry holding the items listed by items_command.
type Inputs struct {
	Items []string `json:"items"`
}

// Progress is the run's "fanout" var.
type Progress struct {
	// Next is the index of the first item not yet dispatched.
	Next int `json:"next"`
	// Total is the number of items.
	Total int `json:"total"`
}

// Failure describes a failed item in the result.
type Failure struct {
	Index    int    `json:"index"`
	Item     string `json:"item"`
	ExitCode int    `json:"exit_code"`
	Stderr   string `json:"stderr,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Result is the run's result.
type Result struct {
	Items     int       `json:"items"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	Outputs   []string  `json:"outputs,omitempty"`
	Sum       *float64  `json:"sum,omitempty"`
	Output    *string   `json:"output,omitempty"`
	Failures  []Failure `json:"failures,omitempty"`
}

// metaIndex is the Meta key carrying an item's index on its bash op.
const metaIndex = "fanout_index"

// List is the first phase: it lists the items with items_command, if set.
func List(in phases.Input) (phases.Output, error) {
	s, err := ParseSettings(in.Run.Settings)
	if err != nil {
		return phases.Output{}, err
	}
	out := phases.Output{Next: "map"}
	if s.ItemsCommand != "" {
		out.Ops = []operations.Request{operations.NewBash(s.ItemsCommand, s.TimeoutS).WithMeta("fanout", "list")}
	}
	return out, nil
}

// Map records the previous batch and dispatches the next one; when every
// item is done it hands over to reduce.
func Map(in phases.Input) (phases.Output, error) {
	s, err := ParseSettings(in.Run.Settings)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	var p Progress
	started, err := phases.GetVar(in.State, "fanout", &p)
	if err != nil {
		return out, err
	}
	items := s.Items
	if !started {
		if s.ItemsCommand != "" {
			items, err = listed(in.Results)
			if err != nil {
				out.End = &phases.End{Failed: true, Reason: "items_command_failed", Result: mustJSON(map[string]string{"error": err.Error()})}
				return out, nil
			}
			out.Append = append(out.Append, phases.MustEntry("items", Inputs{Items: items}))
		}
		p = Progress{Total: len(items)}
	} else {
		if s.ItemsCommand != "" {
			if items, err = storedItems(in.State); err != nil {
				return out, err
			}
		}
		for _, res := range in.Results {
			idx, err := res.Meta.Index(metaIndex, len(items))
			if err != nil {
				return out, fmt.Errorf("fanout result: %w", err)
			}
			it := Item{Index: idx, Item: items[idx], Error: res.Error, ExitCode: -1}
			if b := operations.Bash.Result(res); b != nil {
				it.ExitCode, it.Stdout, it.Stderr, it.TimedOut = b.ExitCode, b.Stdout, b.Stderr, b.TimedOut
			}
			out.Append = append(out.Append, phases.MustEntry("item", it))
		}
	}
	if p.Next >= p.Total {
		if err := out.SetVar("fanout", p); err != nil {
			return out, err
		}
		out.Next = "reduce"
		return out, nil
	}
	n := min(s.Parallel, p.Total-p.Next)
	for slot := range n {
		idx := p.Next + slot
		cmd := fmt.Sprintf("(export ITEM=%s INDEX=%d\n%s\n)", quote(items[idx]), idx, s.Command)
		req := operations.NewBash(cmd, s.TimeoutS).WithMeta(metaIndex, strconv.Itoa(idx))
		operations.Bash.Params(req).Session = fmt.Sprintf("fanout-%d", slot)
		out.Ops = append(out.Ops, req)
	}
	p.Next += n
	if err := out.SetVar("fanout", p); err != nil {
		return out, err
	}
	out.Next = "map"
	return out, nil
}

// Reduce reads the item entries and ends the run with the result.
func Reduce(in phases.Input) (phases.Output, error) {
	s, err := ParseSettings(in.Run.Settings)
	if err != nil {
		return phases.Output{}, err
	}
	var p Progress
	if _, err := phases.GetVar(in.State, "fanout", &p); err != nil {
		return phases.Output{}, err
	}
	done := make([]*Item, p.Total)
	for i := 0; i < in.State.Len(); i++ {
		e := in.State.Entry(i)
		if e.Type != "item" {
			continue
		}
		var it Item
		if err := e.Decode(&it); err != nil {
			return phases.Output{}, err
		}
		if it.Index >= 0 && it.Index < len(done) {
			done[it.Index] = &it // a re-run after a crash replaces the earlier record
		}
	}
	r := Result{Items: p.Total}
	var sum float64
	var concat []string
	for i, it := range done {
		if it == nil {
			return phases.Output{}, fmt.Errorf("item %d has no recorded result", i)
		}
		if it.OK() {
			r.Succeeded++
		} else {
			r.Failed++
			if len(r.Failures) < maxFailures {
				r.Failures = append(r.Failures, Failure{Index: i, Item: it.Item, ExitCode: it.ExitCode,
					Stderr: clip(strings.TrimSpace(it.Stderr)), Error: it.Error})
			}
		}
		stdout := strings.TrimSpace(it.Stdout)
		switch s.Reduce {
		case "list":
			r.Outputs = append(r.Outputs, clip(stdout))
		case "sum":
			if it.OK() {
				sum += leadingNumber(stdout)
			}
		case "concat":
			if stdout != "" {
				concat = append(concat, stdout)
			}
		}
	}
	switch s.Reduce {
	case "sum":
		r.Sum = &sum
	case "concat":
		o := strings.Join(concat, "\n")
		r.Output = &o
	}
	end := &phases.End{Reason: "completed", Result: mustJSON(r)}
	if r.Failed > 0 && !s.AllowFailures {
		end.Failed, end.Reason = true, fmt.Sprintf("items_failed: %d of %d", r.Failed, r.Items)
	}
	return phases.Output{End: end}, nil
}

// listed parses the items_command result into items.
func listed(results []operations.Result) ([]string, error) {
	if len(results) != 1 {
		return nil, fmt.Errorf("items_command: expected 1 result, got %d", len(results))
	}
	res := results[0]
	b := operations.Bash.Result(res)
	switch {
	case res.Error != "":
		return nil, fmt.Errorf("items_command: %s", res.Error)
	case b == nil:
		return nil, errors.New("items_command: no bash result")
	case b.ExitCode != 0:
		return nil, fmt.Errorf("items_command exited %d: %s", b.ExitCode, clip(strings.TrimSpace(b.Stderr)))
	}
	items := []string{}
	for _, line := range strings.Split(b.Stdout, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			items = append(items, line)
		}
	}
	return items, nil
}

func storedItems(st phases.State) ([]string, error) {
	i := phases.Last(st, "items")
	if i < 0 {
		return nil, errors.New("the items entry is missing")
	}
	var in Inputs
	if err := st.Entry(i).Decode(&in); err != nil {
		return nil, err
	}
	return in.Items, nil
}

var number = regexp.MustCompile(`^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?`)

// leadingNumber returns the number an output starts with (0 if none).
func leadingNumber(s string) float64 {
	f, _ := strconv.ParseFloat(number.FindString(s), 64)
	return f
}

// quote quotes s for a POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func clip(s string) string {
	if len(s) <= maxResultOutput {
		return s
	}
	return s[:maxResultOutput] + fmt.Sprintf("… [%d bytes more in the item entry]", len(s)-maxResultOutput)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Workflow returns the fanout workflow's declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name:        Name,
		Description: "Run one shell command per input item, several at a time, and reduce the outputs (example plugin).",
		Start:       "list",
		Phases: []phases.PhaseSpec{
			{Name: "list", Run: List, Next: []string{"map"}},
			{Name: "map", Run: Map, Next: []string{"map", "reduce"}},
			{Name: "reduce", Run: Reduce},
		},
		Settings: Settings{},
		CheckSettings: func(doc json.RawMessage) error {
			_, err := ParseSettings(doc)
			return err
		},
	}
}

// Register adds the fanout workflow to r. The plugin's main package
// exports it as is.
func Register(r *phases.Registry) error { return r.Register(Workflow()) }

var (
	_ phases.Phase = List
	_ phases.Phase = Map
	_ phases.Phase = Reduce
)
