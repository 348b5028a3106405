package triframe_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/triframe"
)

// The inputs of triframe's golden cases (testdata/golden/*.json) are
// written by goldenCases below. To change or add a case, edit goldenCases,
// then
//
//	go test ./phases/triframe -run TestGoldenInputs -gen
//	go test ./phases/triframe -run TestGolden -update
//
// and review the diff: -gen rewrites every input (with an empty expected
// output), -update fills in the expected outputs. Without -gen,
// TestGoldenInputs checks that the committed inputs are the ones
// goldenCases writes.
var genInputs = flag.Bool("gen", false, "rewrite the inputs of testdata/golden from goldenCases")

const goldenDir = "testdata/golden"

func TestGoldenInputs(t *testing.T) {
	cases := goldenCases(t)
	if *genInputs {
		old, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cases {
			c.Case.Want = phasetest.Output{}
			writeCase(t, filepath.Join(goldenDir, fmt.Sprintf("%02d_%s.json", i+1, c.name)), c.Case)
		}
		t.Logf("%d cases", len(cases))
		return
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(cases) {
		t.Fatalf("%d golden files, goldenCases has %d (run with -gen)", len(files), len(cases))
	}
	for i, c := range cases {
		f := filepath.Join(goldenDir, fmt.Sprintf("%02d_%s.json", i+1, c.name))
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("%v (run with -gen)", err)
		}
		var committed phasetest.Case
		if err := json.Unmarshal(raw, &committed); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		c.Case.Want = committed.Want
		c.Case.Input(triframe.Name) // numbers the entries, as the golden runner does
		if a, b := indent(t, committed), indent(t, c.Case); !bytes.Equal(a, b) {
			t.Errorf("%s: committed input differs from goldenCases (run with -gen, then -update):\n%s\nvs\n%s", f, a, b)
		}
	}
}

