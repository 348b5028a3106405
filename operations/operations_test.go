package operations

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/flockrun/flock/record"
)

func f(v float64) *float64 { return &v }

func TestRequestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		wire string
	}{
		{name: "bash", req: NewBash("ls", 5), wire: `{"type":"bash","params":{"command":"ls","timeout_s":5}}`},
		{name: "python", req: NewPython("x=1", 0), wire: `{"type":"python","params":{"code":"x=1"}}`},
		{name: "generate", req: NewGenerate(GenerateRequest{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}, N: 2, Temperature: f(0)}),
			wire: `{"type":"generate","params":{"model":"m","messages":[{"role":"user","content":"hi"}],"n":2,"temperature":0}}`},
		{name: "spawn", req: NewSpawn(SpawnRequest{Workflow: "script", Settings: json.RawMessage(`{"commands":["ls"]}`), Name: "a"}),
			wire: `{"type":"spawn","params":{"workflow":"script","settings":{"commands":["ls"]},"name":"a"}}`},
		{name: "submit with meta", req: NewSubmit("42").WithMeta("purpose", "final"), wire: `{"type":"submit","params":{"answer":"42"},"meta":{"purpose":"final"}}`},
		{name: "score", req: NewScore(), wire: `{"type":"score","params":{}}`},
		{name: "get_usage", req: NewGetUsage(), wire: `{"type":"get_usage","params":{}}`},
		{name: "log", req: NewLog("hello"), wire: `{"type":"log","params":{"content":"hello"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.wire {
				t.Fatalf("wire = %s\nwant   %s", b, tt.wire)
			}
			var back Request
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.req) {
				t.Fatalf("round trip = %+v, want %+v", back, tt.req)
			}
			if err := back.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	var r Request
	if err := json.Unmarshal([]byte(`{"type":"teleport","params":{}}`), &r); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("unknown kind: %v", err)
	}
	if err := (&Request{Kind: KindBash}).Validate(); !errors.Is(err, ErrMissingParams) {
		t.Fatalf("missing params: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"type":"bash","params":{"command":5}}`), &r); err == nil {
		t.Fatal("a number for command was accepted")
	}
	// Missing params decode as the kind's zero payload.
	if err := json.Unmarshal([]byte(`{"type":"score"}`), &r); err != nil || Score.Params(r) == nil {
		t.Fatalf("score without params: %v %+v", err, r)
	}
}

func TestResultRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		res  Result
	}{
		{name: "bash", res: Result{Kind: KindBash, Data: &BashResult{Stdout: "a", ExitCode: 1}}},
		{name: "generate", res: Result{Kind: KindGenerate, Data: &GenerateResult{Outputs: []Output{{Content: "x",
			ToolCalls: []ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}}}, Usage: Usage{PromptTokens: 3}}}},
		{name: "error only", res: Result{Kind: KindPython, Error: "interpreter died", Meta: map[string]string{"k": "v"}}},
		{name: "score", res: Result{Kind: KindScore, Data: &ScoreResult{Score: f(0.5), Message: "ok"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.res)
			if err != nil {
				t.Fatal(err)
			}
			var back Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.res) {
				t.Fatalf("round trip = %+v, want %+v (wire %s)", back, tt.res, b)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		if !k.Valid() {
			t.Fatalf("%s not valid", k)
		}
		info, _ := LookupKind(k)
		r := Request{Kind: k, Params: info.NewParams()}
		if err := r.Validate(); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if _, err := json.Marshal(Result{Kind: k, Data: info.NewResult()}); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if Kind("nope").Valid() {
		t.Fatal("nope is valid")
	}
}

// TestPayloadType: the codec refuses a payload that is not the type its
// kind declares, and a kind's accessors read only their own kind's
// payloads, even where two kinds share a result type.
func TestPayloadType(t *testing.T) {
	for name, v := range map[string]any{
		"request of another kind": Request{Kind: KindBash, Params: &PythonRequest{Code: "1"}},
		"request by value":        Request{Kind: KindBash, Params: BashRequest{Command: "ls"}},
		"result of another kind":  Result{Kind: KindBash, Data: &PythonResult{}},
		"result by value":         Result{Kind: KindSubmit, Data: SubmitResult{Accepted: true}},
		"request of unknown kind": Request{Kind: "teleport", Params: &BashRequest{}},
	} {
		_, err := json.Marshal(v)
		want := ErrPayloadType
		if strings.Contains(name, "unknown") {
			want = ErrUnknownKind
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", name, err, want)
		}
	}
	if err := (&Request{Kind: KindBash, Params: &PythonRequest{}}).Validate(); !errors.Is(err, ErrPayloadType) {
		t.Errorf("Validate of a python payload in a bash request: %v", err)
	}
	logged := Result{Kind: KindLog, Data: &RecordedResult{Recorded: true}}
	if Log.Result(logged) == nil || Action.Result(logged) != nil || Observation.Result(logged) != nil {
		t.Fatal("a log result is read as another kind's")
	}
	if Bash.Params(NewPython("1", 0)) != nil || Python.Params(NewPython("1", 0)).Code != "1" {
		t.Fatal("accessors cross kinds")
	}
	if r := Bash.New(BashRequest{Command: "ls"}); r.Kind != KindBash || Bash.Params(r).Command != "ls" {
		t.Fatalf("Bash.New = %+v", r)
	}
}

func TestMetaInt(t *testing.T) {
	tests := []struct {
		name    string
		m       Meta
		n       int
		ok, bad bool
	}{
		{name: "present", m: Meta{"index": "3"}, n: 3, ok: true},
		{name: "negative", m: Meta{"index": "-1"}, n: -1, ok: true},
		{name: "absent", m: Meta{"role": "rater"}},
		{name: "nil", m: nil},
		{name: "malformed", m: Meta{"index": "three"}, ok: true, bad: true},
		{name: "empty", m: Meta{"index": ""}, ok: true, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok, err := tt.m.Int("index")
			if n != tt.n || ok != tt.ok || (err != nil) != tt.bad {
				t.Fatalf("Int = %d, %v, %v; want %d, %v, bad %v", n, ok, err, tt.n, tt.ok, tt.bad)
			}
			if tt.bad && (!errors.Is(err, ErrBadMeta) || !strings.Contains(err.Error(), `index="`+tt.m["index"]+`"`)) {
				t.Fatalf("error %v does not wrap ErrBadMeta naming the label", err)
			}
		})
	}
}

