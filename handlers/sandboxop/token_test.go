package sandboxop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/handlers/sandboxop"
	"github.com/flockrun/flock/workflows"
)

// TestSandboxCredentialsRefused: a sandbox_url carrying credentials is
// refused without quoting them, and a sandbox_token_env naming a variable
// that is not set refuses the run naming the variable.
func TestSandboxCredentialsRefused(t *testing.T) {
	a := openApp(t)
	ctx := context.Background()
	_, err := a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q",
		Settings: json.RawMessage(`{"sandbox_url": "http://user:hunter2-secret@127.0.0.1:1"}`)})
	if !errors.Is(err, sandboxop.ErrBadURL) || strings.Contains(err.Error(), "hunter2-secret") || !strings.Contains(err.Error(), "sandbox_token_env") {
		t.Fatalf("start = %v, want ErrBadURL naming sandbox_token_env without the password", err)
	}
	_, err = a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q",
		Settings: json.RawMessage(`{"sandbox_url": "http://127.0.0.1:1", "sandbox_token_env": "FLOCK_TEST_UNSET_SANDBOX_TOKEN"}`)})
	if !errors.Is(err, sandboxop.ErrNoToken) || !strings.Contains(err.Error(), "FLOCK_TEST_UNSET_SANDBOX_TOKEN") {
		t.Fatalf("start = %v, want ErrNoToken naming the variable", err)
	}
}
