package external_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers/external"
	"github.com/flockrun/flock/operations"
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
// environment is an allowlist: the session's token and URL, the settings'
// env, the variables pass_env names that the operator lists, a small base
// set, and none of the server's other variables, whatever they are called
// (a denylist of *_API_KEY, *_TOKEN and *SECRET* let PGPASSWORD,
// OPENAI_KEY, TOKEN, GITHUB_PAT, AWS_ACCESS_KEY_ID and SSH_AUTH_SOCK
// through). A pass_env name the operator does not list refuses the run,
// with the same error whether the variable is set or not.
func TestExternalEnvironmentHasNoSecrets(t *testing.T) {
	secrets := map[string]string{
		"FLOCK_TEST_PROVIDER_KEY": "sk-provider-secret", "ANTHROPIC_API_KEY": "sk-ant-secret", "GITHUB_TOKEN": "ghp-secret",
		"OPENAI_API_KEY": "sk-openai-secret", "PGPASSWORD": "pg-secret", "OPENAI_KEY": "oa-secret", "TOKEN": "bare-token-secret",
		"GITHUB_PAT": "pat-secret", "AWS_ACCESS_KEY_ID": "AKIA-secret", "SSH_AUTH_SOCK": "/tmp/ssh-agent-secret.sock",
		"FLOCK_AUTH_TOKEN": "flock-auth-secret",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("FLOCK_TEST_PASSED", "passed-by-name")
	t.Setenv("LC_TIME", "C")
	f := newFlock(t, func(c *configs.Server) { c.PassEnv = []string{"FLOCK_TEST_PASSED", "FLOCK_TEST_LISTED_UNSET"} })
	id := f.start("external", map[string]any{"command": `env > env.txt; echo '"ok"'`, "model": "fake",
		"env": map[string]any{"GIVEN": "by-settings"}, "pass_env": []string{"FLOCK_TEST_PASSED", "FLOCK_TEST_LISTED_UNSET"},
		"models": map[string]any{"fake": map[string]any{"base_url": "http://127.0.0.1:1/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY"}}}, "t")
	end := f.wait(id, 20*time.Second)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("%s %s", end.Status, end.Error)
	}
	b := readRunFile(t, f, id, "env.txt")
	for name, secret := range secrets {
		if strings.Contains(b, secret) {
			t.Errorf("the program's environment holds %s's value %q", name, secret)
		}
	}
	for _, want := range []string{"OPENAI_API_KEY=flk-gw-", "OPENAI_BASE_URL=" + f.base + "/gateway/", "OPENAI_MODEL=fake",
		"GIVEN=by-settings", "FLOCK_TEST_PASSED=passed-by-name", "LC_TIME=C", "PATH="} {
		if !strings.Contains(b, want) {
			t.Errorf("environment lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(b, "FLOCK_TEST_LISTED_UNSET") {
		t.Errorf("an unset variable was passed:\n%s", b)
	}

	// Naming a variable the operator does not list: refused, set or not.
	var errs []string
	for _, name := range []string{"PGPASSWORD", "FLOCK_TEST_NOT_SET_AT_ALL"} {
		doc, _ := json.Marshal(map[string]any{"command": "true", "pass_env": []string{name}})
		_, err := f.app.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "external", Settings: doc})
		if !errors.Is(err, external.ErrPassEnv) || !strings.Contains(err.Error(), "pass_env") {
			t.Fatalf("pass_env %s: err = %v, want ErrPassEnv", name, err)
		}
		errs = append(errs, strings.ReplaceAll(err.Error(), name, "NAME"))
	}
	if errs[0] != errs[1] {
		t.Errorf("the refusal tells a set variable from an unset one:\n%s\n%s", errs[0], errs[1])
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

// TestExternalModelErrorEndsRun: when the agent's model call fails in a
// way no retry fixes (the endpoint refuses the key) and the agent then
// exits non-zero, the run ends with the call's failure code as end
// reason (model_error, as react's does, so a rollout stops) and its
// error names the cause, not only the agent's last stderr line ("HTTP
// Error 502: Bad Gateway").
func TestExternalModelErrorEndsRun(t *testing.T) {
	python := needPython(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-wrong")
	f := newFlock(t)
	id := f.start("external", map[string]any{"command": []string{python, agentPath(t)}, "model": "fake",
		"models": map[string]any{"fake": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0}}}, "What is 6*7?")
	end := f.wait(id, 30*time.Second)
	if end.Status != state.StatusFailed || end.EndReason != string(operations.CodeModelError) ||
		!strings.Contains(end.Error, "HTTP 401 (the endpoint refused the API key in $FLOCK_TEST_PROVIDER_KEY)") ||
		!strings.Contains(end.Error, "exited with status 1") {
		t.Fatalf("%s %q, error %q: want failed, model_error, naming the refused key and the agent's exit", end.Status, end.EndReason, end.Error)
	}
}
