package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

// bashRun runs command in worker's bash session and returns its stdout.
func (e *env) bashRun(t *testing.T, worker, command string) string {
	t.Helper()
	a := e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": worker, "action": "bash:run", "params": map[string]any{"command": command}})
	if a.code() != 0 || a.data()["return_code"] != float64(0) {
		t.Fatalf("%s: %v", command, a.body)
	}
	return a.data()["stdout"].(string)
}

// TestForkKeepsHoles is the attack of issue 23.5: a fork copied sparse
// files densely (a 1 GB sparse file became 1.1 GB on disk; `truncate -s
// 1T` filled the disk). Over real HTTP, a 16 GB sparse file with 5 bytes of
// data forks to a file of the same size and content that takes almost no
// disk (st_blocks). (16 GB rather than the attack's 1 TB: the copy's
// budget, max_workspace_bytes of 64 MiB here, is what keeps a regression
// from writing it all out, and that budget could regress too.)
func TestForkKeepsHoles(t *testing.T) {
	e := newEnv(t, "", `{"server":{"max_workspace_bytes":67108864},"resources":{"bash":{}}}`)
	if a := e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "a", "resource_type": "bash"}); a.code() != 0 {
		t.Fatalf("create: %v", a.body)
	}
	ws := strings.TrimSpace(e.bashRun(t, "a", "truncate -s 16G big.img && printf hello | dd of=big.img bs=1 seek=500000000 conv=notrunc status=none && truncate -s 1G mid.img && pwd"))
	f := e.do(t, "POST", "/api/v1/session/fork", map[string]any{"worker_id": "b", "from_worker_id": "a", "resource_type": "bash"})
	if f.code() != 0 || f.data()["forked"] != true {
		t.Fatalf("fork: %v", f.body)
	}
	bws := strings.TrimSpace(e.bashRun(t, "b", "pwd"))
	if bws == ws {
		t.Fatal("the fork shares the workspace")
	}
	for name, size := range map[string]int64{"big.img": 16 << 30, "mid.img": 1 << 30} {
		st, err := os.Stat(filepath.Join(bws, name))
		if err != nil {
			t.Fatal(err)
		}
		blocks := st.Sys().(*syscall.Stat_t).Blocks
		if st.Size() != size || blocks*512 > 1<<20 {
			t.Fatalf("forked %s: %d bytes, %d bytes on disk; want %d bytes and the holes kept", name, st.Size(), blocks*512, size)
		}
	}
	if out := e.bashRun(t, "b", "dd if=big.img bs=1 skip=500000000 count=5 status=none"); out != "hello" {
		t.Fatalf("forked data %q", out)
	}
}

// TestForkRefusesOversizeWorkspace: a workspace whose files take more disk
// than server.max_workspace_bytes is not forked: the answer is 4001
// naming the setting, and no session is created for the new worker.
func TestForkRefusesOversizeWorkspace(t *testing.T) {
	e := newEnv(t, "", `{"server":{"max_workspace_bytes":1048576},"resources":{"bash":{}}}`)
	if a := e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "a", "resource_type": "bash"}); a.code() != 0 {
		t.Fatalf("create: %v", a.body)
	}
	e.bashRun(t, "a", "head -c 500000 /dev/urandom > one.bin && truncate -s 10G holes.img")
	if f := e.do(t, "POST", "/api/v1/session/fork", map[string]any{"worker_id": "b", "from_worker_id": "a", "resource_type": "bash"}); f.code() != 0 || f.data()["forked"] != true {
		t.Fatalf("fork under the limit: %v", f.body)
	}
	e.bashRun(t, "a", "head -c 800000 /dev/urandom > two.bin")
	f := e.do(t, "POST", "/api/v1/session/fork", map[string]any{"worker_id": "c", "from_worker_id": "a", "resource_type": "bash"})
	if f.code() != sandbox.CodeBusinessFailure || f.status != 400 || !strings.Contains(f.body["message"].(string), "server.max_workspace_bytes") {
		t.Fatalf("fork over the limit: %d %v", f.status, f.body)
	}
	if a := e.do(t, "POST", "/api/v1/session/list", map[string]any{"worker_id": "c"}); a.data()["count"] != float64(0) {
		t.Fatalf("a refused fork left a session: %v", a.body)
	}
}

// TestCopyWorkspaceBudget: the copy itself keeps to the destination's
// MaxWorkspaceBytes (a workspace that grew after the check): it stops with
// ErrWorkspaceTooLarge; holes do not count.
func TestCopyWorkspaceBudget(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "data"), make([]byte, 200000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(src, "data"), 8<<30); err != nil { // 200 KB of data, then a hole
		t.Fatal(err)
	}
	err := sandbox.CopyWorkspace(context.Background(), &sandbox.Session{Workspace: src}, &sandbox.Session{Workspace: dst, MaxWorkspaceBytes: 100000})
	if !errors.Is(err, sandbox.ErrWorkspaceTooLarge) || !strings.Contains(err.Error(), "max_workspace_bytes") {
		t.Fatalf("copy over budget: %v", err)
	}
	ok := t.TempDir()
	if err := sandbox.CopyWorkspace(context.Background(), &sandbox.Session{Workspace: src}, &sandbox.Session{Workspace: ok, MaxWorkspaceBytes: 1 << 20}); err != nil {
		t.Fatalf("copy within budget: %v", err)
	}
	if st, err := os.Stat(filepath.Join(ok, "data")); err != nil || st.Size() != 8<<30 {
		t.Fatalf("copy: %v %v", st, err)
	}
}

// TestForkMetaTool: every answer of the fork route names it in meta.tool
// ("session:fork"), the fresh session it falls back to (no source, no
// enabled backend) and the "exists" answer included, as docs/sandbox.md
// says of every route: a client that picks its formatter from meta.tool
// sees one name per route.
func TestForkMetaTool(t *testing.T) {
	e := newEnv(t, "", `{"resources":{"bash":{}}}`)
	fork := func(worker, from, rt string) answer {
		t.Helper()
		return e.do(t, "POST", "/api/v1/session/fork", map[string]any{"worker_id": worker, "from_worker_id": from, "resource_type": rt})
	}
	if a := e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "a", "resource_type": "bash"}); a.code() != 0 {
		t.Fatalf("create: %v", a.body)
	}
	for name, a := range map[string]answer{
		"forked":     fork("b", "a", "bash"),
		"exists":     fork("b", "a", "bash"),
		"no source":  fork("c", "nobody", "bash"),
		"no backend": fork("d", "a", "vm"),
	} {
		meta, _ := a.body["meta"].(map[string]any)
		if a.code() != 0 || meta["tool"] != "session:fork" || meta["resource_type"] != "session" {
			t.Errorf("%s: code %d, meta %v: want 0 and tool session:fork", name, a.code(), meta)
		}
	}
}
