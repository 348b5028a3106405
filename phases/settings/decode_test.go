package settings_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/settings"
)

// model is a nested settings type with a Validate hook.
type model struct {
	Model       string   `json:"model"`
	Temperature *float64 `json:"temperature,omitempty" min:"0" max:"2"`
	N           int      `json:"n,omitempty" default:"1" min:"1"`
	Hidden      string   `json:"cache_key,omitempty" settings:"flock-unused"`
}

var errBadModel = errors.New("bad model")

func (m model) Validate() error {
	if m.Model == "" {
		return &settings.Error{Path: "model", Reason: "required", Err: errBadModel}
	}
	return nil
}

// text decodes a string or a list of strings.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = text(s)
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return errors.New("want a string or a list of strings")
	}
	*t = text(strings.Join(l, "\n"))
	return nil
}

type fold struct {
	Turns int `json:"turns,omitempty" min:"0"`
}

type common struct {
	Seed int64 `json:"seed,omitempty"`
}

type testSettings struct {
	Name     string            `json:"name"`
	MaxTurns int               `json:"max_turns,omitempty" default:"30" min:"0"`
	Ratio    float64           `json:"ratio,omitempty" min:"0" max:"1"`
	Format   string            `json:"format,omitempty" enum:"json,csv"`
	Tools    *[]string         `json:"tools,omitempty" default:"[\"bash\",\"python\"]" enum:"bash,python,submit"`
	Resume   *bool             `json:"resume,omitempty" default:"true"`
	Prompt   text              `json:"prompt,omitempty"`
	Model    model             `json:"model"`
	Models   map[string]model  `json:"models,omitempty"`
	Actors   []model           `json:"actors,omitempty"`
	Fold     fold              `json:"fold,omitempty"`
	Extra    json.RawMessage   `json:"extra,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Old      string            `json:"old_name,omitempty" settings:"renamed:name"`
	Derived  int               `json:"-"`
	common
}

// Normalize derives a default from another field.
func (s *testSettings) Normalize() error {
	s.Derived = s.MaxTurns * 2
	if s.Name == "alias" {
		return settings.Errorf("name", "%q is an alias", s.Name)
	}
	return nil
}

func (s *testSettings) Validate() error {
	if s.Fold.Turns > s.MaxTurns {
		return settings.Errorf("fold.turns", "(%d) is more than max_turns (%d)", s.Fold.Turns, s.MaxTurns)
	}
	return nil
}

func TestDecode(t *testing.T) {
	var s testSettings
	doc := `{"name": "n", "Max_Turns": 5, "tools": ["submit"], "prompt": ["a", "b"], "model": {"model": "m", "temperature": 0.5},
		"models": {"x": {"model": "mx"}}, "actors": [{"model": "a0", "n": 3}], "extra": {"any": [1]}, "seed": 7, "unknown": 1}`
	if err := settings.Decode([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	switch {
	case s.Name != "n" || s.MaxTurns != 5 || s.Derived != 10 || s.Seed != 7:
		t.Fatalf("scalars: %+v", s)
	case fmt.Sprint(*s.Tools) != "[submit]" || !*s.Resume || s.Prompt != "a\nb":
		t.Fatalf("tools %v resume %v prompt %q", *s.Tools, *s.Resume, s.Prompt)
	case *s.Model.Temperature != 0.5 || s.Model.N != 1 || s.Models["x"].N != 1 || s.Actors[0].N != 3:
		t.Fatalf("nested defaults: %+v %+v %+v", s.Model, s.Models, s.Actors)
	case string(s.Extra) != `{"any": [1]}`:
		t.Fatalf("raw: %s", s.Extra)
	}
	// Defaults are copies: changing one decode's does not change the next.
	(*s.Tools)[0] = "changed"
	var d testSettings
	if err := settings.Decode([]byte(`{"model": "m"}`), &d); err == nil {
		t.Fatal("a model object decoded from a string")
	}
	if err := settings.Decode([]byte(`{"model": {"model": "m"}}`), &d); err != nil || fmt.Sprint(*d.Tools) != "[bash python]" {
		t.Fatalf("defaults: %v %v", d.Tools, err)
	}
	for _, doc := range []string{``, `null`, ` {} `} {
		var e testSettings
		if err := settings.Decode([]byte(doc), &e); err == nil || err.Error() != "model.model: required" {
			t.Fatalf("%q: %v, want the model required", doc, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
		is              error
	}{
		{name: "not an object", doc: `[1]`, want: "must be a JSON object, got JSON array"},
		{name: "malformed", doc: `{"name": }`, want: "malformed JSON at byte 10: invalid character '}' looking for beginning of value"},
		{name: "type", doc: `{"max_turns": "x"}`, want: "max_turns: want a whole number, got JSON string"},
		{name: "fraction", doc: `{"max_turns": 1.5}`, want: "max_turns: want a whole number, got JSON number 1.5"},
		{name: "nested type", doc: `{"model": {"model": "m", "temperature": "hot"}}`, want: "model.temperature: want a number, got JSON string"},
		{name: "map value type", doc: `{"model": {"model": "m"}, "models": {"x": {"n": "two"}}}`, want: "models.x.n: want a whole number, got JSON string"},
		{name: "list item type", doc: `{"model": {"model": "m"}, "actors": [{"model": "a"}, 3]}`, want: "actors[1]: want an object, got JSON number"},
		{name: "string map", doc: `{"model": {"model": "m"}, "labels": {"a": 1}}`, want: "labels.a: want a string, got JSON number"},
		{name: "struct not object", doc: `{"fold": 3}`, want: "fold: want an object, got JSON number"},
		{name: "list not list", doc: `{"actors": {}}`, want: "actors: want a list, got JSON object"},
		{name: "own unmarshaler", doc: `{"prompt": 3}`, want: "prompt: want a string or a list of strings"},
		{name: "min", doc: `{"max_turns": -1}`, want: "max_turns: must be >= 0"},
		{name: "between", doc: `{"ratio": 1.5}`, want: "ratio: must be between 0 and 1"},
		{name: "nested between", doc: `{"model": {"model": "m", "temperature": 3}}`, want: "model.temperature: must be between 0 and 2"},
		{name: "map value min", doc: `{"model": {"model": "m"}, "models": {"gpt": {"model": "g", "n": -2}}}`, want: "models.gpt.n: must be >= 1"},
		{name: "enum", doc: `{"format": "xml"}`, want: `format: "xml" is not one of json, csv`},
		{name: "enum list", doc: `{"tools": ["bash", "ls"]}`, want: `tools[1]: "ls" is not one of bash, python, submit`},
		{name: "hook error", doc: `{"model": {"model": "m"}, "models": {"x": {}}}`, want: "models.x.model: required", is: errBadModel},
		{name: "list hook error", doc: `{"model": {"model": "m"}, "actors": [{"model": "a"}, {}]}`, want: "actors[1].model: required", is: errBadModel},
		{name: "normalize error", doc: `{"name": "alias"}`, want: `name: "alias" is an alias`},
		{name: "validate error", doc: `{"model": {"model": "m"}, "max_turns": 2, "fold": {"turns": 3}}`, want: "fold.turns: (3) is more than max_turns (2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testSettings
			err := settings.Decode([]byte(tt.doc), &s)
			var se *settings.Error
			if !errors.As(err, &se) || err.Error() != tt.want {
				t.Fatalf("err = %v, want *Error %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, tt.is)
			}
		})
	}
}

func TestStrict(t *testing.T) {
	d := settings.Decoder{Strict: true, Allow: []string{"limits"}}
	var s testSettings
	doc := `{"model": {"model": "m", "temprature": 1, "cache_key": "k"}, "max_turn": 3, "zzz": 1, "limits": {"anything": 1}, "old_name": "x"}`
	err := d.Decode([]byte(doc), &s)
	want := `unknown key "max_turn" (did you mean "max_turns"?); unknown key "model.temprature" (did you mean "model.temperature"?); unknown key "zzz"`
	if err == nil || err.Error() != want || !errors.Is(err, settings.ErrUnknownKey) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if err := d.Decode([]byte(`{"model": {"model": "m", "cache_key": "k"}, "limits": {"x": 1}, "old_name": "x"}`), &s); err != nil {
		t.Fatalf("known keys refused: %v", err)
	}
	// A key that differs only in case is unknown to a strict decoder.
	if err := d.Decode([]byte(`{"Name": "x"}`), &s); err == nil || err.Error() != `unknown key "Name" (did you mean "name"?)` {
		t.Fatalf("case: %v", err)
	}
}

// size decodes itself from "WxH" and has no keys of its own.
type size struct{ w, h int }

func (z *size) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`want "WxH"`)
	}
	if _, err := fmt.Sscanf(s, "%dx%d", &z.w, &z.h); err != nil {
		return errors.New(`want "WxH"`)
	}
	return nil
}

// ref is a model written as a bare name or as an object.
type ref struct{ model }

func (r *ref) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &r.Model)
	}
	return settings.Unmarshal(b, &r.model)
}

// TestKeysOfSelfDecodingType: a struct that decodes itself and has no
// exported field accepts its own form without a finding; one that embeds
// a settings struct (a model written as a name or an object) still has
// its keys checked.
func TestKeysOfSelfDecodingType(t *testing.T) {
	var s struct {
		Size  *size `json:"size"`
		Other size  `json:"other"`
		Ref   *ref  `json:"ref"`
	}
	d := settings.Decoder{Strict: true}
	if err := d.Decode([]byte(`{"size": "640x480", "other": "1x2"}`), &s); err != nil || s.Size.w != 640 || s.Other.h != 2 {
		t.Fatalf("%+v %v", s, err)
	}
	if err := d.Decode([]byte(`{"size": "big"}`), &s); err == nil || err.Error() != `size: want "WxH"` {
		t.Fatalf("bad size: %v", err)
	}
	got := settings.KeysOf(s).Check([]byte(`{"size": {"w": 1}, "ref": {"model": "m", "modle": "x"}}`))
	if len(got) != 1 || got[0].String() != `unknown key "ref.modle" (did you mean "ref.model"?)` {
		t.Fatalf("findings %v", got)
	}
}

// seconds is a Bounded type: a number of seconds with its own wording.
type seconds float64

func (s seconds) CheckBounds(lo, hi *float64) error {
	if float64(s) < *lo || float64(s) > *hi {
		return fmt.Errorf("want a number of seconds from %s to %s, got %s", settings.FormatNumber(*lo), settings.FormatNumber(*hi), settings.FormatNumber(float64(s)))
	}
	return nil
}

func TestBounded(t *testing.T) {
	var s struct {
		Timeout seconds `json:"timeout" default:"600" min:"0.001" max:"1e7"`
	}
	if err := settings.Decode([]byte(`{}`), &s); err != nil || s.Timeout != 600 {
		t.Fatalf("default: %v %v", s.Timeout, err)
	}
	err := settings.Decode([]byte(`{"timeout": 1e-10}`), &s)
	if want := "timeout: want a number of seconds from 0.001 to 1e+07, got 1e-10"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// FuzzDecode: no document makes Decode panic, and every error is an
// *Error.
func FuzzDecode(f *testing.F) {
	for _, doc := range []string{`{}`, `{"model": {"model": "m"}, "models": {"x": {"n": 2}}, "actors": [{"model": "a"}]}`,
		`{"max_turns": "x"}`, `[1]`, `{"prompt": ["a"], "tools": ["bash"]}`, `{"name": }`, `{"fold": {"turns": 1e300}}`, `null`} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var s testSettings
		err := settings.Decoder{Strict: len(doc)%2 == 0}.Decode(doc, &s)
		var se *settings.Error
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("%q: %T %v is not an *Error", doc, err, err)
		}
	})
}
