package sandboxop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/sandbox/desktop"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// chatReply is a chat completion answering with one tool call.
func chatReply(name, args string) string {
	b, _ := json.Marshal(args)
	return fmt.Sprintf(`{"id":"c","object":"chat.completion","model":"test-model","choices":[{"index":0,"finish_reason":"tool_calls",
		"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_%s","type":"function","function":{"name":%q,"arguments":%s}}]}}],
		"usage":{"prompt_tokens":10,"completion_tokens":5}}`, name, name, b)
}

// TestReactScreenshotToModel runs react on a live (fake, real HTTP) OpenAI
// endpoint with vm:screenshot on the server's own sandbox, whose vm
// sessions are real Xvfb displays: a model declared with vision gets the
// screenshot as an image_url content part with a PNG data URL, in a user
// message after the tool message; a text-only model gets the tool
// message's placeholder and a note, and no image. The model submits what
// it saw.
func TestReactScreenshotToModel(t *testing.T) {
	if _, err := desktop.FindXvfb(); err != nil {
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			t.Fatalf("needs Xvfb (apt-get install xvfb): %v", err)
		}
		t.Skipf("needs Xvfb (apt-get install xvfb): %v", err)
	}
	svc := testsandbox.Open(t, `{"resources": {"vm": {"enabled": true, "config": {"screen_size": "640x480"}}}}`, nil)

	var mu sync.Mutex
	var bodies []string
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		bodies = append(bodies, string(raw))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		var tool string
		var parts []struct {
			Type     string `json:"type"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		seen := "nothing"
		for _, m := range req.Messages {
			if m.Role == "tool" {
				_ = json.Unmarshal(m.Content, &tool)
			}
			if m.Role == "user" && json.Unmarshal(m.Content, &parts) == nil {
				for _, p := range parts {
					if p.Type == "image_url" && strings.HasPrefix(p.ImageURL.URL, "data:image/png;base64,iVBORw0KGgo") {
						seen = "image"
					}
				}
			}
		}
		switch {
		case tool == "":
			fmt.Fprint(w, chatReply("vm-screenshot", "{}"))
		case strings.Contains(tool, `"image":"[PNG image 640x480, `):
			if seen != "image" && strings.Contains(tool, "not shown: this model takes text only") {
				seen = "placeholder"
			}
			fmt.Fprint(w, chatReply("submit", `{"answer":"`+seen+`"}`))
		default:
			fmt.Fprint(w, chatReply("submit", `{"answer":"bad tool message"}`))
		}
	}))
	t.Cleanup(endpoint.Close)
	t.Setenv("FLOCK_TEST_KEY", "sk-test-0123456789")
	a := testapp.Open(t, configs.Server{DataDir: filepath.Join(t.TempDir(), "data"), Mode: "live"}, app.WithSandbox(svc))

	for _, c := range []struct {
		vision bool
		want   string
	}{{true, "image"}, {false, "placeholder"}} {
		settings := fmt.Sprintf(`{"model":"m","max_turns":3,"tools":["vm:screenshot","submit"],
			"models":{"m":{"name":"test-model","base_url":%q,"api_key_env":"FLOCK_TEST_KEY","vision":%t}}}`, endpoint.URL+"/v1", c.vision)
		h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "react", Task: "What is on the screen?", Settings: json.RawMessage(settings)})
		end := testrun.Wait(t, a.Executor, h.ID)
		if end.Status != state.StatusSucceeded {
			t.Fatalf("vision %t: run ended %s: %s", c.vision, end.Status, end.Error)
		}
		ops, err := a.Store.Ops(context.Background(), h.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		answer := ""
		for _, op := range ops {
			if op.Result != nil && op.Result.Kind == operations.KindSubmit && operations.Submit.Params(op.Request) != nil {
				answer = operations.Submit.Params(op.Request).Answer
			}
		}
		if answer != c.want {
			mu.Lock()
			last := bodies[len(bodies)-1]
			mu.Unlock()
			if len(last) > 2000 {
				last = last[:2000]
			}
			t.Fatalf("vision %t: the model saw %q, want %q; last request: %s", c.vision, answer, c.want, last)
		}
	}
}
