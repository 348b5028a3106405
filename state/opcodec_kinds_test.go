package state

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
)

const kindsGoldenPath = "testdata/opcodec_kinds.json"

var updateFormat = flag.Bool("update", false, "rewrite "+kindsGoldenPath+" from what the codec writes")

// kindsGolden is what the codec writes for kindCases: by case name, the
// request record (EncodeRequest) and the result record (EncodeResult).
type kindsGolden map[string]struct {
	Request string `json:"request"`
	Result  string `json:"result"`
}

// kindCase is one op of the kinds golden: a request and its result, every
// field of both payloads set so that each JSON name is pinned.
type kindCase struct {
	name string
	req  operations.Request
	res  operations.Result
}

// noParams is the case of a request without params: its record decodes
// to the kind's zero params.
const noParams = "no params"

// kindCases holds, for every built-in kind, a request and a result with
// every payload field set, plus the shapes the codec treats apart: a
// failed result with a code and no data, a result whose data is a zero
// payload, a request without params.
func kindCases() []kindCase {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	one, half := 1.0, 0.5
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	meta := operations.Meta{"purpose": "pin", "role": "actor"}
	genReq := operations.GenerateRequest{Model: "m", Messages: []operations.Message{
		{Role: operations.RoleSystem, Content: "sys <b>&</b>"},
		{Role: operations.RoleUser, Content: "hi", Name: "u", Images: []operations.Image{{MediaType: "image/png", Data: "iVBO", Source: "vm:screenshot"}}},
		{Role: operations.RoleAssistant, Content: "", Reasoning: "think", ToolCalls: []operations.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}},
	}, Tools: []operations.Tool{{Name: "bash", Description: "run", Parameters: raw(`{"type":"object"}`)}},
		ToolChoice: "auto", N: 2, Temperature: &half, MaxTokens: 64, Stop: []string{"\n\n"}, ReasoningEffort: "low",
		Logprobs: true, TopLogprobs: 2, TokenIDs: true, Extra: map[string]json.RawMessage{"seed": raw(`7`), "top_p": raw(`0.9`)}}
	genRes := operations.GenerateResult{Outputs: []operations.Output{{Content: "x", Reasoning: "r", FinishReason: "tool_calls",
		ToolCalls: []operations.ToolCall{{ID: "c2", Name: "submit", Arguments: `{"answer":"6"}`}},
		Logprobs:  []operations.Logprob{{Token: "x", Logprob: -0.25, Top: []operations.TopProb{{Token: "y", Logprob: -2}}}}, TokenIDs: []int{55}}},
		Usage: operations.Usage{PromptTokens: 10, CompletionTokens: 3, Cost: 0.0125}, DurationMS: 42, Model: "m-2025",
		Replay: operations.ReplayMiss, PromptTokenIDs: []int{1, 2, 3}}
	usage := operations.RunUsage{Tokens: 100, Actions: 3, Seconds: 1.5, Cost: 0.25, ReplayHits: 1, ReplayMisses: 2}
	res := func(k operations.Kind, set func(*operations.Result)) operations.Result {
		r := operations.Result{Kind: k, Meta: meta}
		set(&r)
		return r
	}
	cases := []kindCase{
		{"bash", operations.Request{Kind: operations.KindBash, Meta: meta, Params: &operations.BashRequest{Command: "ls -la", TimeoutS: 2.5, Session: "s2"}},
			res(operations.KindBash, func(r *operations.Result) {
				r.Data = &operations.BashResult{Stdout: "out\n", Stderr: "err", ExitCode: 2, TimedOut: true, Truncated: true}
			})},
		{"python", operations.NewPython("print(1)", 3),
			res(operations.KindPython, func(r *operations.Result) {
				r.Data = &operations.PythonResult{Output: "1\n", Error: "Traceback", TimedOut: true, Truncated: true}
			})},
		{"generate", operations.NewGenerate(genReq).WithMeta(operations.MetaRole, operations.ModelRoleActor),
			res(operations.KindGenerate, func(r *operations.Result) { g := genRes; r.Data = &g })},
		{"spawn", operations.NewSpawn(operations.SpawnRequest{Workflow: "react", Settings: raw(`{"a":1}`), Task: "t", Name: "child-1"}),
			res(operations.KindSpawn, func(r *operations.Result) {
				r.Data = &operations.SpawnResult{RunID: "r-1", Status: StatusFailed, Result: raw(`"6"`), EndReason: "error",
					Error: "boom", Usage: usage, WorkDir: "/w/children/child-1"}
			})},
		{"submit", operations.NewSubmit("6"),
			res(operations.KindSubmit, func(r *operations.Result) { r.Data = &operations.SubmitResult{Accepted: true} })},
		{"score", operations.NewScore(),
			res(operations.KindScore, func(r *operations.Result) { r.Data = &operations.ScoreResult{Score: &one, Message: "ok"} })},
		{"score_log", operations.NewScoreLog(),
			res(operations.KindScoreLog, func(r *operations.Result) {
				r.Data = &operations.ScoreLogResult{Entries: []operations.ScoreLogEntry{{ElapsedSeconds: 1.25, Score: &half, Message: "m"}, {Message: "none"}}}
			})},
		{"get_usage", operations.NewGetUsage(),
			res(operations.KindGetUsage, func(r *operations.Result) {
				r.Data = &operations.GetUsageResult{Usage: usage, Limits: operations.RunLimits{Tokens: 1000, Actions: 10, Seconds: 60, Cost: 1}}
			})},
		{"get_task", operations.NewGetTask(),
			res(operations.KindGetTask, func(r *operations.Result) {
				r.Data = &operations.GetTaskResult{Instructions: "do it", Scoring: operations.Scoring{Intermediate: true, VisibleToAgent: true}}
			})},
		{"log", operations.Request{Kind: operations.KindLog, Params: &operations.LogRequest{Content: "c", Level: "warn", Title: "t"}},
			res(operations.KindLog, func(r *operations.Result) { r.Data = &operations.RecordedResult{Recorded: true} })},
		{"action", operations.Request{Kind: operations.KindAction, Params: &operations.ActionRequest{Type: "bash", Parameters: raw(`{"command":"ls"}`)}},
			res(operations.KindAction, func(r *operations.Result) { r.Data = &operations.RecordedResult{Recorded: true} })},
		{"observation", operations.Request{Kind: operations.KindObservation, Params: &operations.ObservationRequest{Type: "bash", Content: "a.txt"}},
			res(operations.KindObservation, func(r *operations.Result) { r.Data = &operations.RecordedResult{Recorded: true} })},
		{"sandbox", operations.Request{Kind: operations.KindSandbox, Params: &operations.SandboxRequest{Action: "bash:run", Params: raw(`{"command":"ls"}`),
			TimeoutS: 5, Session: "b1", ForkFrom: []string{"b0", ""}}},
			res(operations.KindSandbox, func(r *operations.Result) {
				r.Data = &operations.SandboxResult{Code: 3, Message: "m", Data: raw(`{"stdout":"x"}`), Meta: raw(`{"duration":1}`)}
			})},
		{"read_file", operations.Request{Kind: operations.KindReadFile, Params: &operations.ReadFileRequest{Path: "d.parquet", MaxBytes: 1024, As: operations.ReadAsJSONL}},
			res(operations.KindReadFile, func(r *operations.Result) {
				r.Data = &operations.ReadFileResult{Exists: true, Content: "{}\n", Bytes: 3}
			})},
		{"write_file", operations.NewWriteFile("out/r.jsonl", "line\n", true),
			res(operations.KindWriteFile, func(r *operations.Result) {
				r.Data = &operations.WriteFileResult{Path: "/w/out/r.jsonl", Bytes: 5}
			})},
		{"human", operations.NewHuman(operations.HumanRequest{Question: "ok?", Choices: []string{"yes", "no"}, Scale: &operations.Scale{Min: 1, Max: 5}}),
			res(operations.KindHuman, func(r *operations.Result) {
				r.Data = &operations.HumanResult{Answer: raw(`"yes"`), AnsweredAt: t0}
			})},
		{"intervention", operations.NewIntervention("run this?", raw(`{"name":"bash","arguments":"{}"}`)),
			res(operations.KindIntervention, func(r *operations.Result) {
				r.Data = &operations.InterventionResult{Approved: true, Action: raw(`{"name":"submit"}`), AnsweredAt: t0}
			})},
		{"external", operations.NewExternal(operations.ExternalRequest{Command: []string{"python3", "agent.py"}, Shell: true, Model: "simulated",
			TimeoutS: 30, Env: map[string]string{"B": "2", "A": "1"}, AnswerFile: "answer.txt", TaskFile: "task.txt",
			TrajectoryFile: "traj.json", EpisodeFile: "ep.json", Name: "agent"}),
			res(operations.KindExternal, func(r *operations.Result) {
				r.Data = &operations.ExternalResult{Answer: "6", ExitCode: 1, TimedOut: true, Stderr: "tail", Calls: 4, Replayed: 1,
					SessionRuns: []string{"s-1", "s-2"}, Usage: usage, TerminationReason: "env_done", Episode: raw(`{"id":"e"}`)}
			})},
		{"gateway_wait", operations.NewGatewayWait(7),
			res(operations.KindGatewayWait, func(r *operations.Result) {
				g := genRes
				r.Data = &operations.GatewayWaitResult{Closed: true, Calls: []operations.GatewayCall{
					{ID: "call-1", Request: genReq, Result: &g},
					{ID: "call-2", Request: operations.GenerateRequest{Model: "m", Messages: []operations.Message{
						{Role: operations.RoleTool, Content: "a.txt", ToolCallID: "c1"}}}, Error: "429", Code: operations.CodeRateLimited},
					{ID: "call-3", Request: operations.GenerateRequest{Model: "m"}},
				}}
			})},
		{"failed with code", operations.NewGenerate(operations.GenerateRequest{Model: "m"}),
			operations.FailedWith(operations.NewGenerate(operations.GenerateRequest{Model: "m"}).WithMeta("k", "v"), operations.CodeModelError, "generate: model %q: 401", "m")},
		{"zero data", operations.NewBash("true", 0), operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{}}},
		{noParams, operations.Request{Kind: operations.KindScore}, operations.Result{Kind: operations.KindScore, Error: "no scorer"}},
	}
	return cases
}

