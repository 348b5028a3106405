package fanout_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flockrun/flock/examples/plugins/fanout"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/phasetest"
)

// TestGolden runs the phase cases against the workflow as registered
// compiled-in, from a fresh registry.
func TestGolden(t *testing.T) {
	r := phases.NewRegistry()
	if err := fanout.Register(r); err != nil {
		t.Fatal(err)
	}
	wf, ok := r.Lookup(fanout.Name)
	if !ok {
		t.Fatal("fanout not registered")
	}
	if wf.Source != "builtin" {
		t.Fatalf("source = %q", wf.Source)
	}
	phasetest.Run(t, "testdata/golden", *wf)
}

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr string
		want    fanout.Settings
	}{
		{name: "defaults", doc: `{"items":["a"],"command":"echo $ITEM"}`,
			want: fanout.Settings{Items: []string{"a"}, Command: "echo $ITEM", Parallel: 4, Reduce: "list"}},
		{name: "items command", doc: `{"items_command":"ls","command":"wc -l < $ITEM","parallel":8,"reduce":"sum"}`,
			want: fanout.Settings{ItemsCommand: "ls", Command: "wc -l < $ITEM", Parallel: 8, Reduce: "sum"}},
		{name: "no command", doc: `{"items":["a"]}`, wantErr: "command: required"},
		{name: "no items", doc: `{"command":"x"}`, wantErr: "items: give the inputs"},
		{name: "both", doc: `{"items":["a"],"items_command":"ls","command":"x"}`, wantErr: "give one, not both"},
		{name: "parallel too high", doc: `{"items":["a"],"command":"x","parallel":99}`, wantErr: "parallel: must be between 1 and 32"},
		{name: "bad reduce", doc: `{"items":["a"],"command":"x","reduce":"avg"}`, wantErr: `reduce: "avg"`},
		{name: "bad json", doc: `{"items":"a"}`, wantErr: "settings:"},
		{name: "negative timeout", doc: `{"items":["a"],"command":"x","timeout_s":-1}`, wantErr: "timeout_s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fanout.ParseSettings(json.RawMessage(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(tt.want)
			if string(a) != string(b) {
				t.Fatalf("got %s, want %s", a, b)
			}
		})
	}
}
