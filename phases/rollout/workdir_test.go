package rollout_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/rollout"
)

// TestLaneUsesSpawnWorkDir: the lane runs the verifier in, and reads the
// trajectory from, the work directory the spawn result names, wherever
// that is; a spawn result that names none (journaled by an older flock)
// fails the sample saying so instead of guessing.
func TestLaneUsesSpawnWorkDir(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden_lane/agent_done_verifier.json")
	if err != nil {
		t.Fatal(err)
	}
	wf := rollout.LaneWorkflow()
	spec, _ := wf.Phase(rollout.LaneAgentDone)
	run := func(workDir string) (ops []string, agent string) {
		t.Helper()
		var c phasetest.Case
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		operations.Spawn.Result(c.Results[0]).WorkDir = workDir
		out, err := spec.Run(c.Input(wf.Name))
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range out.Ops {
			b, _ := json.Marshal(op)
			ops = append(ops, string(b))
		}
		return ops, string(out.Set["lane"])
	}

	ops, agent := run("/elsewhere/agent 1")
	if len(ops) != 2 || !strings.Contains(ops[0], `cd '/elsewhere/agent 1'`) || !strings.Contains(ops[1], `"path":"/elsewhere/agent 1/trajectory.json"`) {
		t.Fatalf("ops do not use the spawn result's work dir:\n%s", strings.Join(ops, "\n"))
	}
	if !strings.Contains(agent, `"work_dir":"/elsewhere/agent 1"`) {
		t.Fatalf("lane var does not keep the work dir: %s", agent)
	}

	// Without a work dir there is nothing to verify or read: the sample's
	// row is written at once, failed as spawn_error with the reason.
	ops, _ = run("")
	all := strings.Join(ops, "\n")
	if len(ops) == 0 || strings.Contains(all, `"type":"bash"`) || strings.Contains(all, `"type":"read_file"`) ||
		!strings.Contains(ops[0], `\"end_reason\":\"spawn_error\"`) || !strings.Contains(ops[0], "names no work_dir") {
		t.Fatalf("a spawn result without work_dir:\n%s", all)
	}
}
