package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flock runs the binary to its end and returns its exit code, stdout and
// stderr.
func flock(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee) && ctx.Err() == nil:
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("flock %v: %v\n%s\n%s", args, err, out.String(), errb.String())
	return 0, "", ""
}

// TestServeCorruptDatabase starts the real binary on damaged copies of a
// database written by real runs: it exits 1 with one line naming the file
// and what to do, never a panic or a goroutine dump; db check reports the
// damage, db recover copies the rest, and the recovered file serves.
func TestServeCorruptDatabase(t *testing.T) {
	data := t.TempDir()
	for i := 0; i < 6; i++ {
		if code, out, errs := flock(t, "run", "--quiet", "--settings", "../configs/examples/script.json", "--data", data); code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
		}
	}
	orig, err := os.ReadFile(filepath.Join(data, "flock.db"))
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	for _, tt := range []struct {
		name string
		fn   func(b []byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2+100] }},
		{"zeroed pages", func(b []byte) []byte { clear(b[2*ps : len(b)/2]); return b }},
		{"garbage meta", func(b []byte) []byte { clear(b[:2*ps]); return b }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "runs", "r1"), 0o755); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "flock.db")
			if err := os.WriteFile(file, tt.fn(append([]byte(nil), orig...)), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := flock(t, "serve", "--addr", freePort(t), "--data", dir)
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if code != 1 || len(lines) != 1 || !strings.Contains(errs, file) || !strings.Contains(errs, "damaged") ||
				!strings.Contains(errs, "flock db recover") || strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") {
				t.Fatalf("serve: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			if code, out, errs := flock(t, "db", "check", "--data", dir); code != 1 || !strings.Contains(out, "problems") || strings.Contains(errs, "panic") {
				t.Fatalf("check: exit %d\n%s\n%s", code, out, errs)
			}
			to := filepath.Join(t.TempDir(), "recovered.db")
			code, out, errs = flock(t, "db", "recover", "--data", dir, "--to", to)
			if strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") {
				t.Fatalf("recover: exit %d\n%s\n%s", code, out, errs)
			}
			if code != 0 {
				return // nothing readable: reported, no file written
			}
			if code, out, errs := flock(t, "db", "check", "--db", to); code != 0 {
				t.Fatalf("check recovered: exit %d\n%s\n%s", code, out, errs)
			}
			if err := os.Rename(to, file); err != nil {
				t.Fatal(err)
			}
			p := startServer(t, dir, freePort(t))
			var runs struct {
				Runs []head `json:"runs"`
			}
			if code := p.do("GET", "/runs", nil, &runs); code != 200 {
				t.Fatalf("GET /runs on the recovered file: %d", code)
			}
			t.Logf("%s: recovered file serves %d runs", tt.name, len(runs.Runs))
		})
	}
}
