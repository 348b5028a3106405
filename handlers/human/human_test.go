package human

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
)

func TestAnswer(t *testing.T) {
	choices := operations.NewHuman(operations.HumanRequest{Question: "ok?", Choices: []string{"yes", "no"}})
	scale := operations.NewHuman(operations.HumanRequest{Question: "rate", Scale: &operations.Scale{Min: -2, Max: 2}})
	free := operations.NewHuman(operations.HumanRequest{Question: "why?"})
	act := operations.NewIntervention("", json.RawMessage(`{"name":"bash","arguments":{"command":"ls"}}`))
	for _, tc := range []struct {
		name   string
		req    operations.Request
		answer string
		want   string // the result's payload JSON, or the error's text
		bad    bool
	}{
		{name: "a choice", req: choices, answer: `"yes"`, want: `"answer":"yes"`},
		{name: "not a choice", req: choices, answer: `"maybe"`, want: `"maybe" is not one of the choices`, bad: true},
		{name: "a number for choices", req: choices, answer: `1`, want: "must be one of the choices", bad: true},
		{name: "on the scale", req: scale, answer: `-1.5`, want: `"answer":-1.5`},
		{name: "off the scale", req: scale, answer: `3`, want: "outside the scale -2 to 2", bad: true},
		{name: "text for a scale", req: scale, answer: `"high"`, want: "must be a number", bad: true},
		{name: "free text", req: free, answer: `"because"`, want: `"answer":"because"`},
		{name: "empty text", req: free, answer: `"  "`, want: "empty", bad: true},
		{name: "an object for text", req: free, answer: `{}`, want: "string or number", bad: true},
		{name: "approve", req: act, answer: `{"approve":true}`, want: `"approved":true`},
		{name: "approve as text", req: act, answer: `"approve"`, want: `"approved":true`},
		{name: "replace", req: act, answer: `{"action":{"name":"bash","arguments":{"command":"make"}}}`, want: `"action":{"name":"bash","arguments":{"command":"make"}}`},
		{name: "replace without a name", req: act, answer: `{"action":{"arguments":{}}}`, want: "action.name: required", bad: true},
		{name: "arguments not an object", req: act, answer: `{"action":{"name":"bash","arguments":"ls"}}`, want: "action.arguments: must be a JSON object", bad: true},
		{name: "both", req: act, answer: `{"approve":true,"action":{"name":"bash"}}`, want: "not both", bad: true},
		{name: "unknown key", req: act, answer: `{"approved":true}`, want: "unknown field", bad: true},
		{name: "other text", req: act, answer: `"ok"`, want: `(got "ok")`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Handler{}.Answer(tc.req, json.RawMessage(tc.answer), time.Unix(0, 0))
			if tc.bad {
				if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrBadAnswer containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res)
			if !strings.Contains(string(b), tc.want) || res.Kind != tc.req.Kind {
				t.Fatalf("result %s, want %s", b, tc.want)
			}
		})
	}
}

// FuzzAnswer: no answer panics, and an accepted one round-trips through
// the journal's encoding.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{`"yes"`, `3`, `{"approve":true}`, `{"action":{"name":"x","arguments":{}}}`, `"approve"`, `null`, `[`, `{"action":null}`} {
		f.Add(s)
	}
	reqs := []operations.Request{
		operations.NewHuman(operations.HumanRequest{Question: "q", Choices: []string{"yes"}}),
		operations.NewHuman(operations.HumanRequest{Question: "q", Scale: &operations.Scale{Min: 0, Max: 5}}),
		operations.NewHuman(operations.HumanRequest{Question: "q"}),
		operations.NewIntervention("q", json.RawMessage(`{}`)),
	}
	f.Fuzz(func(t *testing.T, answer string) {
		for _, req := range reqs {
			res, err := Handler{}.Answer(req, json.RawMessage(answer), time.Unix(0, 0))
			if err != nil {
				continue
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatalf("encode %q: %v", answer, err)
			}
			var back operations.Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
		}
	})
}
