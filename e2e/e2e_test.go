// Package e2e tests the real flock binary: it builds it, starts it as a
// subprocess on a random loopback port, drives it over HTTP and kills it.
package e2e

import (
	"bufio"
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
	build := exec.Command("go", "build", "-o", binary, "github.com/flockrun/flock")
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
	out  *bytes.Buffer
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
	args := append([]string{"serve", "--addr", addr, "--data", data, "--log-level", "warn"}, extra...)
	cmd := exec.Command(binary, args...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, base: "http://" + addr, out: out}
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not come up: %v\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
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

type head struct {
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	EndReason string          `json:"end_reason"`
	Error     string          `json:"error"`
	Result    json.RawMessage `json:"result"`
}

func (p *proc) run(id string) head {
	p.t.Helper()
	var h head
	if code := p.do("GET", "/runs/"+id, nil, &h); code != 200 {
		p.t.Fatalf("GET /runs/%s: %d", id, code)
	}
	return h
}

// countLines returns the number of lines of a file (0 if absent).
func countLines(t testing.TB, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		n++
	}
	return n
}

func TestServeStartAndFinish(t *testing.T) {
	p := startServer(t, t.TempDir(), freePort(t))
	var started struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	code := p.do("POST", "/start_workflow", map[string]any{"workflow": "script",
		"settings": map[string]any{"commands": []string{"cd /tmp", "pwd"}}}, &started)
	if code != 201 || started.Status != "running" {
		t.Fatalf("start: %d %+v", code, started)
	}
	waitEnded(t, p, started.RunID, 30*time.Second)
	if h := p.run(started.RunID); h.Status != "succeeded" {
		t.Fatalf("run ended %+v", h)
	}
	var entries struct {
		Entries []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"entries"`
	}
	p.do("GET", "/runs/"+started.RunID+"/entries", nil, &entries)
	if len(entries.Entries) != 2 || !strings.Contains(string(entries.Entries[1].Data), `"stdout":"/tmp`) {
		t.Fatalf("entries = %+v", entries.Entries)
	}
	resp, err := http.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`flock_runs_ended_total{status="succeeded",workflow="script"} 1`,
		`flock_operations_total{kind="bash",outcome="ok"} 2`, "flock_store_transactions_total"} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
}

func waitEnded(t testing.TB, p *proc, id string, d time.Duration) head {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		h := p.run(id)
		switch h.Status {
		case "succeeded", "failed", "cancelled":
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after %s", id, h.Status, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
		cmds := make([]string, commands)
		for i := range cmds {
			sleep := []string{"0.01", "0.05", "0.2", "0.02"}[(i+k)%4]
			cmds[i] = fmt.Sprintf("echo ran >> %s/r%d_c%02d; sleep %s", marks, k, i, sleep)
		}
		var started struct {
			RunID string `json:"run_id"`
		}
		if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "script",
			"settings": map[string]any{"commands": cmds}}, &started); code != 201 {
			t.Fatalf("start run %d: %d", k, code)
		}
		ids[k] = started.RunID
	}
	// Kill at varied moments: during commands, between phases, right
	// after results. After each restart, wait until every unfinished run
	// has journaled a new result, so no command is interrupted twice.
	for _, d := range []time.Duration{90, 240, 35, 410, 160, 300, 20, 520} {
		time.Sleep(d * time.Millisecond)
		p.kill()
		before := journaled(t, data, ids)
		p = startServer(t, data, addr)
		deadline := time.Now().Add(30 * time.Second)
		for !progressed(before, doneOps(t, p, ids)) {
			if time.Now().After(deadline) {
				t.Fatalf("no progress after restart\n%s", p.out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for k, id := range ids {
		h := waitEnded(t, p, id, 60*time.Second)
		if h.Status != "succeeded" {
			t.Fatalf("run %d ended %s (%s): %s\n%s", k, h.Status, h.EndReason, h.Error, p.out.String())
		}
		var ops struct {
			Ops []struct {
				ID       string `json:"id"`
				Status   string `json:"status"`
				Attempts int    `json:"attempts"`
				Request  struct {
					Params struct {
						Command string `json:"command"`
					} `json:"params"`
				} `json:"request"`
			} `json:"ops"`
		}
		p.do("GET", "/runs/"+id+"/ops?limit=1000", nil, &ops)
		if len(ops.Ops) != commands {
			t.Fatalf("run %d: %d ops journaled, want %d", k, len(ops.Ops), commands)
		}
		interrupted := 0
		for i, op := range ops.Ops {
			n := countLines(t, fmt.Sprintf("%s/r%d_c%02d", marks, k, i))
			switch {
			case op.Status != "done":
				t.Fatalf("run %d op %s status %s", k, op.ID, op.Status)
			case n == 0:
				t.Fatalf("run %d command %d never ran", k, i)
			case op.Attempts <= 1 && n != 1:
				t.Fatalf("run %d command %d ran %d times though it was never interrupted", k, i, n)
			case n > 2:
				t.Fatalf("run %d command %d ran %d times, more than twice", k, i, n)
			}
			if op.Attempts > 1 {
				interrupted++
			}
		}
		var entries struct {
			Entries []struct {
				Seq  uint64 `json:"seq"`
				Type string `json:"type"`
				Data struct {
					Index int `json:"index"`
				} `json:"data"`
			} `json:"entries"`
		}
		p.do("GET", "/runs/"+id+"/entries?limit=1000", nil, &entries)
		if len(entries.Entries) != commands {
			t.Fatalf("run %d: %d entries, want %d", k, len(entries.Entries), commands)
		}
		for i, e := range entries.Entries {
			if e.Seq != uint64(i+1) || e.Type != "command" || e.Data.Index != i {
				t.Fatalf("run %d entry %d = %+v", k, i, e)
			}
		}
		t.Logf("run %d: %d of %d commands re-dispatched after a crash", k, interrupted, commands)
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
		var ops struct {
			Ops []struct {
				Status string `json:"status"`
			} `json:"ops"`
		}
		p.do("GET", "/runs/"+id+"/ops?limit=1000", nil, &ops)
		for _, op := range ops.Ops {
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

// TestGracefulShutdown stops the server with SIGTERM while a run is in
// the middle of a command: the process exits 0, the run stays running in
// the store, and the next start finishes it.
func TestGracefulShutdown(t *testing.T) {
	data, addr := t.TempDir(), freePort(t)
	p := startServer(t, data, addr)
	var started struct {
		RunID string `json:"run_id"`
	}
	marker := filepath.Join(t.TempDir(), "started")
	if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "script", "settings": map[string]any{
		"commands": []string{"touch " + marker + "; sleep 2", "echo after"}}}, &started); code != 201 {
		t.Fatalf("start: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
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
	h, err := st.Run(context.Background(), started.RunID)
	st.Close() // before the restarted server opens the file
	if err != nil || h.Status != state.StatusRunning {
		t.Fatalf("after shutdown: %v %s", err, h.Status)
	}
	p = startServer(t, data, addr)
	if end := waitEnded(t, p, started.RunID, 30*time.Second); end.Status != "succeeded" {
		t.Fatalf("after restart: %+v", end)
	}
}
