//go:build cgo && (linux || darwin)

package plugin

import (
	"fmt"
	goplugin "plugin"
	"runtime/debug"

	"github.com/flockrun/flock/phases"
)

// Supported reports whether this build can load Go plugins.
const Supported = true

// Load opens the Go plugin at path and lets it register its
// workflows into r. The plugin's main package must export
//
//	var APIVersion = phases.APIVersion // a string variable
//	func Register(r *phases.Registry) error
//
// APIVersion is checked before Register is called. Workflows the plugin
// registers (and any its init functions add to Default) get Source
// "plugin:<path>". A plugin cannot be unloaded: once opened it stays in the
// process, even when a later check fails; a panic or crash in plugin code
// is a panic or crash of the whole server.
func Load(r *phases.Registry, path string) error {
	before := defaultNames()
	p, err := openPlugin(path)
	if err != nil {
		return err
	}
	const versionHint = "declare `var APIVersion = phases.APIVersion` in the plugin's main package"
	sym, err := p.Lookup("APIVersion")
	if err != nil {
		return &Error{File: path, Err: fmt.Errorf("%w: no exported APIVersion variable", ErrSymbol), Hint: versionHint}
	}
	var version string
	switch v := sym.(type) {
	case *string:
		version = *v
	default:
		return &Error{File: path, Err: fmt.Errorf("%w: APIVersion is a %T, want a string variable", ErrSymbol, sym), Hint: versionHint}
	}
	if version != phases.APIVersion {
		return &Error{File: path,
			Err:  fmt.Errorf("%w: the plugin was built against %q, this flock provides %q", ErrVersion, version, phases.APIVersion),
			Hint: rebuildHint(path)}
	}
	const registerHint = "declare `func Register(r *phases.Registry) error` in the plugin's main package"
	sym, err = p.Lookup("Register")
	if err != nil {
		return &Error{File: path, Err: fmt.Errorf("%w: no exported Register function", ErrSymbol), Hint: registerHint}
	}
	register, ok := sym.(func(*phases.Registry) error)
	if !ok {
		return &Error{File: path, Err: fmt.Errorf("%w: Register is a %T, want func(*phases.Registry) error", ErrSymbol, sym), Hint: registerHint}
	}
	return registerPlugin(r, path, register, newSince(before))
}

// openPlugin calls plugin.Open, turning a panic of the plugin's init
// functions into an error.
func openPlugin(path string) (p *goplugin.Plugin, err error) {
	defer func() {
		if x := recover(); x != nil {
			err = &Error{File: path, Err: fmt.Errorf("%w: an init function panicked: %v\n%s", ErrOpen, x, debug.Stack())}
		}
	}()
	p, err = goplugin.Open(path)
	if err != nil {
		return nil, &Error{File: path, Err: fmt.Errorf("%w: %w", ErrOpen, err), Hint: rebuildHint(path)}
	}
	return p, nil
}
