package phases

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// PluginError is a plugin load failure: the file, the cause and a hint on
// how to fix it.
type PluginError struct {
	File string
	Err  error
	Hint string
}

func (e *PluginError) Error() string {
	msg := fmt.Sprintf("load plugin %s: %v", e.File, e.Err)
	if e.Hint != "" {
		msg += "\n  hint: " + e.Hint
	}
	return msg
}

func (e *PluginError) Unwrap() error { return e.Err }

// LoadPlugins loads every *.so file of dir, in sorted order, into r with
// LoadPlugin. It stops at the first failure. A directory without plugins
// is not an error; a missing directory is.
func LoadPlugins(r *Registry, dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("plugin directory: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.so"))
	if err != nil {
		return fmt.Errorf("plugin directory %s: %w", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := LoadPlugin(r, f); err != nil {
			return err
		}
	}
	return nil
}

// registerPlugin runs a plugin's Register against a staging registry and
// moves what it registered into r with Source "plugin:<path>". Workflows
// the plugin's init functions added to Default while it was opened
// (compiled-in style packages linked into the plugin) are adopted too.
func registerPlugin(r *Registry, path string, register func(*Registry) error, fromInit []*Workflow) (err error) {
	staging := NewRegistry()
	for _, w := range fromInit {
		if err := staging.Register(*w); err != nil {
			return &PluginError{File: path, Err: fmt.Errorf("%w: %w", ErrPluginRegister, err)}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = &PluginError{File: path, Err: fmt.Errorf("%w: Register panicked: %v\n%s", ErrPluginRegister, p, debug.Stack())}
		}
	}()
	if err := register(staging); err != nil {
		return &PluginError{File: path, Err: fmt.Errorf("%w: %w", ErrPluginRegister, err)}
	}
	list := staging.List()
	if len(list) == 0 {
		return &PluginError{File: path, Err: fmt.Errorf("%w: it registered no workflow", ErrPluginRegister)}
	}
	for _, w := range list {
		c := *w
		c.Source = "plugin:" + path
		if err := r.Register(c); err != nil {
			return &PluginError{File: path, Err: fmt.Errorf("%w: %w", ErrPluginRegister, err)}
		}
	}
	return nil
}

// newSince returns the workflows of Default whose names are not in before.
func newSince(before map[string]bool) []*Workflow {
	var out []*Workflow
	for _, w := range Default.List() {
		if !before[w.Name] {
			out = append(out, w)
		}
	}
	return out
}

func defaultNames() map[string]bool {
	m := make(map[string]bool)
	for _, w := range Default.List() {
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
