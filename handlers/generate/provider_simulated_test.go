package generate

import (
	"context"
	"strings"
	"testing"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/generate/simulated"
	"github.com/flockrun/flock/operations"
)

// TestSimulatedProviderReadsRole sends the same text-mode request through
// Handle with and without the role a phase sets: the actor answers with a
// fenced bash block, the request without a role gets plain text. Usage is
// estimated and the model is reported as simulated.Model.
func TestSimulatedProviderReadsRole(t *testing.T) {
	h := New(Options{Mode: ModeSimulated})
	g := operations.GenerateRequest{Model: "simulated", Messages: []operations.Message{
		{Role: operations.RoleSystem, Content: "You are an agent. To run a command write ```bash\\n<command>\\n```; to finish write ```submit\\n<answer>\\n```. <task>List the files.</task>"},
		{Role: operations.RoleUser, Content: "Go ahead."},
	}}
	tests := []struct {
		name      string
		meta      map[string]string
		wantBlock bool
	}{
		{name: "actor", meta: map[string]string{operations.MetaRole: operations.ModelRoleActor, "index": "0"}, wantBlock: true},
		{name: "no role", meta: map[string]string{"purpose": "test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := g
			res := h.Handle(context.Background(), handlers.Env{RunID: "run1", Task: "List the files."},
				operations.Request{Kind: operations.KindGenerate, Params: &g, Meta: tt.meta})
			out := mustGen(t, res)
			if out.Model != simulated.Model || out.Usage.PromptTokens <= 0 || out.Usage.CompletionTokens <= 0 {
				t.Fatalf("model %q usage %+v", out.Model, out.Usage)
			}
			if got := strings.Contains(out.Outputs[0].Content, "```bash"); got != tt.wantBlock {
				t.Fatalf("content %q: fenced bash block %v, want %v", out.Outputs[0].Content, got, tt.wantBlock)
			}
			if res.Meta["index"] != tt.meta["index"] {
				t.Fatalf("meta not copied onto the result: %v", res.Meta)
			}
		})
	}
}
