package sandboxop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers/sandboxop"
	"github.com/flockrun/flock/workflows"
)

// TestSandboxCredentialsRefused: a sandbox_url carrying credentials is
// refused without quoting them; a sandbox_token_env the operator lists but
// that is not set refuses the run naming the variable; one the operator
// does not list is refused with the same error whether it is set or not;
// a sandbox_url on loopback is refused unless the operator allows the host.
func TestSandboxCredentialsRefused(t *testing.T) {
	t.Setenv("FLOCK_TEST_SET_SECRET", "a-secret-value-1234")
	a := openAppWith(t, func(c *configs.Server) {
		loopbackSandbox(c)
		c.SandboxTokenEnvs = []string{"FLOCK_TEST_UNSET_SANDBOX_TOKEN"}
	})
	ctx := context.Background()
	start := func(settings string) error {
		_, err := a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q", Settings: json.RawMessage(settings)})
		return err
	}
	err := start(`{"sandbox_url": "http://user:hunter2-secret@127.0.0.1:1"}`)
	if !errors.Is(err, sandboxop.ErrBadURL) || strings.Contains(err.Error(), "hunter2-secret") || !strings.Contains(err.Error(), "sandbox_token_env") {
		t.Fatalf("start = %v, want ErrBadURL naming sandbox_token_env without the password", err)
	}
	err = start(`{"sandbox_url": "http://127.0.0.1:1", "sandbox_token_env": "FLOCK_TEST_UNSET_SANDBOX_TOKEN"}`)
	if !errors.Is(err, sandboxop.ErrNoToken) || !strings.Contains(err.Error(), "FLOCK_TEST_UNSET_SANDBOX_TOKEN") {
		t.Fatalf("start = %v, want ErrNoToken naming the variable", err)
	}
	set := start(`{"sandbox_url": "http://127.0.0.1:1", "sandbox_token_env": "FLOCK_TEST_SET_SECRET"}`)
	unset := start(`{"sandbox_url": "http://127.0.0.1:1", "sandbox_token_env": "FLOCK_TEST_UNSET_SECRET"}`)
	if !errors.Is(set, sandboxop.ErrTokenEnvNotAllowed) || !errors.Is(unset, sandboxop.ErrTokenEnvNotAllowed) {
		t.Fatalf("unlisted variables: %v / %v, want ErrTokenEnvNotAllowed", set, unset)
	}
	if strings.ReplaceAll(set.Error(), "FLOCK_TEST_SET_SECRET", "X") != strings.ReplaceAll(unset.Error(), "FLOCK_TEST_UNSET_SECRET", "X") {
		t.Fatalf("the errors tell a set variable from an unset one:\n%v\n%v", set, unset)
	}

	b := openApp(t)
	_, err = b.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q",
		Settings: json.RawMessage(`{"sandbox_url": "http://127.0.0.1:1"}`)})
	if !errors.Is(err, sandboxop.ErrURLNotAllowed) || !strings.Contains(err.Error(), "sandbox_url_allow_hosts") {
		t.Fatalf("loopback sandbox_url = %v, want ErrURLNotAllowed naming sandbox_url_allow_hosts", err)
	}
}
