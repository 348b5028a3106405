package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// layout is a server's directories on a real disk: a data dir with a
// database, a run (with a child) and another run, an operator read root
// that contains the data dir (as the CLI's current directory does), and
// files outside everything.
type layout struct {
	data, runs, run, child, other, root, outside string
}

func mkLayout(t *testing.T) layout {
	t.Helper()
	base := t.TempDir()
	l := layout{root: filepath.Join(base, "project"), outside: filepath.Join(base, "outside")}
	l.data = filepath.Join(l.root, "flock-data")
	l.runs = filepath.Join(l.data, "runs")
	l.run = filepath.Join(l.runs, "r1")
	l.child = filepath.Join(l.run, "children", "c1")
	l.other = filepath.Join(l.runs, "r2")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(l.data, "flock.db"), "DATABASE")
	write(filepath.Join(l.run, "mine.txt"), "MINE")
	write(filepath.Join(l.child, "kid.txt"), "KID")
	write(filepath.Join(l.other, "theirs.txt"), "THEIRS")
	write(filepath.Join(l.root, "prompt.txt"), "PROMPT")
	write(filepath.Join(l.outside, "secret.txt"), "SECRET")
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link("../../outside/secret.txt", filepath.Join(l.root, "escape.txt"))        // a root's symlink out of it
	link("flock-data/flock.db", filepath.Join(l.root, "db.txt"))                 // a root's symlink into the data dir
	link("../../../outside", filepath.Join(l.run, "outdir"))                     // a symlinked parent dir out of the work dir
	link("../r2/theirs.txt", filepath.Join(l.run, "theirs.txt"))                 // the work dir's symlink into another run
	link("mine.txt", filepath.Join(l.run, "alias.txt"))                          // a symlink that stays inside
	link(filepath.Join(l.run, "mine.txt"), filepath.Join(l.run, "absolute.txt")) // absolute: os.Root refuses it
	return l
}

func (l layout) handler(t *testing.T, writeRoots ...string) *Handler {
	t.Helper()
	a, err := NewAccess(AccessOptions{DataDir: l.data, RunsDir: l.runs, ReadRoots: []string{l.root}, WriteRoots: writeRoots})
	if err != nil {
		t.Fatal(err)
	}
	return New(a)
}

func TestAccessReads(t *testing.T) {
	l := mkLayout(t)
	h := l.handler(t)
	tests := []struct {
		name, workDir, path string
		want                string // content, or "" when refused
		refused             error
	}{
		{"own file, relative", l.run, "mine.txt", "MINE", nil},
		{"own file, absolute", l.run, filepath.Join(l.run, "mine.txt"), "MINE", nil},
		{"symlink inside the work dir", l.run, "alias.txt", "MINE", nil},
		{"own child's file", l.run, "children/c1/kid.txt", "KID", nil},
		{"child reads its parent's file", l.child, "../../mine.txt", "MINE", nil},
		{"file beneath a read root", l.run, filepath.Join(l.root, "prompt.txt"), "PROMPT", nil},
		{"/etc/passwd", l.run, "/etc/passwd", "", ErrOutsideRoots},
		{"dot-dot out of the work dir", l.run, "../../../../outside/secret.txt", "", ErrOutsideRoots},
		{"dot-dot out of a read root", l.run, filepath.Join(l.root, "..", "outside", "secret.txt"), "", ErrOutsideRoots},
		{"symlink out of a read root", l.run, filepath.Join(l.root, "escape.txt"), "", ErrOutsideRoots},
		{"symlinked parent dir out of the work dir", l.run, "outdir/secret.txt", "", ErrOutsideRoots},
		{"symlink into another run", l.run, "theirs.txt", "", ErrOutsideRoots},
		{"absolute symlink", l.run, "absolute.txt", "", ErrOutsideRoots},
		{"the database through a read root", l.run, filepath.Join(l.data, "flock.db"), "", ErrDataDir},
		{"the database through a read root's symlink", l.run, filepath.Join(l.root, "db.txt"), "", ErrDataDir},
		{"another run through a read root", l.run, filepath.Join(l.other, "theirs.txt"), "", ErrDataDir},
		{"the parent's run through a read root when the run is elsewhere", t.TempDir(), filepath.Join(l.run, "mine.txt"), "", ErrDataDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.Handle(context.Background(), handlers.Env{WorkDir: tt.workDir}, operations.NewReadFile(tt.path))
			if tt.refused == nil {
				if r.Error != "" || operations.ReadFile.Result(r) == nil || operations.ReadFile.Result(r).Content != tt.want {
					t.Fatalf("read %s = %+v %+v, want %q", tt.path, r.Error, operations.ReadFile.Result(r), tt.want)
				}
				return
			}
			if r.Error == "" {
				t.Fatalf("read %s succeeded: %+v", tt.path, operations.ReadFile.Result(r))
			}
			if !strings.Contains(r.Error, strings.TrimPrefix(tt.refused.Error(), "is ")) || !strings.HasPrefix(r.Error, "read_file: /") {
				t.Fatalf("error = %q, want read_file: PATH %v", r.Error, tt.refused)
			}
			for _, secret := range []string{"SECRET", "DATABASE", "THEIRS", "root:"} {
				if strings.Contains(r.Error, secret) {
					t.Fatalf("the error carries file content: %q", r.Error)
				}
			}
		})
	}
	// The example, word for word.
	r := h.Handle(context.Background(), handlers.Env{WorkDir: l.run}, operations.NewReadFile("/etc/passwd"))
	if r.Error != "read_file: /etc/passwd is outside the run's work directory and the server's read_roots" {
		t.Fatalf("error = %q", r.Error)
	}
	// A missing file beneath a root is reported as missing, one outside as refused.
	if r := h.Handle(context.Background(), handlers.Env{WorkDir: l.run}, operations.NewReadFile("nope.txt")); r.Error != "" || operations.ReadFile.Result(r).Exists {
		t.Fatalf("missing own file: %+v", r)
	}
	if r := h.Handle(context.Background(), handlers.Env{WorkDir: l.run}, operations.NewReadFile(filepath.Join(l.outside, "nope.txt"))); !strings.Contains(r.Error, "read_roots") {
		t.Fatalf("missing outside file: %+v", r)
	}
}

