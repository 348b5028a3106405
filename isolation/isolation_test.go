package isolation

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
)

func TestWrapNone(t *testing.T) {
	argv := []string{"python3", "-c", "print(1)"}
	for _, kind := range []string{"", KindNone} {
		t.Run("kind="+kind, func(t *testing.T) {
			got, err := Wrap(configs.Isolation{Kind: kind, Network: true}, "relative/ok", []string{"/data"}, argv)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, argv) {
				t.Fatalf("Wrap = %q, want %q", got, argv)
			}
		})
	}
}

func TestWrapErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		kind    string
		workDir string
		argv    []string
		want    error
	}{
		{"unknown kind", "docker", dir, []string{"true"}, ErrUnknownKind},
		{"relative work dir", KindBwrap, "work", []string{"true"}, ErrBadPath},
		{"missing work dir", KindBwrap, filepath.Join(dir, "missing"), []string{"true"}, ErrBadPath},
		{"empty command", KindBwrap, dir, nil, ErrBadPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Wrap(configs.Isolation{Kind: tt.kind}, tt.workDir, nil, tt.argv)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Wrap error = %v, want %v", err, tt.want)
			}
		})
	}
}

// requireBwrapBinary skips unless bwrap is on PATH.
func requireBwrapBinary(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed (apt-get install bubblewrap): ", err)
	}
}

// requireBwrap skips unless bwrap can create sandboxes here.
func requireBwrap(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip("bwrap sandbox unavailable on this host: ", err)
	}
}

// indexOf returns the index of the first occurrence of the consecutive
// elements seq in s, or -1.
func indexOf(s []string, seq ...string) int {
	for i := 0; i+len(seq) <= len(s); i++ {
		if slices.Equal(s[i:i+len(seq)], seq) {
			return i
		}
	}
	return -1
}

