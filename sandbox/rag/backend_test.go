package rag

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/sandbox"
)

func provisioned(t testing.TB, cfg map[string]any) map[string]sandbox.Tool {
	t.Helper()
	b := new(Backend)
	if err := b.Provision(context.Background(), sandbox.Env{Config: cfg, DataDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	tools := map[string]sandbox.Tool{}
	for _, tl := range b.Tools() {
		if !tl.Stateless {
			t.Errorf("%s is not stateless", tl.Name)
		}
		tools[tl.Name] = tl
	}
	return tools
}

func call(t testing.TB, tl sandbox.Tool, params map[string]any) (any, *sandbox.Error) {
	t.Helper()
	data, err := tl.Run(context.Background(), &sandbox.Call{WorkerID: "w", Params: params})
	if err == nil {
		return data, nil
	}
	var se *sandbox.Error
	if !errors.As(err, &se) {
		t.Fatalf("%s: untyped error %v", tl.Name, err)
	}
	return data, se
}

func TestToolCodes(t *testing.T) {
	docs := t.TempDir()
	testkit.WriteFiles(t, docs, tinyCorpus)
	tools := provisioned(t, map[string]any{"documents_dir": docs})
	tests := []struct {
		name   string
		tool   string
		params map[string]any
		code   int
	}{
		{"search", "rag:search", map[string]any{"query": "volcano"}, 0},
		{"missing query", "rag:search", map[string]any{}, sandbox.CodeMissingRequiredField},
		{"query not a string", "rag:search", map[string]any{"query": 3.0}, sandbox.CodeInvalidParameterType},
		{"blank query", "rag:search", map[string]any{"query": " "}, sandbox.CodeInvalidInput},
		{"top_k out of range", "rag:search", map[string]any{"query": "x", "top_k": 500.0}, sandbox.CodeInvalidInput},
		{"top_k fraction", "rag:search", map[string]any{"query": "x", "top_k": 1.5}, sandbox.CodeInvalidParameterType},
		{"batch ok", "rag:batch_search", map[string]any{"queries": []any{"volcano", "yeast"}}, 0},
		{"batch partial", "rag:batch_search", map[string]any{"queries": []any{"volcano", ""}}, sandbox.CodePartialFailure},
		{"batch all failed", "rag:batch_search", map[string]any{"queries": []any{"", " "}}, sandbox.CodeAllRequestsFailed},
		{"batch not strings", "rag:batch_search", map[string]any{"queries": []any{1.0}}, sandbox.CodeInvalidParameterType},
		{"stats", "rag:stats", map[string]any{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, se := call(t, tools[tt.tool], tt.params)
			code := 0
			if se != nil {
				code = se.Code
			}
			if code != tt.code {
				t.Fatalf("code = %d (%v), want %d", code, se, tt.code)
			}
		})
	}
	_, se := call(t, tools["rag:batch_search"], map[string]any{"queries": []any{"volcano", ""}})
	br, ok := se.Data.(BatchResult)
	if !ok || br.Count != 2 || len(br.Errors) != 1 || !strings.Contains(br.Contexts[0], "volcano") {
		t.Fatalf("partial failure data = %#v", se.Data)
	}
}

func TestToolNotInitialized(t *testing.T) {
	tools := provisioned(t, map[string]any{"documents_dir": filepath.Join(t.TempDir(), "absent")})
	_, se := call(t, tools["rag:search"], map[string]any{"query": "x"})
	if se == nil || se.Code != sandbox.CodeBackendNotInitialized {
		t.Fatalf("search without a folder: %v", se)
	}
	data, se := call(t, tools["rag:stats"], map[string]any{})
	if se != nil || data.(Stats).Initialized {
		t.Fatalf("stats = %#v, %v", data, se)
	}
}

func TestProvisionConfigError(t *testing.T) {
	err := new(Backend).Provision(context.Background(), sandbox.Env{Config: map[string]any{}, DataDir: t.TempDir()})
	var ce *sandbox.ConfigError
	if !errors.As(err, &ce) || ce.Path != "documents_dir" {
		t.Fatalf("err = %#v", err)
	}
}
