package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/state"
)

// TestGrants: directories granted to one run tree (state.Spec.Grants) are
// read and write roots of that tree only (its children included), never
// of another run; the data directory stays closed through them.
func TestGrants(t *testing.T) {
	l := mkLayout(t)
	out := filepath.Join(l.outside, "results")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	grants := map[string]*state.Grants{"r1": {ReadRoots: []string{l.outside, l.root}, WriteRoots: []string{out}}}
	a, err := NewAccess(AccessOptions{DataDir: l.data, RunsDir: l.runs, Grants: func(id string) *state.Grants { return grants[id] }})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(l.outside, "secret.txt")
	tests := []struct {
		name    string
		workDir string
		path    string
		write   bool
		want    error // nil: allowed
	}{
		{name: "the granted run reads", workDir: l.run, path: secret},
		{name: "its child reads", workDir: l.child, path: secret},
		{name: "another run does not", workDir: l.other, path: secret, want: ErrOutsideRoots},
		{name: "no run (a start check) does not", workDir: "", path: secret, want: ErrOutsideRoots},
		{name: "the data dir stays closed", workDir: l.run, path: filepath.Join(l.data, "flock.db"), want: ErrDataDir},
		{name: "the granted run writes its output", workDir: l.run, path: filepath.Join(out, "r.jsonl"), write: true},
		{name: "its child writes too", workDir: l.child, path: filepath.Join(out, "c.jsonl"), write: true},
		{name: "a read root is not a write root", workDir: l.run, path: filepath.Join(l.outside, "x.txt"), write: true, want: ErrOutsideWorkDir},
		{name: "another run writes nothing there", workDir: l.other, path: filepath.Join(out, "o.jsonl"), write: true, want: ErrOutsideWorkDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.write {
				_, err = a.WriteFile(tt.workDir, tt.path, []byte("x"), false)
			} else {
				var f *os.File
				if f, err = a.Open(tt.workDir, tt.path); err == nil {
					f.Close()
				}
			}
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("got %v, want %v", err, tt.want)
			case err != nil && !strings.Contains(err.Error(), tt.path):
				t.Fatalf("the error does not name the path: %v", err)
			}
		})
	}
}