func TestWrapBwrapArgs(t *testing.T) {
	requireBwrapBinary(t)
	root := t.TempDir()
	data := filepath.Join(root, "data")
	inside := filepath.Join(data, "runs", "r1")
	outside := filepath.Join(root, "work")
	nested := filepath.Join(outside, "secret")
	hiddenFile := filepath.Join(root, "token")
	for _, d := range []string{inside, outside, nested} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(hiddenFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	argv := []string{"sh", "-c", "true"}
	tests := []struct {
		name    string
		sandbox configs.Isolation
		workDir string
		hidden  []string
		check   func(t *testing.T, got []string)
	}{
		{
			name: "base flags", sandbox: configs.Isolation{Kind: KindBwrap}, workDir: outside,
			check: func(t *testing.T, got []string) {
				for _, seq := range [][]string{
					{"--die-with-parent"}, {"--unshare-all"}, {"--ro-bind", "/", "/"}, {"--dev", "/dev"},
					{"--proc", "/proc"}, {"--tmpfs", "/tmp"}, {"--bind", outside, outside}, {"--chdir", outside},
				} {
					if indexOf(got, seq...) < 0 {
						t.Errorf("missing %q in %q", seq, got)
					}
				}
				for _, flag := range []string{"--share-net", "--new-session"} {
					if slices.Contains(got, flag) {
						t.Errorf("unexpected %s in %q", flag, got)
					}
				}
				if i := indexOf(got, "--"); i < 0 || !slices.Equal(got[i+1:], argv) {
					t.Errorf("command not at the end after --: %q", got)
				}
			},
		},
		{
			name: "network", sandbox: configs.Isolation{Kind: KindBwrap, Network: true}, workDir: outside,
			check: func(t *testing.T, got []string) {
				if indexOf(got, "--unshare-all") > indexOf(got, "--share-net") {
					t.Errorf("--share-net must follow --unshare-all: %q", got)
				}
			},
		},
		{
			name: "work dir inside hidden", sandbox: configs.Isolation{Kind: KindBwrap}, workDir: inside,
			hidden: []string{data, filepath.Join(root, "missing"), "relative", "/"},
			check: func(t *testing.T, got []string) {
				hide, bind := indexOf(got, "--tmpfs", data), indexOf(got, "--bind", inside, inside)
				if hide < 0 || bind < 0 || hide > bind {
					t.Errorf("want tmpfs over %s before binding %s: %q", data, inside, got)
				}
				if slices.Contains(got, filepath.Join(root, "missing")) || slices.Contains(got, "relative") ||
					indexOf(got, "--tmpfs", "/") >= 0 {
					t.Errorf("missing, relative or root hidden path used: %q", got)
				}
			},
		},
		{
			name: "hidden inside work dir and hidden file", sandbox: configs.Isolation{Kind: KindBwrap}, workDir: outside,
			hidden: []string{nested, hiddenFile},
			check: func(t *testing.T, got []string) {
				bind, hide := indexOf(got, "--bind", outside, outside), indexOf(got, "--tmpfs", nested)
				if hide < 0 || bind < 0 || hide < bind {
					t.Errorf("want %s bound before tmpfs over %s: %q", outside, nested, got)
				}
				if indexOf(got, "--ro-bind", "/dev/null", hiddenFile) < 0 {
					t.Errorf("hidden file not covered by /dev/null: %q", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Wrap(tt.sandbox, tt.workDir, tt.hidden, argv)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

// hostDir makes a directory outside /tmp (which the sandbox replaces), so
// that it is visible, read-only, inside the sandbox.
func hostDir(t testing.TB) string {
	t.Helper()
	for _, base := range []string{"/var/tmp", os.Getenv("HOME")} {
		if base == "" {
			continue
		}
		if d, err := os.MkdirTemp(base, "flock-isolate-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	t.Skip("no writable directory outside /tmp")
	return ""
}

func TestBwrapSandbox(t *testing.T) {
	requireBwrap(t)
	data := hostDir(t)
	work := filepath.Join(data, "runs", "r1", "work")
	outside := hostDir(t)
	hostTmp := t.TempDir()
	for _, d := range []string{work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "secret.txt"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostTmp, "host.txt"), []byte("h"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// The kernel completes the handshake from the backlog; nobody accepts.
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf(`python3 -c "import socket; socket.create_connection(('127.0.0.1', %d), timeout=2)"`, port)
	if _, err := exec.LookPath("python3"); err != nil {
		connect = ""
	}

	tests := []struct {
		name    string
		network bool
		script  string
		wantOK  bool
		wantOut string
	}{
		{name: "work dir writable", script: "echo hi > f && cat f && pwd", wantOK: true, wantOut: "hi\n" + work + "\n"},
		{name: "outside dir read-only", script: "touch " + outside + "/x", wantOK: false},
		{name: "root read-only", script: "touch /flock-isolate-test", wantOK: false},
		{name: "private tmp writable", script: "echo t > /tmp/t && cat /tmp/t", wantOK: true, wantOut: "t\n"},
		{name: "host tmp invisible", script: "cat " + hostTmp + "/host.txt", wantOK: false},
		{name: "hidden file invisible", script: "cat " + data + "/secret.txt", wantOK: false},
		{name: "hidden dir shows only the path to work", script: "ls -A " + data, wantOK: true, wantOut: "runs\n"},
		{name: "own pid namespace", script: "ls /proc | grep -c '^[0-9]' | awk '{exit !($1 < 10)}'", wantOK: true},
		{name: "no capabilities", script: "grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status | grep -v ':[[:space:]]*0000000000000000$'", wantOK: false},
		{name: "network off", script: connect, wantOK: false},
		{name: "network on", network: true, script: connect, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.script == "" {
				t.Skip("python3 not installed")
			}
			argv, err := Wrap(configs.Isolation{Kind: KindBwrap, Network: tt.network}, work, []string{data}, []string{"sh", "-c", tt.script})
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			if ok := err == nil; ok != tt.wantOK {
				t.Fatalf("success = %v (err %v), want %v; output:\n%s", ok, err, tt.wantOK, out)
			}
			if tt.wantOut != "" && string(out) != tt.wantOut {
				t.Fatalf("output = %q, want %q", out, tt.wantOut)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(work, "f")); err != nil {
		t.Errorf("file written in the sandbox missing on the host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Errorf("write outside the work dir reached the host")
	}
}

// TestBwrapHostTmp: the default isolation (HostTmp) shares the host's
// /tmp, writable, and still hides a data directory inside it but for the
// work directory.
func TestBwrapHostTmp(t *testing.T) {
	requireBwrap(t)
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tmp, "/tmp/") {
		t.Skipf("t.TempDir() %s is not under /tmp", tmp)
	}
	data := filepath.Join(tmp, "data")
	work := filepath.Join(data, "runs", "r1")
	other := filepath.Join(data, "runs", "r2")
	for _, d := range []string{work, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{filepath.Join(data, "flock.db"): "db", filepath.Join(other, "o.txt"): "o", filepath.Join(tmp, "agent.txt"): "agent"} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`cat %[1]s/agent.txt && echo w > %[1]s/w.txt && ! cat %[2]s/flock.db && ! ls %[3]s && echo x > x && touch /x-root 2>/dev/null; test ! -e /x-root`,
		tmp, data, other)
	argv, err := Wrap(configs.Isolation{Kind: KindBwrap, Network: true, HostTmp: true}, work, []string{data}, []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	if indexOf(argv, "--bind", "/tmp", "/tmp") < 0 || slices.Contains(argv, "--tmpfs") && indexOf(argv, "--tmpfs", "/tmp") >= 0 {
		t.Fatalf("want the host's /tmp bound, not a tmpfs: %q", argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(tmp, "w.txt")); err != nil || string(b) != "w\n" {
		t.Fatalf("write to the host's /tmp: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(work, "x")); err != nil {
		t.Fatalf("write in the work directory: %v", err)
	}
}

func TestAvailableCached(t *testing.T) {
	first := Available()
	if second := Available(); second != first {
		t.Fatalf("Available changed: %v then %v", first, second)
	}
	if first != nil && !errors.Is(first, ErrUnavailable) {
		t.Fatalf("Available error %v does not wrap ErrUnavailable", first)
	}
	if first != nil && !strings.Contains(first.Error(), "bwrap") {
		t.Fatalf("Available error %v does not name bwrap", first)
	}
}

func ExampleWrap() {
	argv, err := Wrap(configs.Isolation{Kind: "none"}, "/srv/flock/runs/r1/work", []string{"/srv/flock"}, []string{"python3", "-c", "print(1)"})
	fmt.Println(argv, err)
	// Output: [python3 -c print(1)] <nil>
}
