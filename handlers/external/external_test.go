package external_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestExternalPrograms runs agent programs that answer in each way the
// workflow reads (JSON line, plain last line, answer file, an episode),
// fail, or outlive timeout_s, and checks the run's end.
func TestExternalPrograms(t *testing.T) {
	f := newFlock(t)
	tests := []struct {
		name     string
		settings map[string]any
		status   state.Status
		answer   string
		reason   string // substring of end_reason or error
		term     string
	}{
		{"json line", map[string]any{"command": `echo progress; echo '{"answer": "42"}'; echo done >&2`},
			state.StatusSucceeded, "42", "agent_done", "env_done"},
		{"plain last line", map[string]any{"command": `echo thinking; echo 'forty two'`},
			state.StatusSucceeded, "forty two", "agent_done", "env_done"},
		{"answer file", map[string]any{"command": `printf 'from file\n' > out.txt`, "answer_file": "out.txt"},
			state.StatusSucceeded, "from file", "agent_done", "env_done"},
		{"task on stdin and in a file", map[string]any{"command": `read q; test "$q" = "$(cat "$FLOCK_TASK_FILE")" && echo "\"$q\""`},
			state.StatusSucceeded, "the task", "agent_done", "env_done"},
		{"episode with its own termination", map[string]any{"command": `echo '{"trajectories": [{"name": "solver", "steps": []}], "artifacts": {"answer": "7"}, "termination_reason": "max_turns_exceeded"}'`},
			state.StatusSucceeded, "7", "agent_done", "max_turns_exceeded"},
		{"exit status", map[string]any{"command": `echo oops >&2; exit 3`},
			state.StatusFailed, "", "exited with status 3: oops", "error"},
		{"timeout", map[string]any{"command": `sleep 30`, "timeout_s": 0.3},
			state.StatusFailed, "", "timeout_s", "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			id := f.start("external", tt.settings, "the task")
			end := f.wait(id, 20*time.Second)
			var res struct {
				Answer            string `json:"answer"`
				TerminationReason string `json:"termination_reason"`
			}
			_ = json.Unmarshal(end.Result, &res)
			if end.Status != tt.status || res.Answer != tt.answer || res.TerminationReason != tt.term ||
				!strings.Contains(end.EndReason+" "+end.Error, tt.reason) {
				t.Fatalf("%s %q %q; result %s", end.Status, end.EndReason, end.Error, end.Result)
			}
			if tt.name == "timeout" && time.Since(start) > 10*time.Second {
				t.Fatalf("the timeout took %s", time.Since(start))
			}
		})
	}
}

// TestExternalSettingsRefused checks that bad settings refuse the run,
// naming the key.
func TestExternalSettingsRefused(t *testing.T) {
	f := newFlock(t)
	tests := []struct {
		name     string
		settings string
		want     string
	}{
		{"no command", `{}`, "command: required"},
		{"empty list", `{"command": []}`, "command"},
		{"number", `{"command": 3}`, "command: must be a string or a list"},
		{"key in env", `{"command": "true", "env": {"OPENAI_API_KEY": "x"}}`, "env: OPENAI_API_KEY is set by flock"},
		{"escaping file", `{"command": "true", "answer_file": "../x"}`, "answer_file"},
		{"negative timeout", `{"command": "true", "timeout_s": -1}`, "timeout_s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.app.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "external", Settings: json.RawMessage(tt.settings)})
			if !errors.Is(err, workflows.ErrBadRequest) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a bad request naming %q", err, tt.want)
			}
		})
	}
}

// TestExternalEnvironmentHasNoSecrets checks that the program's
// environment holds the session's token and URL but none of the server's
// secrets.
func TestExternalEnvironmentHasNoSecrets(t *testing.T) {
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-provider-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
	t.Setenv("GITHUB_TOKEN", "ghp-secret")
	t.Setenv("OPENAI_API_KEY", "sk-openai-secret")
	f := newFlock(t)
	id := f.start("external", map[string]any{"command": `env > env.txt; echo '"ok"'`, "model": "fake",
		"models": map[string]any{"fake": map[string]any{"base_url": "http://127.0.0.1:1/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY"}}}, "t")
	end := f.wait(id, 20*time.Second)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("%s %s", end.Status, end.Error)
	}
	b := readRunFile(t, f, id, "env.txt")
	for _, secret := range []string{"sk-provider-secret", "sk-ant-secret", "ghp-secret", "sk-openai-secret"} {
		if strings.Contains(b, secret) {
			t.Errorf("the program's environment holds %q", secret)
		}
	}
	if !strings.Contains(b, "OPENAI_API_KEY=flk-gw-") || !strings.Contains(b, "OPENAI_BASE_URL="+f.base+"/gateway/") ||
		!strings.Contains(b, "OPENAI_MODEL=fake") {
		t.Errorf("environment:\n%s", b)
	}
}

// TestSessionRunStartedDirectly checks that a session run started by hand
// (not by an external op) fails at once instead of waiting forever.
func TestSessionRunStartedDirectly(t *testing.T) {
	f := newFlock(t)
	end := f.wait(f.start("external.session", map[string]any{}, ""), 10*time.Second)
	if end.Status != state.StatusFailed || !strings.Contains(end.EndReason+end.Error, "started by an external op") {
		t.Fatalf("%s %q %q", end.Status, end.EndReason, end.Error)
	}
}
