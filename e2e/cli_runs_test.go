package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/testkit"
)

// gatedScript writes a script workflow's settings whose second command
// waits for gate/release, and whose commands append to marks.
func gatedScript(t testing.TB, gate, marks string) string {
	return filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{"gated.json": fmt.Sprintf(`{"workflow_type": "script", "commands": [
		"echo one >> %[2]s",
		"touch %[1]s/started; while [ ! -e %[1]s/release ]; do sleep 0.05; done; echo two >> %[2]s",
		"echo three >> %[2]s"]}`, gate, marks)}), "gated.json")
}

// startFlock starts the binary in its own process group.
func startFlock(t testing.TB, args ...string) (*exec.Cmd, *testkit.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd, out
}

func marksOf(t testing.TB, path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

// TestRunDrivesOnlyItsOwn: a `flock run` killed with SIGKILL leaves its run
// unfinished; the next `flock run` of another command does not drive it
// (its remaining commands do not run) and names it with the command that
// resumes it; the same command as the killed one resumes it, running only
// what had not finished.
func TestRunDrivesOnlyItsOwn(t *testing.T) {
	data, gate := t.TempDir(), t.TempDir()
	marks := filepath.Join(t.TempDir(), "marks")
	gated := gatedScript(t, gate, marks)
	cmd, out := startFlock(t, "run", "--settings", gated, "--data", data)
	testkit.WaitWithin(t, 30*time.Second, "the second command to start", func() bool {
		_, err := os.Stat(filepath.Join(gate, "started"))
		return err == nil
	})
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := runIDPattern.FindString(out.String())
	if killed == "" {
		t.Fatalf("no run id in %q", out)
	}
	testkit.WriteFiles(t, gate, map[string]string{"release": ""})

	other := filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{"other.json": `{"workflow_type": "script", "commands": ["echo other"]}`}), "other.json")
	code, stdout, errs := flock(t, "run", "--settings", other, "--data", data)
	if code != 0 || !strings.Contains(stdout, "succeeded") {
		t.Fatalf("other run: exit %d\n%s\n%s", code, stdout, errs)
	}
	want := fmt.Sprintf("flock run: 1 other unfinished run(s) in %s are not resumed by this command: %s (script, running): flock run --resume %s --data %s",
		data, killed, killed, data)
	if !strings.Contains(errs, want+"\n") {
		t.Fatalf("stderr lacks %q:\n%s", want, errs)
	}
	if got := marksOf(t, marks); strings.Join(got, " ") != "one" {
		t.Fatalf("the killed run went on during another command: marks %v", got)
	}

	code, stdout, errs = flock(t, "run", "--settings", gated, "--data", data)
	if code != 0 || !strings.Contains(stdout, "run "+killed+": resuming the unfinished run of this command") || !strings.Contains(stdout, "run "+killed+" succeeded") {
		t.Fatalf("the same command: exit %d\n%s\n%s", code, stdout, errs)
	}
	if strings.Contains(errs, "other unfinished") {
		t.Fatalf("nothing else is unfinished:\n%s", errs)
	}
	if got := marksOf(t, marks); strings.Join(got, " ") != "one two three" {
		t.Fatalf("marks %v: the journaled command ran again or one is missing", got)
	}
	// --new starts a run of its own.
	code, stdout, _ = flock(t, "run", "--settings", other, "--data", data, "--new")
	if code != 0 || strings.Contains(stdout, "resuming") {
		t.Fatalf("--new: exit %d\n%s", code, stdout)
	}
}