func TestAccessWrites(t *testing.T) {
	l := mkLayout(t)
	out := filepath.Join(t.TempDir(), "results")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	h := l.handler(t, out)
	tests := []struct {
		name, workDir, path string
		ok                  bool
	}{
		{"own work dir", l.run, "out/a.txt", true},
		{"own child writes its parent's results", l.child, filepath.Join(l.run, "results", "r.jsonl"), true},
		{"write root", l.run, filepath.Join(out, "summary.json"), true},
		{"a read root is not writable", l.run, filepath.Join(l.root, "new.txt"), false},
		{"/tmp", l.run, filepath.Join(os.TempDir(), "flock-escape.txt"), false},
		{"dot-dot", l.run, "../r2/theirs.txt", false},
		{"symlinked parent dir", l.run, "outdir/planted.txt", false},
		{"symlinked parent dir, nested", l.run, "outdir/sub/planted.txt", false},
		// An atomic write replaces the link itself; an append would
		// follow it.
		{"append through a symlink into another run", l.run, "theirs.txt", false},
		{"the database", l.run, filepath.Join(l.data, "flock.db"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes := []bool{false, true}
			if strings.HasPrefix(tt.name, "append ") {
				modes = []bool{true}
			}
			for _, app := range modes {
				r := h.Handle(context.Background(), handlers.Env{WorkDir: tt.workDir}, operations.NewWriteFile(tt.path, "PLANTED\n", app))
				if tt.ok != (r.Error == "") {
					t.Fatalf("write %s (append %v): error %q, want ok=%v", tt.path, app, r.Error, tt.ok)
				}
				if !tt.ok && !strings.Contains(r.Error, "outside the run's work directory") {
					t.Fatalf("error = %q, want it to say the path is outside the work directory", r.Error)
				}
			}
		})
	}
	for _, p := range []string{filepath.Join(l.outside, "planted.txt"), filepath.Join(l.outside, "sub"), filepath.Join(l.root, "new.txt")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s was created (%v)", p, err)
		}
	}
	for p, want := range map[string]string{filepath.Join(l.other, "theirs.txt"): "THEIRS", filepath.Join(l.data, "flock.db"): "DATABASE"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Fatalf("%s was changed to %q", p, b)
		}
	}
}

func TestNewAccessBadRoot(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := NewAccess(AccessOptions{ReadRoots: []string{missing}})
	if err == nil || !strings.Contains(err.Error(), "read_roots: "+missing) {
		t.Fatalf("err = %v, want one naming read_roots and %s", err, missing)
	}
}
