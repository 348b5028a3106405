package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

func provision(tb testing.TB, cfg map[string]any, log *slog.Logger) *Backend {
	tb.Helper()
	b := new(Backend)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := b.Provision(context.Background(), sandbox.Env{Config: cfg, DataDir: tb.TempDir(), Logger: log}); err != nil {
		tb.Fatal(err)
	}
	return b
}

// callTool runs tool name with params decoded from JSON, as the core does.
func callTool(tb testing.TB, b *Backend, name, params string) (string, error) {
	tb.Helper()
	var decoded map[string]any
	if err := json.Unmarshal([]byte(params), &decoded); err != nil {
		tb.Fatal(err)
	}
	for _, t := range b.Tools() {
		if t.Name == name {
			data, err := t.Run(context.Background(), &sandbox.Call{WorkerID: "w1", Params: decoded})
			if err != nil {
				return "", err
			}
			out, err := json.Marshal(data)
			if err != nil {
				tb.Fatal(err)
			}
			return string(out), nil
		}
	}
	tb.Fatalf("no tool %s", name)
	return "", nil
}

func codeOf(tb testing.TB, err error) int {
	tb.Helper()
	var se *sandbox.Error
	if !errors.As(err, &se) {
		tb.Fatalf("error %v (%T) is not a *sandbox.Error", err, err)
	}
	return se.Code
}

func TestBackendTools(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "hello page")
	var logs bytes.Buffer
	b := provision(t, map[string]any{
		"search_url": s.srv.URL, "serper_api_key": testKey, "allow_hosts": []any{"127.0.0.1"},
		"reader_url": r.srv.URL, "jina_api_key": testJinaKey, "retries": json.Number("0"),
	}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	tools := b.Tools()
	if len(tools) != 2 || tools[0].Name != "web:search" || tools[1].Name != "web:visit" {
		t.Fatalf("tools = %+v", tools)
	}
	for _, tl := range tools {
		var sch struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(tl.Parameters, &sch); err != nil || sch.Type != "object" || len(sch.Required) != 1 || sch.Properties[sch.Required[0]] == nil {
			t.Fatalf("%s schema %s: %v", tl.Name, tl.Parameters, err)
		}
		if !tl.Stateless {
			t.Fatalf("%s is not stateless", tl.Name)
		}
	}

	out, err := callTool(t, b, "web:search", `{"query":["golang"],"serper_api_key":"other"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"result":"A Google search for 'golang' found 2 results:`) || !strings.Contains(out, `"inputs":{"query":["golang"],"worker_id":"w1"}`) {
		t.Fatalf("search data = %s", out)
	}
	out, err = callTool(t, b, "web:visit", `{"urls":"https://example.org/p","goal":"g"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `hello page`) || !strings.Contains(out, `"warning":null`) || !strings.Contains(out, `"inputs":{"goal":"g","urls":"https://example.org/p","worker_id":"w1"}`) {
		t.Fatalf("visit data = %s", out)
	}

	errCases := []struct {
		name, tool, params string
		code               int
	}{
		{"missing query", "web:search", `{}`, sandbox.CodeMissingRequiredField},
		{"query not a string", "web:search", `{"query":3}`, sandbox.CodeInvalidParameterType},
		{"empty query", "web:search", `{"query":""}`, sandbox.CodeInvalidInput},
		{"provider fails", "web:search", `{"query":"deny"}`, sandbox.CodeExecutionError},
		{"missing urls", "web:visit", `{"goal":"x"}`, sandbox.CodeMissingRequiredField},
		{"goal not a string", "web:visit", `{"urls":"https://a.example","goal":1}`, sandbox.CodeInvalidParameterType},
		{"file url", "web:visit", `{"urls":["file:///etc/passwd"]}`, sandbox.CodeInvalidInput},
		{"every page fails", "web:visit", `{"urls":["https://down.example/"]}`, sandbox.CodeExecutionError},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callTool(t, b, tc.tool, tc.params)
			if got := codeOf(t, err); got != tc.code {
				t.Fatalf("code = %d (%v), want %d", got, err, tc.code)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatal("the key is in the error")
			}
		})
	}
	if strings.Contains(logs.String(), testKey) || strings.Contains(logs.String(), testJinaKey) {
		t.Fatalf("a key reached the logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "web search failed") {
		t.Fatalf("failures are not logged:\n%s", logs.String())
	}
}

func TestBackendProvisionNamesThePath(t *testing.T) {
	t.Setenv("SERPER_API_KEY", "")
	err := new(Backend).Provision(context.Background(), sandbox.Env{Config: map[string]any{}, DataDir: t.TempDir()})
	var ce *sandbox.ConfigError
	if !errors.As(err, &ce) || ce.Path != "apis.web.serper_api_key" {
		t.Fatalf("err = %v", err)
	}
}

func TestBackendRegistered(t *testing.T) {
	info, ok := sandbox.LookupBackend(Name)
	if !ok {
		t.Fatal("web is not registered")
	}
	if _, ok := info.New().(*Backend); !ok {
		t.Fatal("New returns another type")
	}
}

func TestBackendTimeoutIs5006(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "")
	b := provision(t, map[string]any{"search_url": s.srv.URL, "serper_api_key": testKey, "allow_hosts": []any{"127.0.0.1"}, "reader_url": r.srv.URL}, nil)
	var search sandbox.Tool
	for _, tl := range b.Tools() {
		if tl.Name == "web:search" {
			search = tl
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0) // the call's deadline has passed
	defer cancel()
	_, err := search.Run(ctx, &sandbox.Call{Params: map[string]any{"query": "slow"}})
	if got := codeOf(t, err); got != sandbox.CodeTimeout {
		t.Fatalf("code = %d (%v), want 5006", got, err)
	}
}