func writeCase(t *testing.T, path string, c phasetest.Case) {
	t.Helper()
	if err := os.WriteFile(path, append(indent(t, c), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func indent(t *testing.T, c phasetest.Case) []byte {
	t.Helper()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kv is one member of an ordered JSON object.
type kv struct {
	k string
	v any
}

// obj is a JSON object that keeps its members in order (settings, entry
// data and var values are stored as raw JSON, so their order is part of
// the golden bytes).
type obj []kv

// o builds an obj from alternating keys and values.
func o(pairs ...any) obj {
	out := make(obj, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, kv{pairs[i].(string), pairs[i+1]})
	}
	return out
}

// with returns a copy of x updated by pairs: an existing key keeps its
// place, a new one goes last.
func (x obj) with(pairs ...any) obj {
	out := append(obj{}, x...)
outer:
	for _, p := range o(pairs...) {
		for i := range out {
			if out[i].k == p.k {
				out[i].v = p.v
				continue outer
			}
		}
		out = append(out, p)
	}
	return out
}

// encode writes v as JSON. spaced uses ", " and ": " between members (the
// text a model's tool call arguments have in these cases).
func encode(b *bytes.Buffer, v any, spaced bool) {
	sep, colon := ",", ":"
	if spaced {
		sep, colon = ", ", ": "
	}
	switch v := v.(type) {
	case obj:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteString(sep)
			}
			encode(b, m.k, spaced)
			b.WriteString(colon)
			encode(b, m.v, spaced)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(sep)
			}
			encode(b, e, spaced)
		}
		b.WriteByte(']')
	case []obj:
		l := make([]any, len(v))
		for i := range v {
			l[i] = v[i]
		}
		encode(b, l, spaced)
	case []string:
		l := make([]any, len(v))
		for i := range v {
			l[i] = v[i]
		}
		encode(b, l, spaced)
	default:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			panic(err)
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
}

func raw(v any) json.RawMessage {
	var b bytes.Buffer
	encode(&b, v, false)
	return b.Bytes()
}

// dumps is the text of a tool call's arguments.
func dumps(v any) string {
	var b bytes.Buffer
	encode(&b, v, true)
	return b.String()
}

const goldenTask = "Create hello.txt containing flock, then submit its byte count."

func settings(pairs ...any) obj {
	return o("advisors", []obj{o("model", "adv")}, "actors", []obj{o("model", "act")}, "raters", []obj{o("model", "rat")},
		"limit_type", "action").with(pairs...)
}

func call(name string, args any, id string) obj {
	return o("id", id, "name", name, "arguments", args)
}

func choice(name string, args any, content, id string) obj {
	return o("type", "choice", "data", o("summary", "x", "option", o("content", content, "call", call(name, args, id)), "index", 0))
}

func toolOutput(tool, output, id string) obj {
	return o("type", "tool_output", "data", o("summary", "x", "tool", tool, "call_id", id, "output", output,
		"notice", "Usage: 1 of 10 actions used (10%)."))
}

func advice(text string) obj {
	return o("type", "advice", "data", o("summary", "x", "advice", text, "advisor", 0, "sample", 0))
}

func warning(msg string) obj {
	return o("type", "warning", "data", o("summary", msg, "message", msg))
}

func optionsEntry(opts ...obj) obj {
	return o("type", "options", "data", o("summary", "x", "options", opts, "dropped", 0, "merged", 0))
}

func opt(name string, args any, content, id string) obj {
	return o("content", content, "call", call(name, args, id))
}

// tc is a tool call of a generate output: id, name, arguments.
type tc [3]string

func out(content string, calls ...tc) obj {
	x := o("content", content)
	if len(calls) > 0 {
		l := make([]any, len(calls))
		for i, c := range calls {
			l[i] = o("id", c[0], "name", c[1], "arguments", c[2])
		}
		x = x.with("tool_calls", l)
	}
	return x
}

// genResult is a generate result with outputs and meta (alternating keys and
// values).
func genResult(outputs []obj, meta ...any) obj {
	return o("type", "generate", "meta", o(meta...), "data", o("outputs", outputs,
		"usage", o("prompt_tokens", 10, "completion_tokens", 5, "cost", 0)))
}

func failed(kind, errText string, meta ...any) obj {
	return o("type", kind, "meta", o(meta...), "error", errText)
}

func vars(timeout, retries int, bracket any) map[string]json.RawMessage {
	v := o("timeout", timeout, "retries", retries)
	if bracket != nil {
		v = v.with("bracket", bracket)
	}
	return map[string]json.RawMessage{"triframe": raw(v)}
}

func usage(tokens, actions int, seconds float64) operations.RunUsage {
	return operations.RunUsage{Tokens: tokens, Actions: actions, Seconds: seconds}
}

type goldenCase struct {
	name string
	phasetest.Case
}

// caseOpt sets one field of a case.
type caseOpt func(c *phasetest.Case)

func withSettings(s obj) caseOpt { return func(c *phasetest.Case) { c.Settings = raw(s) } }
func withVars(v map[string]json.RawMessage) caseOpt {
	return func(c *phasetest.Case) { c.Vars = v }
}
func withUsage(u operations.RunUsage) caseOpt { return func(c *phasetest.Case) { c.Usage = u } }
func withStep(n uint64) caseOpt               { return func(c *phasetest.Case) { c.Step = n } }
func withEntries(es ...obj) caseOpt {
	return func(c *phasetest.Case) {
		c.Entries = make([]phases.Entry, len(es))
		for i, e := range es {
			c.Entries[i] = phases.Entry{Type: e[0].v.(string), Data: raw(e[1].v)}
		}
	}
}

func withResults(t *testing.T, rs ...obj) caseOpt {
	return func(c *phasetest.Case) {
		c.Results = make([]operations.Result, len(rs))
		for i, r := range rs {
			if err := json.Unmarshal(raw(r), &c.Results[i]); err != nil {
				t.Fatalf("result %d: %v", i, err)
			}
		}
	}
}

func cat(parts ...[]obj) []obj {
	var out []obj
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// goldenCases lists triframe's golden cases in file order.
func goldenCases(t *testing.T) []goldenCase {
	var cases []goldenCase
	add := func(name, phase string, opts ...caseOpt) {
		c := phasetest.Case{Phase: phase, Task: goldenTask, Settings: raw(settings()), Usage: usage(100, 1, 5),
			Limits: operations.RunLimits{Tokens: 100000, Actions: 10, Seconds: 600}}
		for _, f := range opts {
			f(&c)
		}
		cases = append(cases, goldenCase{name, c})
	}
	results := func(rs ...obj) caseOpt { return withResults(t, rs...) }
	v := vars(60, 0, nil)

	hist := []obj{
		o("type", "task", "data", o("summary", "task", "task", goldenTask, "tools", []string{"bash"}, "mode", "tools")),
		advice("Start by listing the directory."),
		choice("bash", o("command", "ls -la"), "I will look around.", "call_a"),
		toolOutput("bash", "total 0", "call_a"),
	}
	entries := func(es ...[]obj) caseOpt { return withEntries(cat(es...)...) }
	one := func(es ...obj) []obj { return es }

	// init
	add("init_defaults", "init")
	add("init_text_xml_scoring", "init", withSettings(settings("enable_tool_use", false, "enable_xml", true, "intermediate_scoring", true)))
	add("init_flock_keys", "init", withSettings(settings("workflow_type", "triframe", "generator", o("model", "gen"), "require_function_call", true,
		"advisors", []obj{o("model", "adv", "temp", 0.2, "n", 1, "max_tokens", 500, "stop", []any{}, "logprobs", 2, "priority", "high", "max_reasoning_tokens", 100)})))
	add("init_no_actors", "init", withSettings(settings("actors", []obj{})))
	add("init_bad_limit_type", "init", withSettings(settings("limit_type", "tokenz")))

	// advisor
	add("advisor_on", "advisor", entries(hist), withVars(v))
	add("advisor_required_call", "advisor", entries(hist), withVars(v), withSettings(settings("require_function_call", true)))
	add("advisor_off", "advisor", entries(hist), withVars(v), withSettings(settings("enable_advising", false)))
	add("advisor_none_configured", "advisor", entries(hist), withVars(v), withSettings(settings("advisors", []obj{})))
	add("advisor_text_xml", "advisor", entries(hist), withVars(v), withSettings(settings("enable_tool_use", false, "enable_xml", true)))

	// actor
	twoActors := []obj{o("model", "act-a"), o("model", "act-b", "n", 2, "temp", 1)}
	add("actor_with_advice", "actor", entries(hist), withVars(v), withSettings(settings("actors", twoActors)),
		results(genResult([]obj{out("", tc{"c9", "advise", dumps(o("advice", "Now create hello.txt with printf."))})}, "role", "advisor", "index", "0")))
	add("actor_advising_off", "actor", entries(hist[:1], hist[2:]), withVars(v), withSettings(settings("actors", twoActors, "enable_advising", false)))
	add("actor_invalid_advice", "actor", entries(hist), withVars(v), withSettings(settings("advisors", []obj{o("model", "adv"), o("model", "adv2")})),
		results(genResult([]obj{out("I think you should create the file."), out("", tc{"c9", "advise", `{"advice": `})}, "role", "advisor", "index", "0"),
			failed("generate", "adv2: endpoint unreachable", "role", "advisor", "index", "1")))
	add("actor_text_fenced", "actor", entries(hist), withVars(v), withSettings(settings("enable_tool_use", false)),
		results(genResult([]obj{out("Good progress.\n```advise\nCreate the file:\n```bash\nprintf flock > hello.txt\n```\nthen count.\n```")}, "role", "advisor", "index", "0")))
	add("actor_text_xml", "actor", entries(hist, one(warning("The chosen action had no valid tool call."))), withVars(v),
		withSettings(settings("enable_tool_use", false, "enable_xml", true)),
		results(genResult([]obj{out("<advise>Create the file with printf.</advise>")}, "role", "advisor", "index", "0")))
	add("actor_required_call", "actor", entries(hist), withVars(v), withSettings(settings("require_function_call", true, "enable_advising", false)))

	// history trimming: many actions, small budget and output limit
	long := []obj{hist[0]}
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("call_%d", i)
		long = append(long, choice("bash", o("command", fmt.Sprintf("echo step %d", i)), fmt.Sprintf("Step %d.", i), id),
			toolOutput("bash", fmt.Sprintf("step %d ", i)+strings.Repeat("x", 300), id))
	}
	add("actor_history_trimmed", "actor", entries(long), withVars(v),
		withSettings(settings("enable_advising", false, "context_trimming_threshold", 2600, "output_limit", 120)))
	add("advisor_history_trimmed", "advisor", entries(long), withVars(v),
		withSettings(settings("context_trimming_threshold", 2600, "output_limit", 120)))

	// advisor_ratings
	bash := func(id, command string) tc { return tc{id, "bash", dumps(o("command", command))} }
	add("options_collect_and_rate", "advisor_ratings", entries(hist), withVars(v),
		withSettings(settings("actors", twoActors, "raters", []obj{o("model", "rat-a"), o("model", "rat-b", "n", 2)})),
		results(
			genResult([]obj{out("List files.", bash("c1", "ls"))}, "role", "actor", "index", "0", "advice", "with"),
			genResult([]obj{out("List files.", bash("c2", "ls"))}, "role", "actor", "index", "0", "advice", "without"),
			genResult([]obj{out("Create it.", bash("c3", "printf flock > hello.txt")), out("", tc{"c4", "bash", "{not json"}), out("")},
				"role", "actor", "index", "1", "advice", "with"),
			genResult([]obj{out("Look first.", tc{"c5", "rm_rf", "{}"}), out("Submit now.", tc{"c6", "submit", dumps(o("answer", 5))})},
				"role", "actor", "index", "1", "advice", "without")))
	add("options_single_skips_rating", "advisor_ratings", entries(hist), withVars(vars(60, 1, nil)),
		results(genResult([]obj{out("Create it.", bash("c1", "printf flock > hello.txt"))}, "role", "actor", "index", "0", "advice", "with"),
			genResult([]obj{out("Create it.", bash("c2", "printf flock > hello.txt"))}, "role", "actor", "index", "0", "advice", "without")))
	add("options_none_retry", "advisor_ratings", entries(hist), withVars(v),
		results(genResult([]obj{out("", tc{"c1", "set_timeout", dumps(o("timeout", "soon"))})}, "role", "actor", "index", "0", "advice", "with"),
			genResult([]obj{out("")}, "role", "actor", "index", "0", "advice", "without")))
	add("options_none_generate_error", "advisor_ratings", entries(hist), withVars(vars(60, 2, nil)),
		results(failed("generate", "scripted model act: script exhausted", "role", "actor", "index", "0", "advice", "with")))
	add("options_none_exhausted", "advisor_ratings", entries(hist), withVars(vars(60, 3, nil)),
		results(genResult([]obj{out("I am not sure what to do.")}, "role", "actor", "index", "0", "advice", "without")))
	add("options_no_raters_first", "advisor_ratings", entries(hist), withVars(v), withSettings(settings("raters", []obj{})),
		results(genResult([]obj{out("A", bash("c1", "ls")), out("B", bash("c2", "pwd"))}, "role", "actor", "index", "0", "advice", "without")))
	add("options_text_fenced", "advisor_ratings", entries(hist), withVars(v), withSettings(settings("enable_tool_use", false)),
		results(genResult([]obj{out("Create it.\n\n```bash\nprintf flock > hello.txt\n```"), out("```set_timeout\n30\n```"),
			out("Done:\n```submit\n5\n```\nand more text")}, "role", "actor", "index", "0", "advice", "with")))
	add("options_text_xml", "advisor_ratings", entries(hist), withVars(v), withSettings(settings("enable_tool_use", false, "enable_xml", true)),
		results(genResult([]obj{out("Create it.\n<bash>printf flock > hello.txt</bash>"), out("<python>\nprint(len('flock'))\n</python>")},
			"role", "actor", "index", "0", "advice", "with")))

	// aggregate_ratings
	three := optionsEntry(opt("bash", o("command", "ls"), "A", "c1"), opt("bash", o("command", "printf flock > hello.txt"), "B", "c2"),
		opt("submit", o("answer", "5"), "C", "c3"))
	withThree := entries(hist, one(three))
	// rate is a rater's output; rs alternate option index and rating.
	rate := func(rs ...any) obj {
		var l []any
		for i := 0; i+1 < len(rs); i += 2 {
			l = append(l, o("option_index", rs[i], "rating", rs[i+1], "comment", "option "+strconv.Itoa(rs[i].(int))))
		}
		return out("", tc{"r1", "rate_options", dumps(o("ratings", l))})
	}
	add("aggregate_mean_best", "aggregate_ratings", withThree, withVars(vars(60, 1, nil)),
		results(genResult([]obj{rate(0, 1, 1, 2, 2, -1), rate(0, 0.5, 1, 1, 2, -2)}, "role", "rater", "index", "0"),
			genResult([]obj{rate(0, 1, 1, 1.5, 2, 9)}, "role", "rater", "index", "1")))
	add("aggregate_tie_first", "aggregate_ratings", withThree, withVars(v),
		results(genResult([]obj{rate(0, 1, 1, 1, 2, 1)}, "role", "rater", "index", "0")))
	add("aggregate_low_retry", "aggregate_ratings", withThree, withVars(v),
		results(genResult([]obj{rate(0, -1, 1, -0.5, 2, -2)}, "role", "rater", "index", "0")))
	add("aggregate_low_exhausted", "aggregate_ratings", withThree, withVars(vars(60, 3, nil)),
		results(genResult([]obj{rate(0, -1, 1, -0.5, 2, -2)}, "role", "rater", "index", "0")))
	add("aggregate_unparseable_first", "aggregate_ratings", withThree, withVars(v),
		results(genResult([]obj{out("Option 1 looks best."), out("", tc{"r", "rate_options", `{"ratings": "many"}`})}, "role", "rater", "index", "0"),
			failed("generate", "timeout", "role", "rater", "index", "1")))
	add("aggregate_out_of_range_ignored", "aggregate_ratings", withThree, withVars(v),
		results(genResult([]obj{rate(5, 2, 2, 0.5, 0, 0)}, "role", "rater", "index", "0")))
	add("aggregate_text_json", "aggregate_ratings", withThree, withVars(v), withSettings(settings("enable_tool_use", false)),
		results(genResult([]obj{out("My ratings:\n```json\n{\"ratings\": [{\"option_index\": 0, \"rating\": 0}, {\"option_index\": 1, \"rating\": 1.5}, {\"option_index\": 2, \"rating\": -1}]}\n```")},
			"role", "rater", "index", "0")))

	// process
	chosen := func(name string, args any) caseOpt { return entries(hist, one(choice(name, args, "Next step.", "c7"))) }
	add("process_bash", "process", chosen("bash", o("command", "printf flock > hello.txt")), withVars(vars(120, 0, nil)))
	add("process_python", "process", chosen("python", o("code", "print(1)")), withVars(v))
	add("process_set_timeout", "process", chosen("set_timeout", o("timeout", 300)), withVars(v))
	add("process_set_timeout_invalid", "process", chosen("set_timeout", o("timeout", 0)), withVars(vars(90, 0, nil)))
	add("process_submit", "process", chosen("submit", o("answer", "6")), withVars(vars(60, 2, nil)))
	add("process_score", "process", chosen("score", o()), withVars(v), withSettings(settings("intermediate_scoring", true)))
	add("process_score_log", "process", chosen("score_log", o()), withVars(v), withSettings(settings("intermediate_scoring", true)))
	add("process_no_call", "process", entries(hist, one(o("type", "choice", "data", o("summary", "x",
		"option", o("content", "hmm", "invalid", "bash: empty"), "index", 0)))), withVars(v))
	agents := o("agents", []obj{
		o("task", "Count bytes of hello.txt", "approach", "use wc", "include_task_description", true),
		o("task", "Count bytes of hello.txt", "approach", "use python"),
		o("task", "Check the file exists", "approach", "ls")})
	add("process_launch_subagents", "process", chosen("launch_subagents", agents), withVars(v), withStep(40),
		withSettings(settings("enable_subagents", true, "limits", o("tokens", 100000, "actions", 10, "seconds", 600))),
		withUsage(usage(40000, 4, 120)))
	add("process_launch_too_many", "process", chosen("launch_subagents", agents), withVars(v),
		withSettings(settings("enable_subagents", true, "subagents", o("max_agents", 2))))
	add("process_launch_disabled", "process", chosen("launch_subagents", agents), withVars(v))
	add("process_conclude", "process", chosen("conclude", o("result", "hello.txt has 5 bytes")), withVars(v),
		withSettings(settings("subagent", true)))

	// tool_output
	bashRes := func(stdout, stderr string, code int, timedOut bool) obj {
		return o("type", "bash", "data", o("stdout", stdout, "stderr", stderr, "exit_code", code, "timed_out", timedOut, "truncated", false))
	}
	afterBash := chosen("bash", o("command", "wc -c < hello.txt"))
	add("tool_output_bash", "tool_output", afterBash, withVars(v), results(bashRes("5\n", "", 0, false)))
	add("tool_output_bash_error_80pct", "tool_output", afterBash, withVars(v), results(bashRes("", "wc: hello.txt: No such file", 1, false)),
		withUsage(usage(100, 8, 5)))
	add("tool_output_95pct_tokens", "tool_output", afterBash, withVars(v), results(bashRes("5\n", "", 0, false)),
		withSettings(settings("limit_type", "token")), withUsage(usage(96000, 8, 5)))
	add("tool_output_timeout", "tool_output", afterBash, withVars(v), results(bashRes("partial\n", "", 124, true)),
		withSettings(settings("limit_type", "time")))
	var lines strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	add("tool_output_trimmed", "tool_output", afterBash, withVars(v), results(bashRes(lines.String(), "", 0, false)),
		withSettings(settings("output_limit", 200)))
	add("tool_output_python", "tool_output", chosen("python", o("code", "1/0")), withVars(v),
		results(o("type", "python", "data", o("output", "", "error", "ZeroDivisionError: division by zero", "timed_out", false))))
	add("tool_output_score", "tool_output", chosen("score", o()), withVars(v),
		results(o("type", "score", "data", o("score", 0.75, "message", "3 of 4 checks pass"))))
	add("tool_output_score_log", "tool_output", chosen("score_log", o()), withVars(v),
		results(o("type", "score_log", "data", o("entries", []obj{o("elapsed_seconds", 12.5, "score", 0.5, "message", "half")}))))
	add("tool_output_op_error", "tool_output", afterBash, withVars(v), results(failed("bash", `no handler for operation kind "bash"`)))

	// subagents and tournament
	launch := entries(hist, one(choice("launch_subagents", agents, "Next step.", "c7")))
	spawn := func(agent, index, status string, conclusion any, reason string) obj {
		d := o("run_id", "golden-child-"+index, "status", status, "end_reason", reason,
			"usage", o("tokens", 1000, "actions", 2, "seconds", 3, "cost", 0))
		if conclusion != nil {
			d = d.with("result", o("conclusion", conclusion, "report", "Action: bash: wc -c < ../../hello.txt\nOutput: 5"))
		}
		return o("type", "spawn", "meta", o("agent", agent, "index", index), "data", d)
	}
	sub := withSettings(settings("enable_subagents", true))
	add("subagents_judge_pair", "subagents", launch, withVars(v), sub, results(
		spawn("agent_40_0", "0", "succeeded", "5 bytes", "concluded"), spawn("agent_40_1", "1", "succeeded", "hello.txt is 5 bytes long", "concluded"),
		spawn("agent_40_2", "2", "succeeded", "it exists", "concluded")))
	add("subagents_walkover", "subagents", launch, withVars(v), sub, results(
		spawn("agent_40_0", "0", "failed", nil, "limit_actions"), spawn("agent_40_1", "1", "succeeded", "5 bytes", "concluded"),
		failed("spawn", "spawn triframe: settings rejected", "agent", "agent_40_2", "index", "2")))
	var ways []obj
	for i := 0; i < 3; i++ {
		ways = append(ways, o("task", "T", "approach", fmt.Sprintf("way %d", i)))
	}
	four := o("agents", ways)
	launchFour := one(choice("launch_subagents", four, "Next step.", "c7"))
	add("subagents_three_way", "subagents", entries(hist, launchFour), withVars(v), sub, results(
		spawn("agent_9_0", "0", "succeeded", "A", "concluded"), spawn("agent_9_1", "1", "succeeded", "B", "concluded"),
		spawn("agent_9_2", "2", "succeeded", "C", "concluded")))
	var ran []obj
	for i, c := range []string{"A", "B", "C"} {
		ran = append(ran, o("id", fmt.Sprintf("agent_9_%d", i), "task", "T", "approach", fmt.Sprintf("way %d", i), "status", "succeeded",
			"conclusion", c, "report", "Action: bash: echo "+c))
	}
	subEntry := o("type", "subagents", "data", o("summary", "x", "call_id", "c7", "agents", ran))
	judge := func(a, b, winner string) obj {
		return genResult([]obj{out("", tc{"j", "select_winner", dumps(o("winner_id", winner, "reasoning", winner+" verified its answer"))})},
			"role", "judge", "group", "0", "a", a, "b", b)
	}
	bracket := func(round int, alive ...string) map[string]json.RawMessage {
		return vars(60, 0, o("round", round, "groups", []obj{o("task", "T", "alive", alive)}))
	}
	tourney := entries(hist, launchFour, one(subEntry))
	add("tournament_next_round", "tournament", tourney, sub, withVars(bracket(1, "agent_9_0", "agent_9_1", "agent_9_2")),
		results(judge("agent_9_0", "agent_9_1", "agent_9_1")))
	add("tournament_final", "tournament", tourney, sub, withVars(bracket(2, "agent_9_1", "agent_9_2")),
		results(judge("agent_9_1", "agent_9_2", "agent_9_2")))
	add("tournament_bad_verdict_fallback", "tournament", tourney, sub, withVars(bracket(2, "agent_9_1", "agent_9_2")),
		results(judge("agent_9_1", "agent_9_2", "agent_7_7")))
	add("tournament_text_mode", "tournament", tourney, withSettings(settings("enable_subagents", true, "enable_tool_use", false)),
		withVars(bracket(2, "agent_9_1", "agent_9_2")),
		results(genResult([]obj{out("```json\n{\"winner_id\": \"agent_9_2\", \"reasoning\": \"checked\"}\n```")},
			"role", "judge", "group", "0", "a", "agent_9_1", "b", "agent_9_2")))

	// issue 9 point 10: the newest action's 30,000-character output stays
	// in the next prompts (clipped head and tail) under a 20,000-character
	// budget
	var big strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&big, "output line %05d of the listing\n", i)
	}
	bigHist := entries(hist, one(advice("Now list it."), choice("bash", o("command", "ls -R /big"), "Listing it.", "call_big"),
		toolOutput("bash", big.String()[:30000], "call_big"), advice("Count the files.")))
	add("actor_newest_output_clipped", "actor", bigHist, withVars(v),
		withSettings(settings("context_trimming_threshold", 20000, "output_limit", 20000)))
	add("advisor_newest_output_clipped", "advisor", bigHist, withVars(v),
		withSettings(settings("context_trimming_threshold", 20000, "output_limit", 20000)))
	add("init_output_limit_over_budget", "init", withSettings(settings("context_trimming_threshold", 20000, "output_limit", 100000)))

	// issue 11 point 4: sandbox tools named in tools are offered to the
	// actors (native calls), a chosen call becomes a sandbox op and its
	// envelope the tool output the next prompts show
	schema := o("text2sql:execute", o("description", "Run a read-only SQL query.", "parameters",
		o("type", "object", "properties", o("db_id", o("type", "string"), "query", o("type", "string")), "required", []string{"db_id", "query"})))
	sbx := withSettings(settings("enable_advising", false, "tools", []string{"text2sql:execute"}, "sandbox_tools", schema))
	sqlArgs := o("db_id", "concert", "query", "SELECT count(*) FROM singer")
	sqlHist := cat(hist, one(choice("text2sql-execute", sqlArgs, "Count them.", "c8"), toolOutput("text2sql-execute", `{"columns":["count(*)"],"rows":[[6]]}`, "c8")))
	add("sandbox_actor_offers", "actor", entries(sqlHist), withVars(v), sbx)
	add("sandbox_options", "advisor_ratings", entries(hist), withVars(v), sbx,
		results(genResult([]obj{out("Count them.", tc{"c8", "text2sql-execute", dumps(sqlArgs)}), out("", tc{"c9", "text2sql-execute", "[1]"})},
			"role", "actor", "index", "0", "advice", "without")))
	add("sandbox_process", "process", chosen("text2sql-execute", sqlArgs), withVars(v), sbx)
	add("sandbox_tool_output", "tool_output", chosen("text2sql-execute", sqlArgs), withVars(v), sbx,
		results(o("type", "sandbox", "data", o("code", 0, "message", "success", "data", o("columns", []string{"count(*)"}, "rows", [][]int{{6}})))))
	add("sandbox_text_mode_refused", "init", withSettings(settings("enable_tool_use", false, "tools", []string{"text2sql:execute"})))

	// A model failure that cannot get better ends the run at once, in
	// any phase: the actors' own calls, or a subagent that met it.
	keyRefused := `model "act" at llm.example:8000: HTTP 401 (the endpoint refused the API key in $OPENAI_API_KEY) (after 1 attempt, not retried): Incorrect API key provided`
	add("options_model_error_ends", "advisor_ratings", entries(hist), withVars(vars(60, 2, nil)),
		results(failed("generate", keyRefused, "role", "actor", "index", "0", "advice", "with").with("code", "model_error"),
			failed("generate", keyRefused, "role", "actor", "index", "0", "advice", "without").with("code", "model_error")))
	limited := spawn("agent_40_1", "1", "failed", nil, "rate_limited")
	limited[2].v = limited[2].v.(obj).with("error", `model "act" at llm.example:8000: HTTP 429 (after 1 attempt, not retried: the endpoint asked to wait 3600 s, more than models.act.max_retry_wait_s (60 s) allows): slow down`)
	add("subagent_rate_limited_ends", "subagents", launch, withVars(v), sub, results(
		spawn("agent_40_0", "0", "succeeded", "5 bytes", "concluded"), limited,
		spawn("agent_40_2", "2", "succeeded", "it exists", "concluded")))
	return cases
}
