// Package e2e tests the real flock binary: it builds it, starts it as a
// subprocess on a random loopback port, drives it over HTTP and kills it.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/state"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flock-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "flock")
	// No VCS stamp: the binary is then the one `go build -o flock .` makes
	// in a copy of the checkout without .git, which TestDocExamples relies
	// on to find its documents' ./flock up to date.
	build := exec.Command("go", "build", "-buildvcs=false", "-o", binary, "github.com/flockrun/flock")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build flock:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running flock server.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	base string
	out  *testkit.Buffer
	// stderr is what the process wrote on stderr alone (cluster nodes
	// only; out has it too).
	stderr *testkit.Buffer
	// c talks to the server; do remains for raw requests and bodies the
	// client does not model.
	c *client.Client
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServer starts `flock serve` on addr with data dir and waits for /health.
func startServer(t testing.TB, data, addr string, extra ...string) *proc {
	t.Helper()
	return startServerVia(t, []string{binary}, data, addr, extra...)
}

// startServerVia is startServer running the command line run (the binary,
// or a program that executes it, such as setpriv ... -- binary) with the
// serve arguments appended.
func startServerVia(t testing.TB, run []string, data, addr string, extra ...string) *proc {
	t.Helper()
	args := append(append(run[1:len(run):len(run)], "serve", "--addr", addr, "--data", data, "--log-level", "warn"), extra...)
	cmd := exec.Command(run[0], args...)
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, base: "http://" + addr, out: out}
	c, err := client.New(p.base)
	if err != nil {
		t.Fatal(err)
	}
	p.c = c
	t.Cleanup(func() { p.kill() })
	testkit.CheckFor(t, 30*time.Second, func() error {
		resp, err := http.Get(p.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			err = fmt.Errorf("GET /health: %s", resp.Status)
		}
		return fmt.Errorf("server did not come up: %w\n%s", err, out.String())
	})
	return p
}

// kill sends SIGKILL to the server (not its children: they see their
// terminal hang up, as they would after a real crash).
func (p *proc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func (p *proc) do(method, path string, body any, into any) int {
	p.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, r)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			p.t.Fatalf("%s %s: decode %q: %v", method, path, b, err)
		}
	}
	return resp.StatusCode
}

// head is a run's head as the API shows it.
type head = api.Run

// run reads a run's head.
func (p *proc) run(id string) head {
	p.t.Helper()
	h, err := p.c.Run(context.Background(), id)
	if err != nil {
		p.t.Fatal(err)
	}
	return h
}

// start starts a run of workflow with settings and returns its id.
func (p *proc) start(workflow string, settings map[string]any) string {
	p.t.Helper()
	b, err := json.Marshal(settings)
	if err != nil {
		p.t.Fatal(err)
	}
	started, err := p.c.Start(context.Background(), api.StartRequest{Workflow: workflow, Settings: b})
	if err != nil {
		p.t.Fatalf("start %s: %v\nserver log:\n%s", workflow, err, p.out.String())
	}
	if started.Status != "running" {
		p.t.Fatalf("start %s: %+v", workflow, started)
	}
	return started.RunID
}

// ops reads up to 1000 ops of a run.
func (p *proc) ops(id string) []api.Op {
	p.t.Helper()
	page, err := p.c.Ops(context.Background(), id, "", 1000)
	if err != nil {
		p.t.Fatal(err)
	}
	return page.Ops
}

// entries reads up to 1000 entries of a run.
func (p *proc) entries(id string) []api.Entry {
	p.t.Helper()
	page, err := p.c.Entries(context.Background(), id, 0, 1000)
	if err != nil {
		p.t.Fatal(err)
	}
	return page.Entries
}

func TestServeStartAndFinish(t *testing.T) {
	p := startServer(t, t.TempDir(), freePort(t))
	id := p.start("script", map[string]any{"commands": []string{"cd /tmp", "pwd"}})
	waitEnded(t, p, id, 30*time.Second)
	if h := p.run(id); h.Status != "succeeded" {
		t.Fatalf("run ended %+v", h)
	}
	if entries := p.entries(id); len(entries) != 2 || !strings.Contains(string(entries[1].Data), `"stdout":"/tmp`) {
		t.Fatalf("entries = %+v", entries)
	}
	// The run's end is counted after it is committed (workflows.Observer):
	// the API may say it ended a moment before /metrics counts it.
	ended := `flock_runs_ended_total{status="succeeded",workflow="script"} 1`
	var metrics []byte
	testkit.WaitFor(t, "/metrics to count the run's end", func() bool {
		resp, err := http.Get(p.base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		metrics, err = io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(metrics), ended)
	})
	for _, want := range []string{`flock_operations_total{kind="bash",outcome="ok"} 2`, "flock_store_transactions_total"} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
}

func waitEnded(t testing.TB, p *proc, id string, d time.Duration) head {
	t.Helper()
	var h head
	testkit.CheckFor(t, d, func() error {
		h = p.run(id)
		switch h.Status {
		case "succeeded", "failed", "cancelled":
			return nil
		}
		return fmt.Errorf("run %s still %s", id, h.Status)
	})
	return h
}

