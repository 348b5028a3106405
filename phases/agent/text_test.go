package agent

import (
	"errors"
	"strings"
	"testing"
)

var actorTools = []string{ToolBash, ToolPython, ToolSetTimeout, ToolSubmit, ToolScore, ToolAdvise}

var textCases = []struct {
	name    string
	mode    Mode
	text    string
	want    string // Describe of the call; "" for none
	invalid bool
	before  string
}{
	{"fenced bash", ModeFenced, "I will list.\n```bash\nls -la\n```\n", "bash: ls -la", false, "I will list."},
	{"fenced alias sh", ModeFenced, "```sh\npwd\n```", "bash: pwd", false, ""},
	{"fenced python keeps indentation", ModeFenced, "```python\nfor i in range(2):\n    print(i)\n```", "python: for i in range(2): ...", false, ""},
	{"first block wins", ModeFenced, "```bash\necho a\n```\n```bash\necho b\n```", "bash: echo a", false, ""},
	{"other language skipped", ModeFenced, "Example:\n```json\n{\"a\": 1}\n```\nNow:\n```bash\ncat x\n```", "bash: cat x", false, "Example:\n```json\n{\"a\": 1}\n```\nNow:"},
	{"unknown block swallows fenced tool lookalike", ModeFenced, "```text\n```bash\nls\n```", "", false, ""},
	{"unterminated block runs to end", ModeFenced, "```bash\nls -la", "bash: ls -la", false, ""},
	{"one-line block", ModeFenced, "```bash ls -la```", "bash: ls -la", false, ""},
	{"empty body is no call", ModeFenced, "```bash\n\n```", "", true, ""},
	{"argument-less tool", ModeFenced, "```score\n```", "score", false, ""},
	{"set_timeout int", ModeFenced, "```set_timeout\n120\n```", "set_timeout: 120", false, ""},
	{"set_timeout not int", ModeFenced, "```set_timeout\nsoon\n```", "", true, ""},
	{"set_timeout out of range", ModeFenced, "```set_timeout\n0\n```", "", true, ""},
	{"submit", ModeFenced, "Done.\n```submit\n6\n```", "submit: 6", false, "Done."},
	{"advise greedy", ModeFenced, "```advise\nRun this:\n```bash\nls\n```\nthen submit.\n```", "advise: Run this: ...", false, ""},
	{"longer fence holds backticks", ModeFenced, "````python\nprint('```')\n````", "python: print('```')", false, ""},
	{"no block", ModeFenced, "I am thinking.", "", false, ""},
	{"xml bash", ModeXML, "Listing.\n<bash>ls -la</bash>", "bash: ls -la", false, "Listing."},
	{"xml self-closing score", ModeXML, "<score/>", "score", false, ""},
	{"xml unknown tag skipped", ModeXML, "<thought>hm</thought><submit>42</submit>", "submit: 42", false, "<thought>hm</thought>"},
	{"xml advise greedy", ModeXML, "<advise>use <advise>x</advise> carefully</advise>", "advise: use <advise>x</advise> carefully", false, ""},
	{"xml unterminated", ModeXML, "<bash>echo hi", "bash: echo hi", false, ""},
	{"xml set_timeout bad", ModeXML, "<set_timeout>1.5</set_timeout>", "", true, ""},
	{"xml ignores fenced", ModeXML, "```bash\nls\n```", "", false, ""},
}

func TestParseText(t *testing.T) {
	for _, tc := range textCases {
		t.Run(tc.name, func(t *testing.T) {
			before, c, err := ParseText(tc.text, tc.mode, actorTools)
			switch {
			case tc.want != "":
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if got := Describe(c); got != tc.want {
					t.Errorf("call = %q, want %q", got, tc.want)
				}
				if before != tc.before {
					t.Errorf("before = %q, want %q", before, tc.before)
				}
			case tc.invalid:
				if err == nil || errors.Is(err, ErrNoCall) {
					t.Fatalf("err = %v, want an invalid-arguments error", err)
				}
			default:
				if !errors.Is(err, ErrNoCall) {
					t.Fatalf("err = %v (call %v), want ErrNoCall", err, c)
				}
			}
		})
	}
}

