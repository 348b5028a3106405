package doc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

func bundledTools(t testing.TB) map[string]sandbox.Tool {
	t.Helper()
	b := new(Backend)
	if err := b.Provision(context.Background(), sandbox.Env{Config: map[string]any{"documents_dir": bundled}, DataDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	tools := map[string]sandbox.Tool{}
	for _, tl := range b.Tools() {
		tools[tl.Name] = tl
	}
	return tools
}

func TestToolsThroughCall(t *testing.T) {
	tools := bundledTools(t)
	tests := []struct {
		name   string
		tool   string
		params map[string]any
		code   int
		want   string
	}{
		{"search", "doc:search", map[string]any{"key_words": []any{"sea fog"}}, 0, `section_id="stadiums#5"`},
		{"seed_path names a document, never a path", "doc:search", map[string]any{"key_words": "tenor", "seed_path": "/srv/anything/singers.md"}, 0, `section_id="singers#6"`},
		{"seed_path of an unknown document", "doc:search", map[string]any{"key_words": "x", "seed_path": "/etc/passwd"}, sandbox.CodeInvalidInput, ""},
		{"doc_id", "doc:search", map[string]any{"key_words": "park", "doc_id": "concerts"}, 0, "found 0 results"},
		{"missing key_words", "doc:search", map[string]any{}, sandbox.CodeMissingRequiredField, ""},
		{"read", "doc:read", map[string]any{"section_ids": []any{"stadiums#5"}, "goal": "weather"}, 0, "Sea fog cancelled"},
		{"read clipped", "doc:read", map[string]any{"section_ids": "stadiums#5", "max_text_token": 10.0}, 0, "[truncated at 10 characters]"},
		{"read unknown", "doc:read", map[string]any{"section_ids": "stadiums#99"}, sandbox.CodeInvalidInput, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := tools[tt.tool].Run(context.Background(), &sandbox.Call{WorkerID: "w", Params: tt.params})
			var se *sandbox.Error
			if tt.code != 0 {
				if !errors.As(err, &se) || se.Code != tt.code {
					t.Fatalf("err = %v, want code %d", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := data.(Result)
			if !strings.Contains(r.Result, tt.want) || r.Inputs == nil {
				t.Fatalf("result = %q, want %q", r.Result, tt.want)
			}
		})
	}
}