// kindOp is the op of case i, done, with its timings.
func kindOp(i int, c kindCase) Op {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	t1, t2 := t0.Add(time.Second), t0.Add(2500*time.Millisecond)
	res := c.res
	return Op{ID: OpID("kinds", 2, i), RunID: "kinds", Step: 2, Index: i, Phase: "act", Status: OpDone,
		Request: c.req, Result: &res, Attempts: 2, CreatedAt: t0, StartedAt: &t1, FinishedAt: &t2}
}

// TestOpCodecKindsUpdate rewrites testdata/opcodec_kinds.json with -update.
func TestOpCodecKindsUpdate(t *testing.T) {
	if !*updateFormat {
		t.Skip("run with -update to rewrite " + kindsGoldenPath)
	}
	g := kindsGolden{}
	for i, c := range kindCases() {
		op := kindOp(i, c)
		req, chunks, err := EncodeRequest(op)
		if err != nil || len(chunks) != 0 {
			t.Fatalf("%s: %v, %d chunks", c.name, err, len(chunks))
		}
		res, rchunks, err := EncodeResult(op)
		if err != nil || len(rchunks) != 0 {
			t.Fatalf("%s: %v, %d result chunks", c.name, err, len(rchunks))
		}
		e := g[c.name]
		e.Request, e.Result = string(req), string(res)
		g[c.name] = e
	}
	b, err := json.MarshalIndent(g, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kindsGoldenPath, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpCodecKinds pins the journal records of every operation kind
// (testdata/opcodec_kinds.json): encoding an op of each kind, request and
// result with every payload field set, gives the stored bytes, and the
// stored bytes decode to the same op. A kind without a case fails the
// test, so that a new kind's encoding is pinned when it is added.
func TestOpCodecKinds(t *testing.T) {
	b, err := os.ReadFile(kindsGoldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var g kindsGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	cases := kindCases()
	covered := map[operations.Kind]bool{}
	for i, c := range cases {
		covered[c.req.Kind] = true
		want, ok := g[c.name]
		if !ok {
			t.Errorf("golden has no case %q", c.name)
			continue
		}
		op := kindOp(i, c)
		req, _, err := EncodeRequest(op)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(req) != want.Request {
			t.Errorf("%s: request record\n%s\nwant\n%s", c.name, req, want.Request)
		}
		res, rchunks, err := EncodeResult(op)
		if err != nil || len(rchunks) != 0 {
			t.Fatalf("%s: %v, %d result chunks", c.name, err, len(rchunks))
		}
		if string(res) != want.Result {
			t.Errorf("%s: result record\n%s\nwant\n%s", c.name, res, want.Result)
		}
		got, err := DecodeRequest([]byte(want.Request), func([]byte) ([]byte, error) { return nil, nil })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := ApplyResult(&got, []byte(want.Result), nil); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.name == noParams {
			op.Request = operations.NewScore()
			rec, _, _ := EncodeRequest(op)
			want.Request = string(rec)
		}
		if g, w := mustJSON(t, got), mustJSON(t, op); g != w {
			t.Fatalf("%s decoded:\n got %s\nwant %s", c.name, g, w)
		}
		if !reflect.DeepEqual(got, op) {
			t.Errorf("%s: decoded op\n%#v\nwant\n%#v", c.name, got, op)
		}
		if again, _, _ := EncodeRequest(got); string(again) != want.Request {
			t.Errorf("%s: the decoded request encodes to\n%s", c.name, again)
		}
		if again, _, _ := EncodeResult(got); string(again) != want.Result {
			t.Errorf("%s: the decoded result encodes to\n%s", c.name, again)
		}
	}
	for _, k := range operations.Kinds() {
		if !covered[k] && !strings.HasPrefix(string(k), "test_") {
			t.Errorf("kind %q has no case in kindCases: pin its encoding", k)
		}
	}
	if len(g) != len(cases) {
		t.Errorf("golden has %d cases, kindCases %d", len(g), len(cases))
	}
}

// BenchmarkOpCodec encodes and decodes the ops of the kinds golden (all
// of them per iteration: request record, result record, back) and the
// chunked generate request of the v1 golden.
func BenchmarkOpCodec(b *testing.B) {
	cases := kindCases()
	ops := make([]Op, len(cases))
	for i, c := range cases {
		ops[i] = kindOp(i, c)
	}
	none := func([]byte) ([]byte, error) { return nil, nil }
	b.Run("kinds/encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, op := range ops {
				if _, _, err := EncodeRequest(op); err != nil {
					b.Fatal(err)
				}
				if _, _, err := EncodeResult(op); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	reqs, ress := make([][]byte, len(ops)), make([][]byte, len(ops))
	for i, op := range ops {
		reqs[i], _, _ = EncodeRequest(op)
		ress[i], _, _ = EncodeResult(op)
	}
	b.Run("kinds/decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range reqs {
				op, err := DecodeRequest(reqs[i], none)
				if err != nil {
					b.Fatal(err)
				}
				if err := ApplyResult(&op, ress[i], none); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	long := goldenLongOp(b)
	rec, chunks, err := EncodeRequest(long)
	if err != nil {
		b.Fatal(err)
	}
	byKey := map[string][]byte{}
	for _, c := range chunks {
		byKey[string(c.Key)] = c.Val
	}
	b.Run("chunked/encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := EncodeRequest(long); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("chunked/decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeRequest(rec, func(k []byte) ([]byte, error) { return byKey[string(k)], nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// goldenLongOp decodes the chunked generate request of the v1 golden
// (testdata/opcodec_v1.json, written by the bbolt store's format test).
func goldenLongOp(tb testing.TB) Op {
	tb.Helper()
	b, err := os.ReadFile("testdata/opcodec_v1.json")
	if err != nil {
		tb.Fatal(err)
	}
	var g struct {
		Ops    map[string]string `json:"ops"`
		Chunks map[string]string `json:"chunks"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	for _, rec := range g.Ops {
		op, err := DecodeRequest([]byte(rec), func(key []byte) ([]byte, error) {
			return []byte(g.Chunks[hex.EncodeToString(key)]), nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		if op.ID == OpID("fmt", 1, 0) {
			return op
		}
	}
	tb.Fatal("the v1 golden has no op fmt/1/0")
	return Op{}
}
