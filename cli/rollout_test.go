package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestRolloutCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args := []string{"rollout", "--config", "../phases/rollout/testdata/mini/rollout.yaml", "--data", filepath.Join(dir, "data"),
		"--output-dir", filepath.Join(dir, "out"), "--task-ids", "add,cap", "--num-chains", "2"}
	if code := Main(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"succeeded", "4 of 4 (2 tasks × 2 chains)", "pass@2", "4 samples to run"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "out", "summary_mini_*.json")); len(m) != 1 {
		t.Fatalf("summary files %v", m)
	}
	if code := Main(context.Background(), []string{"rollout"}, &out, &errb); code != 2 {
		t.Fatalf("missing --config: exit %d", code)
	}
}