// TestRunsCommands: flock runs list, show, logs and export and flock
// workflows read a data directory no server holds (opened read-only), and
// the same through the server that holds it; logs prints what flock run
// printed, and --follow follows a live run to its end.
func TestRunsCommands(t *testing.T) {
	data := t.TempDir()
	dir := testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"ok.json":      `{"workflow_type": "script", "commands": ["echo hello", "printf 'a\\nb\\n'"]}`,
		"fail.json":    `{"workflow_type": "script", "commands": ["exit 4"]}`,
		"bench.jsonl":  `{"id": "a", "question": "What is 2+2?", "answer": "4"}` + "\n" + `{"id": "b", "question": "What is 3+3?", "answer": "6"}` + "\n",
		"script.jsonl": `{"match": "2+2", "content": "Final answer: 4"}` + "\n" + `{"match": "3+3", "content": "Final answer: 6"}` + "\n",
		"rollout.yaml": "data_path: bench.jsonl\nbenchmark_name: hand\nmax_concurrency: 2\nevaluation_metric: exact_match\n" +
			"models:\n  m: {provider: scripted, script: script.jsonl}\nagent:\n  workflow: react\n  settings: {model: m, max_turns: 2}\n",
	})
	code, runOut, errs := flock(t, "run", "--settings", filepath.Join(dir, "ok.json"), "--task", "Say hello.\nThen stop.", "--data", data)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, runOut, errs)
	}
	okID := runIDPattern.FindString(runOut)
	if code, _, _ := flock(t, "run", "--settings", filepath.Join(dir, "fail.json"), "--data", data); code != 1 {
		t.Fatalf("failing run: exit %d", code)
	}
	if code, out, errs := flock(t, "rollout", "--config", filepath.Join(dir, "rollout.yaml"), "--data", data, "--output-dir", filepath.Join(dir, "out")); code != 0 {
		t.Fatalf("rollout: exit %d\n%s\n%s", code, out, errs)
	}

	runs := func(args ...string) string {
		t.Helper()
		code, out, errs := flock(t, append([]string{"runs"}, append(args, "--data", data)...)...)
		if code != 0 {
			t.Fatalf("flock runs %v: exit %d\n%s\n%s", args, code, out, errs)
		}
		return out
	}
	rows := func(out string) [][]string {
		var rs [][]string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			rs = append(rs, strings.Fields(l))
		}
		return rs
	}
	check := func(t *testing.T, where string) {
		all := rows(runs("list", "--limit", "100"))
		top := rows(runs("list", "--top"))
		// The rollout's lanes and agent runs are children: 3 top-level runs.
		if len(top) != 3 || top[0][1] != "rollout" || top[1][1] != "script" || top[2][1] != "script" || len(all) <= len(top) {
			t.Fatalf("%s: list --top %v (all %d)", where, top, len(all))
		}
		if top[2][0] != okID || top[2][2] != "succeeded" || top[2][3] != "completed" || strings.Join(top[2][4:6], " ") != "Say hello." {
			t.Fatalf("%s: the first run's row %v", where, top[2])
		}
		if f := rows(runs("list", "--status", "failed")); len(f) != 1 || f[0][3] != "command_failed:" || f[0][5] != "4" {
			t.Fatalf("%s: list --status failed %v", where, f)
		}
		if w := rows(runs("list", "--workflow", "script", "--limit", "1")); len(w) != 1 || w[0][1] != "script" {
			t.Fatalf("%s: list --workflow script --limit 1 %v", where, w)
		}
		show := runs("show", top[0][0])
		for _, want := range []string{"workflow  rollout", "status    succeeded (completed)", "children  2: 2 succeeded", "tokens    "} {
			if !strings.Contains(show, want) {
				t.Fatalf("%s: show lacks %q:\n%s", where, want, show)
			}
		}
		// The transcript, exactly as flock run printed it (less its header).
		if logs, want := runs("logs", okID), runOut[strings.Index(runOut, "\n")+1:]; logs != want {
			t.Fatalf("%s: logs\n%s\nflock run printed\n%s", where, logs, want)
		}
		export := runs("export", okID)
		sc := bufio.NewScanner(strings.NewReader(export))
		var head api.Run
		n := map[string]int{}
		for sc.Scan() {
			var line map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil || len(line) != 1 {
				t.Fatalf("%s: export line %q", where, sc.Text())
			}
			for k, v := range line {
				n[k]++
				if k == "run" {
					_ = json.Unmarshal(v, &head)
				}
			}
		}
		if head.ID != okID || n["run"] != 1 || n["entry"] != int(head.Entries) || n["entry"] != 2 || n["op"] != 2 {
			t.Fatalf("%s: export %v, head %+v", where, n, head)
		}
		code, wfs, errs := flock(t, "workflows", "--data", data)
		if code != 0 || !strings.Contains(wfs, "script ") || !strings.Contains(wfs, "commands, continue_on_error, timeout_s") || !strings.Contains(wfs, "triframe ") {
			t.Fatalf("%s: workflows: exit %d\n%s\n%s", where, code, wfs, errs)
		}
	}
	t.Run("data directory", func(t *testing.T) { check(t, "data directory") })

	p := startServer(t, data, freePort(t))
	t.Run("server", func(t *testing.T) { check(t, "server") })

	// --follow follows a live run of the server to its end.
	gate := t.TempDir()
	settings, _ := os.ReadFile(gatedScript(t, gate, filepath.Join(gate, "marks")))
	id := p.start("script", mustMap(t, settings))
	testkit.WaitWithin(t, 30*time.Second, "the gated command to start", func() bool {
		_, err := os.Stat(filepath.Join(gate, "started"))
		return err == nil
	})
	cmd, out := startFlock(t, "runs", "logs", id, "--follow", "--data", data)
	testkit.WriteFiles(t, gate, map[string]string{"release": ""})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "run "+id+" succeeded") || !strings.Contains(out.String(), "$ echo three") {
			t.Fatalf("logs --follow: %v\n%s", err, out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("logs --follow did not end:\n%s", out)
	}
}

func mustMap(t testing.TB, b []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
