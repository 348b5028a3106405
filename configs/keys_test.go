package configs

import (
	"encoding/json"
	"reflect"
	"testing"
)

// testEntry is a model entry as workflows declare them.
type testEntry struct {
	Model    string `json:"model"`
	Temp     *float64
	Priority string `json:"priority,omitempty" settings:"flock-unused"`
}

type testInner struct {
	Depth int `json:"depth"`
}

// testSettings is a workflow's settings struct.
type testSettings struct {
	Actors    []testEntry          `json:"actors"`
	Generator *testEntry           `json:"generator"`
	Timeout   int                  `json:"timeout"`
	Agent     json.RawMessage      `json:"agent"`
	Extra     any                  `json:"extra"`
	Lanes     map[string]testInner `json:"lanes"`
	Skipped   string               `json:"-"`
	hidden    string               //nolint:unused // unexported fields are not keys
	Scoring   struct{ Pass bool }  `json:"scoring"`
	Embedded
	Nested testInner              `json:"nested,omitempty"`
	ByName map[string][]testInner `json:"by_name"`
}

// Embedded's fields are promoted, as encoding/json does.
type Embedded struct {
	Promoted bool `json:"promoted"`
}

func TestSettingsWarnings(t *testing.T) {
	tests := []struct {
		name     string
		doc      string
		declared any
		want     []string
	}{
		{name: "empty", doc: `{}`, declared: testSettings{}},
		{name: "not an object", doc: `[1]`, declared: testSettings{}},
		{name: "all known", declared: testSettings{},
			doc: `{"limits":{"tokens":1},"models":{"m":{"base_url":"x","timeout_s":3}},"python":{"timeout_s":1},` +
				`"bash":{"output_limit":2},"isolation":{"kind":"none"},"scoring":{"command":"x","Pass":true},` +
				`"actors":[{"model":"a","Temp":1}],"timeout":3,"agent":{"anything":{"goes":1}},"extra":{"x":1},` +
				`"lanes":{"a":{"depth":1}},"promoted":true,"nested":{"depth":2},"workflow_type":"w","by_name":{"k":[{"depth":1}]}}`},
		{name: "top-level typo", doc: `{"limts":{"tokens":1}}`, declared: testSettings{},
			want: []string{`unknown settings key "limts" (did you mean "limits"?)`}},
		{name: "far from every key", doc: `{"bogus_key":1}`, declared: testSettings{},
			want: []string{`unknown settings key "bogus_key"`}},
		{name: "case", doc: `{"Limits":{}}`, declared: testSettings{},
			want: []string{`unknown settings key "Limits" (did you mean "limits"?)`}},
		{name: "inside limits", doc: `{"limits":{"tokns":1,"seconds":2}}`, declared: testSettings{},
			want: []string{`unknown settings key "limits.tokns" (did you mean "limits.tokens"?)`}},
		{name: "inside python", doc: `{"python":{"timeout":1}}`, declared: testSettings{},
			want: []string{`unknown settings key "python.timeout" (did you mean "python.timeout_s"?)`}},
		{name: "inside a model", doc: `{"models":{"gpt":{"bse_url":"x"},"ok":{"name":"y"}}}`, declared: testSettings{},
			want: []string{`unknown settings key "models.gpt.bse_url" (did you mean "models.gpt.base_url"?)`}},
		{name: "inside a list item", doc: `{"actors":[{"model":"a"},{"modle":"b"}]}`, declared: testSettings{},
			want: []string{`unknown settings key "actors[1].modle" (did you mean "actors[1].model"?)`}},
		{name: "inside a map of lists", doc: `{"by_name":{"k":[{"dpth":1}]}}`, declared: testSettings{},
			want: []string{`unknown settings key "by_name.k[0].dpth" (did you mean "by_name.k[0].depth"?)`}},
		{name: "merged section", doc: `{"scoring":{"pas":true}}`, declared: testSettings{},
			want: []string{`unknown settings key "scoring.pas" (did you mean "scoring.Pass"?)`}},
		{name: "json dash skipped", doc: `{"Skipped":"x","hidden":"y"}`, declared: testSettings{},
			want: []string{`unknown settings key "Skipped"`, `unknown settings key "hidden"`}},
		{name: "flock key unused by the workflow", doc: `{"raters":[],"advisors":[]}`, declared: testSettings{},
			want: []string{
				`settings key "advisors" is a Flock setting that flock does not use in workflow "w"`,
				`settings key "raters" is a Flock setting that flock does not use in workflow "w"`,
			}},
		{name: "flock model key flock ignores", doc: `{"generator":{"model":"m","priority":"high"}}`, declared: testSettings{},
			want: []string{`settings key "generator.priority" is a Flock setting that flock does not use`}},
		{name: "several sorted", doc: `{"zzz":1,"limits":{"cots":1},"aaa":2}`, declared: testSettings{},
			want: []string{
				`unknown settings key "aaa"`,
				`unknown settings key "limits.cots" (did you mean "limits.cost"?)`,
				`unknown settings key "zzz"`,
			}},
		{name: "pointer declared", doc: `{"timeot":1}`, declared: &testSettings{},
			want: []string{`unknown settings key "timeot" (did you mean "timeout"?)`}},
		{name: "key list", doc: `{"commands":{"any":1},"comands":[]}`, declared: []string{"commands"},
			want: []string{`unknown settings key "comands" (did you mean "commands"?)`}},
		{name: "nothing declared: top level unchecked", doc: `{"whatever":1,"advisors":[]}`, declared: nil},
		{name: "nothing declared: common sections checked", doc: `{"whatever":1,"limits":{"tokns":1}}`, declared: nil,
			want: []string{`unknown settings key "limits.tokns" (did you mean "limits.tokens"?)`}},
		{name: "deprecated sandbox", doc: `{"sandbox":{"kind":"bwrap","network":true}}`, declared: testSettings{},
			want: []string{`settings key "sandbox" is deprecated: use "isolation" (same value)`}},
		{name: "deprecated sandbox, nothing declared", doc: `{"sandbox":{"kind":"bwrap"}}`, declared: nil,
			want: []string{`settings key "sandbox" is deprecated: use "isolation" (same value)`}},
		{name: "typo inside deprecated sandbox", doc: `{"sandbox":{"knd":"bwrap"}}`, declared: testSettings{},
			want: []string{
				`settings key "sandbox" is deprecated: use "isolation" (same value)`,
				`unknown settings key "sandbox.knd" (did you mean "sandbox.kind"?)`,
			}},
		{name: "typo of sandbox points at isolation", doc: `{"sandbx":{"kind":"bwrap"}}`, declared: testSettings{},
			want: []string{`unknown settings key "sandbx" (did you mean "isolation"?)`}},
		{name: "wrong shapes are left to the decoder", doc: `{"limits":3,"actors":{"x":1},"models":[1]}`, declared: testSettings{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SettingsWarnings(json.RawMessage(tt.doc), "w", tt.declared)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SettingsWarnings(%s)\n got %q\nwant %q", tt.doc, got, tt.want)
			}
		})
	}
}

func FuzzSettingsWarnings(f *testing.F) {
	for _, s := range []string{`{}`, `{"limts":1}`, `{"models":{"m":{"x":1}}}`, `{"actors":[{"modle":1}]}`, `[`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		SettingsWarnings(json.RawMessage(doc), "w", testSettings{})
	})
}