func TestRenderRoundTrip(t *testing.T) {
	calls := []struct{ name, args string }{
		{ToolBash, `{"command":"ls -la"}`},
		{ToolPython, `{"code":"x = 1\nif x:\n    print('` + "```" + `')"}`},
		{ToolSetTimeout, `{"timeout":30}`},
		{ToolSubmit, `{"answer":"6"}`},
		{ToolScore, `{}`},
		{ToolAdvise, "{\"advice\":\"try\\n```bash\\nls\\n```\"}"},
		{ToolRateOptions, `{"ratings":[{"option_index":0,"rating":1.5,"comment":"ok"}]}`},
	}
	for _, mode := range []Mode{ModeFenced, ModeXML} {
		for _, tc := range calls {
			c, err := Validate("", tc.name, tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			text := "thought\n\n" + RenderText(c, mode)
			_, got, err := ParseText(text, mode, []string{tc.name})
			if err != nil {
				t.Fatalf("%s %s: %v in %q", mode, tc.name, err, text)
			}
			if !got.Same(c) {
				t.Errorf("%s %s: round trip %s -> %s", mode, tc.name, c.Arguments, got.Arguments)
			}
		}
	}
}

func FuzzParseFenced(f *testing.F) {
	for _, tc := range textCases {
		if tc.mode == ModeFenced {
			f.Add(tc.text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		b, ok := FindBlock(text, ModeFenced, actorTools)
		if !ok {
			return
		}
		if b.Start < 0 || b.End > len(text) || b.Start > b.End {
			t.Fatalf("block span [%d,%d) outside text of %d bytes", b.Start, b.End, len(text))
		}
		if !strings.Contains(text, b.Body) {
			t.Fatalf("body %q is not part of the text", b.Body)
		}
		c, err := CallFromBlock(b)
		if err != nil {
			return
		}
		// A valid call survives rendering and parsing again.
		_, again, err := ParseText(RenderText(c, ModeFenced), ModeFenced, actorTools)
		if err != nil || !again.Same(c) {
			t.Fatalf("round trip of %s %s: %v %s", c.Name, c.Arguments, err, again.Arguments)
		}
	})
}

func FuzzParseXML(f *testing.F) {
	for _, tc := range textCases {
		if tc.mode == ModeXML {
			f.Add(tc.text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		b, ok := FindBlock(text, ModeXML, actorTools)
		if !ok {
			return
		}
		if b.Start < 0 || b.End > len(text) || b.Start > b.End {
			t.Fatalf("block span [%d,%d) outside text of %d bytes", b.Start, b.End, len(text))
		}
		c, err := CallFromBlock(b)
		if err != nil {
			return
		}
		if strings.Contains(string(c.Arguments), "</") {
			return // a body holding a closing tag cannot round-trip
		}
		_, again, err := ParseText(RenderText(c, ModeXML), ModeXML, actorTools)
		if err != nil || !again.Same(c) {
			t.Fatalf("round trip of %s %s: %v %s", c.Name, c.Arguments, err, again.Arguments)
		}
	})
}

func FuzzValidate(f *testing.F) {
	seeds := []struct{ name, args string }{
		{ToolBash, `{"command":"ls"}`}, {ToolSetTimeout, `{"timeout":"30"}`}, {ToolSetTimeout, `{"timeout":1e400}`},
		{ToolRateOptions, `{"ratings":"[{\"option_index\":1,\"rating\":9}]"}`}, {ToolSubmit, `{"answer":6}`},
		{ToolLaunchSubagents, `{"agents":[{"task":"t","approach":"a"}]}`}, {ToolSelectWinner, `{"winner_id":3}`},
	}
	for _, s := range seeds {
		f.Add(s.name, s.args)
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		c, err := Validate("id", name, args, nil)
		if err != nil {
			return
		}
		// Canonical arguments validate to themselves.
		d, err := Validate("id", name, string(c.Arguments), nil)
		if err != nil || !d.Same(c) {
			t.Fatalf("canonical %s %s does not re-validate: %v %s", name, c.Arguments, err, d.Arguments)
		}
	})
}