func TestMetaIndex(t *testing.T) {
	tests := []struct {
		name string
		m    Meta
		want int
		err  string
	}{
		{name: "in range", m: Meta{"index": "2"}, want: 2},
		{name: "absent", m: Meta{}, err: "no index label"},
		{name: "malformed", m: Meta{"index": "2x"}, err: `index="2x" is not an integer`},
		{name: "too big", m: Meta{"index": "3"}, err: "index=3 is outside [0, 3)"},
		{name: "negative", m: Meta{"index": "-1"}, err: "index=-1 is outside [0, 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.m.Index("index", 3)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Index = %d, %v; want %d", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrBadMeta) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Index error = %v, want ErrBadMeta with %q", err, tt.err)
			}
		})
	}
}

func TestDeclareRefusesBadKinds(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	type empty struct{}
	mustPanic("empty", func() { Declare[empty, empty]("", nil) })
	mustPanic("built-in twice", func() { Declare[BashRequest, BashResult](KindBash, nil) })
	mustPanic("not a struct", func() { Declare[string, empty]("test_string", nil) })
	mustPanic("field type clash", func() {
		Declare[empty, empty]("test_clash", func(Result, *empty) (map[string]any, bool) { return map[string]any{"stdout": 1}, true })
	})
	for _, k := range []Kind{"test_string", "test_clash"} {
		if k.Valid() {
			t.Errorf("refused kind %s was declared", k)
		}
	}
	ks := Kinds()
	if !sort.SliceIsSorted(ks, func(i, j int) bool { return ks[i] < ks[j] }) {
		t.Fatalf("Kinds not sorted: %v", ks)
	}
}

func TestEffects(t *testing.T) {
	sub := NewSubmit("42")
	tests := []struct {
		name string
		req  Request
		res  Result
		want Effects
	}{
		{name: "bash", req: NewBash("ls", 0), res: Result{Kind: KindBash, Data: &BashResult{ExitCode: 1}}, want: Effects{Usage: RunUsage{Actions: 1}}},
		{name: "bash error", req: NewBash("ls", 0), res: Result{Kind: KindBash, Error: "x", Data: &BashResult{}}},
		{name: "generate error keeps usage", req: NewGenerate(GenerateRequest{}), res: Result{Kind: KindGenerate, Error: "x",
			Data: &GenerateResult{Usage: Usage{PromptTokens: 2, CompletionTokens: 3, Cost: 0.5}}}, want: Effects{Usage: RunUsage{Tokens: 5, Cost: 0.5}}},
		{name: "log", req: NewLog("hi"), res: Result{Kind: KindLog, Data: &RecordedResult{Recorded: true}},
			want: Effects{Entries: []Record{{Type: "log", Data: &LogRequest{Content: "hi"}}}}},
		{name: "submit", req: sub, res: Result{Kind: KindSubmit, Data: &SubmitResult{Accepted: true}},
			want: Effects{Usage: RunUsage{Actions: 1}, Result: json.RawMessage(`"42"`), Entries: []Record{{Type: EntrySubmission, Data: Submit.Params(sub)}}}},
		{name: "score", req: NewScore(), res: Result{Kind: KindScore, Data: &ScoreResult{Score: f(1), Message: "m"}},
			want: Effects{Usage: RunUsage{Actions: 1}, Entries: []Record{{Type: EntryScore, Data: ScoreLogEntry{ElapsedSeconds: 7, Score: f(1), Message: "m"}}}}},
		{name: "no payload", req: NewGetUsage(), res: Result{Kind: KindGetUsage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.res.Effects(tt.req, RunUsage{Seconds: 7})
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Effects = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSpawnViewIsPlain: a spawn result's view holds its status as a plain
// string (expressions compare it with "succeeded"), and ok needs a
// succeeded child.
func TestSpawnViewIsPlain(t *testing.T) {
	for _, tt := range []struct {
		status record.Status
		ok     bool
	}{{record.StatusSucceeded, true}, {record.StatusFailed, false}} {
		v := Result{Kind: KindSpawn, Meta: Meta{"k": "v"}, Data: &SpawnResult{RunID: "c", Status: tt.status}}.View()
		if s, isString := v["status"].(string); !isString || s != string(tt.status) || v["ok"] != tt.ok {
			t.Fatalf("view of a %s child: status %#v, ok %v", tt.status, v["status"], v["ok"])
		}
		if _, isMap := v["meta"].(map[string]string); !isMap {
			t.Fatalf("meta is %T, want map[string]string", v["meta"])
		}
	}
}
