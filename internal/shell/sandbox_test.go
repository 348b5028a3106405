package shell

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/isolation"
)

// TestBwrapSandbox runs commands of an owner that asks for bwrap:
// the work directory is writable and cwd persists, the server's data
// directory (Options.Hidden) is invisible, the rest of the system is
// read-only and the network is off.
func TestBwrapSandbox(t *testing.T) {
	if err := isolation.Available(); err != nil {
		t.Skipf("bwrap unavailable: %v", err)
	}
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(data, "flock.db")
	if err := os.WriteFile(secret, []byte("journal"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	h := newPool(t, Options{Hidden: []string{data}})
	env := newEnv(t, "sandboxed")
	// The run's work directory lives inside the data directory, as in a server.
	env.WorkDir = filepath.Join(data, "runs", "sandboxed")
	if err := os.MkdirAll(env.WorkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	env.Isolation.Kind = "bwrap"

	tests := []struct {
		name, command, stdout string
	}{
		{name: "work dir writable", command: "echo hi > note.txt && cat note.txt", stdout: "hi\n"},
		{name: "cwd persists", command: "mkdir -p sub && cd sub && pwd", stdout: env.WorkDir + "/sub\n"},
		{name: "still in sub", command: "pwd", stdout: env.WorkDir + "/sub\n"},
		{name: "data dir hidden", command: fmt.Sprintf("test -e %s && echo visible || echo hidden", secret), stdout: "hidden\n"},
		{name: "outside read-only", command: fmt.Sprintf("touch %s/x 2>/dev/null && echo wrote || echo refused", outside), stdout: "refused\n"},
		{name: "network off", command: fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo connected || echo offline", port), stdout: "offline\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, h, env, tt.command)
			if got.Stdout != tt.stdout {
				t.Fatalf("stdout %q, want %q (stderr %q)", got.Stdout, tt.stdout, got.Stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("a file appeared outside the work directory")
	}
	if b, err := os.ReadFile(filepath.Join(env.WorkDir, "note.txt")); err != nil || strings.TrimSpace(string(b)) != "hi" {
		t.Fatalf("note.txt on the host: %q %v", b, err)
	}

	// Without the sandbox the same listener is reachable: the test can fail.
	plain := newEnv(t, "plain")
	if got := run(t, h, plain, fmt.Sprintf("(exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo connected || echo offline", port)); got.Stdout != "connected\n" {
		t.Fatalf("unsandboxed connect: %q", got.Stdout)
	}
}
