package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSynthesizeCommand runs README's `flock synthesize --mode
// simulated` on examples/synthesis (its sandbox config replaced by one
// with absolute paths to the same fixtures): progress as plain lines (not
// a terminal), the summary, the output files; a second run skips both
// seeds. Bad configs fail naming the problem.
func TestSynthesizeCommand(t *testing.T) {
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sb := filepath.Join(dir, "sandbox.json")
	if err := os.WriteFile(sb, []byte(fmt.Sprintf(`{"apis": {"text2sql": {"databases": {"concert": %q}}, "rag": {"documents_dir": %q, "default_top_k": 3}}}`,
		filepath.Join(root, "configs/sandbox/data/concert.sqlite"), filepath.Join(root, "configs/sandbox/docs"))), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := []string{"synthesize", "--config", "../examples/synthesis/offline.yaml", "--mode", "simulated",
		"--data", filepath.Join(dir, "data"), "--output-dir", out, "--sandbox-config", sb}
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"seeds 2/2 · nodes 60 · QA kept", "succeeded", "2 done (0 skipped as done before), 0 failed, of 2", "tree nodes  60"} {
		if !strings.Contains(stdout.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "\r") {
		t.Fatal("a status line redrawn on a non-terminal")
	}
	for _, f := range []string{"synthesized_qa.jsonl", "trajectories.jsonl", "trees.jsonl", "seeds_done.jsonl", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Reset()
	if code := Main(context.Background(), args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "2 done (2 skipped as done before)") {
		t.Fatalf("second run: exit %d\n%s", code, stdout.String())
	}

	bad := filepath.Join(dir, "bad.yaml")
	for _, tc := range []struct{ config, want string }{
		{"seeds: [a]\noutput_dir: o\navailable_tools: [rag:search]\nmax_dept: 3\n", `unknown key "max_dept" (did you mean "max_depth"?)`},
		{"seeds: [a]\noutput_dir: o\navailable_tools: [rag:search]\n", "no sandbox: set sandbox_server_url"},
		{"seeds: [a]\noutput_dir: o\navailable_tools: [rag:search]\nseed_description: ${FLOCK_TEST_UNSET_VAR}\n", "environment variable FLOCK_TEST_UNSET_VAR is not set"},
	} {
		if err := os.WriteFile(bad, []byte(tc.config), 0o644); err != nil {
			t.Fatal(err)
		}
		stderr.Reset()
		if code := Main(context.Background(), []string{"synthesize", "--config", bad, "--data", filepath.Join(dir, "data2")}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Fatalf("exit %d, stderr %q, want %q", code, stderr.String(), tc.want)
		}
	}
	if code := Main(context.Background(), []string{"synthesize"}, &stdout, &stderr); code != 2 {
		t.Fatalf("missing --config: exit %d", code)
	}
}