// TestCrashResume kills the server with SIGKILL at several moments while
// script runs append to marker files, restarts it each time, and checks
// that every run finishes, journaled commands ran exactly once, interrupted
// ones at most twice, and no entry is lost.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	data, marks := t.TempDir(), t.TempDir()
	addr := freePort(t)
	const runs, commands = 6, 12
	p := startServer(t, data, addr)
	ids := make([]string, runs)
	for k := 0; k < runs; k++ {
		ids[k] = p.start("script", map[string]any{"commands": markerCommands(marks, k, commands)})
	}
	// Kill at varied moments: during commands, between phases, right
	// after results. After each restart, wait until every unfinished run
	// has journaled a new result, so no command is interrupted twice.
	for _, d := range []time.Duration{90, 240, 35, 410, 160, 300, 20, 520} {
		time.Sleep(d * time.Millisecond)
		p.kill()
		before := journaled(t, data, ids)
		p = startServer(t, data, addr)
		waitProgress(t, p, ids, before)
	}
	for k, id := range ids {
		h := waitEnded(t, p, id, 60*time.Second)
		if h.Status != "succeeded" {
			t.Fatalf("run %d ended %s (%s): %s\n%s", k, h.Status, h.EndReason, h.Error, p.out.String())
		}
		interrupted := checkRanOnce(t, p, id, k, marks, commands)
		checkEntries(t, p, id, k, commands)
		t.Logf("run %d: %d of %d commands re-dispatched after a crash", k, interrupted, commands)
	}
}

// markerCommands are the commands of script run k of the crash tests:
// each appends a line to its own marker file under marks, then sleeps a
// little.
func markerCommands(marks string, k, commands int) []string {
	cmds := make([]string, commands)
	for i := range cmds {
		cmds[i] = testkit.MarkerCommand(marks, k, i, []string{"0.01", "0.05", "0.2", "0.02"}[(i+k)%4])
	}
	return cmds
}

// checkRanOnce fails unless script run k (id, served by p) journaled all
// its commands as done, each command ran once, or twice if interrupted
// (its op tried more than once), going by its marker file; it returns how
// many were interrupted.
func checkRanOnce(t testing.TB, p *proc, id string, k int, marks string, commands int) int {
	t.Helper()
	ops := p.ops(id)
	if len(ops) != commands {
		t.Fatalf("run %d: %d ops journaled, want %d", k, len(ops), commands)
	}
	interrupted := 0
	for i, op := range ops {
		if op.Status != "done" {
			t.Fatalf("run %d op %s status %s", k, op.ID, op.Status)
		}
		if testkit.CheckRanOnce(t, marks, k, i, op.Attempts) {
			interrupted++
		}
	}
	return interrupted
}

// checkEntries fails unless p serves one command entry per command of
// script run k, numbered from 1, none lost.
func checkEntries(t testing.TB, p *proc, id string, k, commands int) {
	t.Helper()
	entries := p.entries(id)
	if len(entries) != commands {
		t.Fatalf("run %d on %s: %d entries, want %d", k, p.base, len(entries), commands)
	}
	for i, e := range entries {
		var data struct {
			Index int `json:"index"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil || e.Seq != uint64(i+1) || e.Type != "command" || data.Index != i {
			t.Fatalf("run %d entry %d on %s = %+v (%v)", k, i, p.base, e, err)
		}
	}
}

// doneOps counts journaled results per run; -1 marks an ended run.
func doneOps(t testing.TB, p *proc, ids []string) []int {
	t.Helper()
	out := make([]int, len(ids))
	for i, id := range ids {
		if h := p.run(id); h.Status != "running" {
			out[i] = -1
			continue
		}
		for _, op := range p.ops(id) {
			if op.Status == "done" {
				out[i]++
			}
		}
	}
	return out
}

// journaled reads the results journaled per run straight from the data
// file of a dead server; -1 marks an ended run.
func journaled(t testing.TB, data string, ids []string) []int {
	t.Helper()
	st := teststore.OpenAt(t, data)
	defer st.Close() // before the next server opens the file
	out := make([]int, len(ids))
	for i, id := range ids {
		h, err := st.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if h.Status.Terminal() {
			out[i] = -1
			continue
		}
		ops, err := st.Ops(context.Background(), id, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if op.Status == state.OpDone {
				out[i]++
			}
		}
	}
	return out
}

// progressed reports whether every run that was running before has a new
// result or has ended.
func progressed(before, after []int) bool {
	for i := range before {
		if before[i] >= 0 && after[i] >= 0 && after[i] <= before[i] {
			return false
		}
	}
	return true
}

// waitProgress waits, after a restart, until every run of ids that was
// unfinished when before was counted (journaled) has journaled a new
// result or ended, so that no command is interrupted twice.
func waitProgress(t testing.TB, p *proc, ids []string, before []int) {
	t.Helper()
	testkit.CheckFor(t, 30*time.Second, func() error {
		if !progressed(before, doneOps(t, p, ids)) {
			return fmt.Errorf("no progress after restart\n%s", p.out.String())
		}
		return nil
	})
}

// TestGracefulShutdown stops the server with SIGTERM while a run is in
// the middle of a command: the process exits 0, the run stays running in
// the store, and the next start finishes it.
func TestGracefulShutdown(t *testing.T) {
	data, addr := t.TempDir(), freePort(t)
	p := startServer(t, data, addr)
	marker := filepath.Join(t.TempDir(), "started")
	id := p.start("script", map[string]any{"commands": []string{"touch " + marker + "; sleep 2", "echo after"}})
	testkit.WaitFor(t, "the command to start", func() bool { _, err := os.Stat(marker); return err == nil })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("server exit after SIGTERM: %v\n%s", err, p.out.String())
	}
	if !strings.Contains(p.out.String(), "unfinished runs resume on the next start") {
		t.Fatalf("no shutdown message:\n%s", p.out.String())
	}
	st := teststore.OpenAt(t, data)
	h, err := st.Run(context.Background(), id)
	st.Close() // before the restarted server opens the file
	if err != nil || h.Status != state.StatusRunning {
		t.Fatalf("after shutdown: %v %s", err, h.Status)
	}
	p = startServer(t, data, addr)
	if end := waitEnded(t, p, id, 30*time.Second); end.Status != "succeeded" {
		t.Fatalf("after restart: %+v", end)
	}
}
