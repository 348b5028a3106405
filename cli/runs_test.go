package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/server"
)

const runsToken = "runs-cli-test-token-0123456789"

// TestRunsCommands drives "flock runs ..." against a real server over
// HTTP with a bearer token: a triframe run on the simulated model with
// ask_human is paused and resumed, its question listed and answered, it
// is forked from step 3 (the fork finishes), and errors name the problem.
func TestRunsCommands(t *testing.T) {
	dir := t.TempDir()
	a := testapp.Open(t, configs.Server{DataDir: filepath.Join(dir, "data"), Mode: "simulated"})
	srv, err := server.New(configs.Server{Addr: "127.0.0.1:0", AuthToken: runsToken}, a.Executor, a.Executor.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	base := testkit.Serve(t, srv)
	flock := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := Main(t.Context(), append(append([]string{"runs"}, args...), "--server", base, "--token", runsToken), &out, &errb)
		return out.String(), errb.String(), code
	}
	c, _ := client.New(base, client.WithToken(runsToken))
	settings := json.RawMessage(`{"actors":[{"model":"simulated"}],"raters":[{"model":"simulated"}],"ask_human":true,"limits":{"actions":10}}`)
	st, err := c.Start(t.Context(), api.StartRequest{Workflow: "triframe", Task: "What is 6 times 7?", Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	id := st.RunID
	var out string
	testkit.WaitFor(t, "the question", func() bool {
		out, _, _ = flock("questions", id)
		return strings.Contains(out, `"op_id"`)
	})
	var q api.Question
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &q); err != nil || q.Kind != "human" {
		t.Fatalf("questions output %q (%v)", out, err)
	}
	if out, errs, code := flock("pause", id); code != 0 || !strings.Contains(out, `"status":"paused"`) {
		t.Fatalf("pause: %d %s %s", code, out, errs)
	}
	if out, errs, code := flock("resume", id); code != 0 || !strings.Contains(out, `"status":"running"`) {
		t.Fatalf("resume: %d %s %s", code, out, errs)
	}
	if _, errs, code := flock("answer", id, q.OpID, "maybe"); code != 1 || !strings.Contains(errs, "not one of the choices") {
		t.Errorf("bad answer: %d %s", code, errs)
	}
	if out, errs, code := flock("answer", id, q.OpID, "approve"); code != 0 || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("answer: %d %s %s", code, out, errs)
	}
	// Approve whatever else it asks until it ends.
	testkit.WaitWithin(t, 30*time.Second, "the run's end", func() bool {
		if out, _, _ := flock("questions", id); strings.Contains(out, `"op_id"`) {
			_ = json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &q)
			flock("answer", id, q.OpID, "approve")
		}
		r, err := c.Run(t.Context(), id)
		return err == nil && r.Status != "running"
	})
	out, errs, code := flock("fork", id, "--step", "3", "--message", "be brief")
	if code != 0 {
		t.Fatalf("fork: %d %s", code, errs)
	}
	// The help promises the new run's id: one line, nothing else.
	var f api.Forked
	if f.RunID = strings.TrimSuffix(out, "\n"); f.RunID == "" || strings.ContainsAny(f.RunID, "{}\" \n") {
		t.Fatalf("fork output %q, want the new run's id on a line", out)
	}
	testkit.WaitWithin(t, 30*time.Second, "the fork's end", func() bool {
		if out, _, _ := flock("questions", f.RunID); strings.Contains(out, `"op_id"`) {
			_ = json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &q)
			flock("answer", f.RunID, q.OpID, "approve")
		}
		r, err := c.Run(t.Context(), f.RunID)
		return err == nil && r.Status != "running"
	})
	if r, _ := c.Run(t.Context(), f.RunID); r.ForkedFrom == nil || r.ForkedFrom.Run != id || r.ForkedFrom.Step != 3 {
		t.Errorf("fork head %+v", r)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"fork without step", []string{"fork", id}, 2, "--step is required"},
		{"bad var", []string{"fork", id, "--step", "1", "--var", "x=not json"}, 2, "not JSON"},
		{"intervene on an ended run", []string{"intervene", id, "--approve"}, 1, "has already ended"},
		{"intervene without a choice", []string{"intervene", id}, 2, "--action JSON or --approve"},
		{"unknown command", []string{"explode", id}, 2, "unknown runs command"},
		{"unknown run", []string{"cancel", "nope"}, 1, `run "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := flock(tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Errorf("code %d, stderr %q; want %d containing %q", code, errs, tc.code, tc.want)
			}
		})
	}
	var out2, errb bytes.Buffer
	if code := Main(t.Context(), []string{"runs", "cancel", id, "--server", base}, &out2, &errb); code != 1 || !strings.Contains(errb.String(), "refused the token") {
		t.Errorf("without the token: %d %s", code, errb.String())
	}
}
