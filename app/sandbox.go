package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/sandbox"
)

// Hosted is the sandbox service svc as the sandbox operation's port
// (handlers.Sandbox): calls run in-process. Answers go through JSON, so
// that their data and meta are what a remote sandbox answers byte for
// byte. WithSandbox wires it in; tests and embedders may use it directly.
func Hosted(svc *sandbox.Service) handlers.Sandbox { return hosted{svc} }

type hosted struct{ svc *sandbox.Service }

func (h hosted) Tool(_ context.Context, name string) (handlers.SandboxTool, bool, error) {
	info, ok := h.svc.Tool(name)
	if !ok {
		return handlers.SandboxTool{}, false, nil
	}
	return handlers.SandboxTool{FullName: info.FullName, ResourceType: info.ResourceType,
		Description: info.Description, Parameters: info.Parameters, Stateless: info.Stateless}, true, nil
}

func (h hosted) ToolNames(context.Context) ([]string, error) {
	var out []string
	for _, t := range h.svc.Tools(true) {
		out = append(out, t.FullName)
	}
	return out, nil
}

func (h hosted) CreateSession(ctx context.Context, worker, rt string) (handlers.SandboxAnswer, error) {
	return answer(h.svc.CreateSession(ctx, sandbox.Caller{Worker: worker}, rt, nil, ""))
}

func (h hosted) ForkSession(ctx context.Context, worker, from, rt string) (handlers.SandboxAnswer, error) {
	return answer(h.svc.ForkSession(ctx, sandbox.Caller{Worker: worker}, from, rt))
}

func (h hosted) Execute(ctx context.Context, worker string, a handlers.SandboxAction) (handlers.SandboxAnswer, error) {
	return answer(h.svc.Execute(ctx, sandbox.Caller{Worker: worker},
		sandbox.Action{Action: a.Action, Params: a.Params, Timeout: a.Timeout}))
}

func (h hosted) DestroySession(ctx context.Context, worker, rt string) {
	h.svc.DestroySession(ctx, sandbox.Caller{Worker: worker}, rt)
}

// answer is e with its data and meta as JSON.
func answer(e sandbox.Envelope) (handlers.SandboxAnswer, error) {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return handlers.SandboxAnswer{}, fmt.Errorf("encode data: %w", err)
	}
	meta, err := json.Marshal(e.Meta)
	if err != nil {
		return handlers.SandboxAnswer{}, fmt.Errorf("encode meta: %w", err)
	}
	return handlers.SandboxAnswer{Code: e.Code, Message: e.Message, Data: data, Meta: meta}, nil
}
