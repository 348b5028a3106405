package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/flockrun/flock/phases"
)

// Error is a plugin load failure: the file, the cause and a hint on
// how to fix it.
type Error struct {
	File string
	Err  error
	Hint string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("load plugin %s: %v", e.File, e.Err)
	if e.Hint != "" {
		msg += "\n  hint: " + e.Hint
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// LoadDir loads every *.so file of dir, in sorted order, into r with
// Load. It stops at the first failure. A directory without plugins
// is not an error; a missing directory is.
func LoadDir(r *phases.Registry, dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("plugin directory: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.so"))
	if err != nil {
		return fmt.Errorf("plugin directory %s: %w", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := Load(r, f); err != nil {
			return err
		}
	}
	return nil
}

// registerPlugin runs a plugin's Register against a staging registry and
// moves what it registered into r with Source "plugin:<path>". Workflows
// the plugin's init functions added to Default while it was opened
// (compiled-in style packages linked into the plugin) are adopted too.
func registerPlugin(r *phases.Registry, path string, register func(*phases.Registry) error, fromInit []*phases.Workflow) (err error) {
	staging := phases.NewRegistry()
	for _, w := range fromInit {
		if err := staging.Register(*w); err != nil {
			return &Error{File: path, Err: fmt.Errorf("%w: %w", ErrRegister, err)}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = &Error{File: path, Err: fmt.Errorf("%w: Register panicked: %v\n%s", ErrRegister, p, debug.Stack())}
		}
	}()
	if err := register(staging); err != nil {
		return &Error{File: path, Err: fmt.Errorf("%w: %w", ErrRegister, err)}
	}
	list := staging.List()
	if len(list) == 0 {
		return &Error{File: path, Err: fmt.Errorf("%w: it registered no workflow", ErrRegister)}
	}
	for _, w := range list {
		c := *w
		c.Source = "plugin:" + path
		if err := r.Register(c); err != nil {
			return &Error{File: path, Err: fmt.Errorf("%w: %w", ErrRegister, err)}
		}
	}
	return nil
}

// newSince returns the workflows of Default whose names are not in before.
func newSince(before map[string]bool) []*phases.Workflow {
	var out []*phases.Workflow
	for _, w := range phases.Default.List() {
		if !before[w.Name] {
			out = append(out, w)
		}
	}
	return out
}

func defaultNames() map[string]bool {
	m := make(map[string]bool)
	for _, w := range phases.Default.List() {
		m[w.Name] = true
	}
	return m
}

// rebuildHint explains how to rebuild a plugin so this binary accepts it.
func rebuildHint(path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rebuild the plugin against this flock with `go build -buildmode=plugin -o %s ./path/to/plugin` ", path)
	fmt.Fprintf(&b, "inside flock's module, with the toolchain of go.mod's toolchain line (this flock was built with %s", runtime.Version())
	if flags := buildFlags(); flags != "" {
		fmt.Fprintf(&b, " and %s", flags)
	}
	b.WriteString(") and the same flags (-trimpath, -race, -tags, GOFLAGS) and module versions; ")
	exe, err := os.Executable()
	if err != nil {
		exe = "flock"
	}
	fmt.Fprintf(&b, "compare `go version -m %s` with `go version -m %s`", exe, path)
	return b.String()
}

// buildFlags lists the host's build settings that a plugin must match.
func buildFlags() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var parts []string
	for _, s := range bi.Settings {
		switch s.Key {
		case "-trimpath", "-race", "-tags", "-gcflags", "-asmflags", "-msan", "-asan", "CGO_ENABLED", "GOEXPERIMENT":
			if s.Value != "" && s.Value != "false" {
				parts = append(parts, s.Key+"="+s.Value)
			}
		}
	}
	return strings.Join(parts, " ")
}
