package generate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/generate"
	"github.com/flockrun/flock/operations"
)

// The simulated provider answers an agent that offers bash and submit
// with a first exploration step.
func ExampleHandler_simulated() {
	h := generate.New(generate.Options{Mode: generate.ModeSimulated})
	defer h.Close()
	res := h.Handle(context.Background(), handlers.Env{RunID: "demo"}, operations.Request{
		Kind: operations.KindGenerate,
		Params: &operations.GenerateRequest{
			Model: "simulated",
			Messages: []operations.Message{
				{Role: operations.RoleSystem, Content: "You are an agent. <task>Create hello.txt containing hi and submit its word count.</task>"},
			},
			Tools: []operations.Tool{
				{Name: "bash", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
				{Name: "submit", Parameters: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)},
			},
		},
	})
	call := operations.Generate.Result(res).Outputs[0].ToolCalls[0]
	fmt.Println(res.Error == "", call.Name, call.Arguments)
	// Output: true bash {"command":"ls -la"}
}
