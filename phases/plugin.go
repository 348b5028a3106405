//go:build cgo && (linux || darwin)

package phases

import (
	"fmt"
	"plugin"
	"runtime/debug"
)

// PluginsSupported reports whether this build can load Go plugins.
const PluginsSupported = true

// LoadPlugin opens the Go plugin at path and lets it register its
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
func LoadPlugin(r *Registry, path string) error {
	before := defaultNames()
	p, err := openPlugin(path)
	if err != nil {
		return err
	}
	const versionHint = "declare `var APIVersion = phases.APIVersion` in the plugin's main package"
	sym, err := p.Lookup("APIVersion")
	if err != nil {
		return &PluginError{File: path, Err: fmt.Errorf("%w: no exported APIVersion variable", ErrPluginSymbol), Hint: versionHint}
	}
	var version string
	switch v := sym.(type) {
	case *string:
		version = *v
	default:
		return &PluginError{File: path, Err: fmt.Errorf("%w: APIVersion is a %T, want a string variable", ErrPluginSymbol, sym), Hint: versionHint}
	}
	if version != APIVersion {
		return &PluginError{File: path,
			Err:  fmt.Errorf("%w: the plugin was built against %q, this flock provides %q", ErrPluginVersion, version, APIVersion),
			Hint: rebuildHint(path)}
	}
	const registerHint = "declare `func Register(r *phases.Registry) error` in the plugin's main package"
	sym, err = p.Lookup("Register")
	if err != nil {
		return &PluginError{File: path, Err: fmt.Errorf("%w: no exported Register function", ErrPluginSymbol), Hint: registerHint}
	}
	register, ok := sym.(func(*Registry) error)
	if !ok {
		return &PluginError{File: path, Err: fmt.Errorf("%w: Register is a %T, want func(*phases.Registry) error", ErrPluginSymbol, sym), Hint: registerHint}
	}
	return registerPlugin(r, path, register, newSince(before))
}

// openPlugin calls plugin.Open, turning a panic of the plugin's init
// functions into an error.
func openPlugin(path string) (p *plugin.Plugin, err error) {
	defer func() {
		if x := recover(); x != nil {
			err = &PluginError{File: path, Err: fmt.Errorf("%w: an init function panicked: %v\n%s", ErrPluginOpen, x, debug.Stack())}
		}
	}()
	p, err = plugin.Open(path)
	if err != nil {
		return nil, &PluginError{File: path, Err: fmt.Errorf("%w: %w", ErrPluginOpen, err), Hint: rebuildHint(path)}
	}
	return p, nil
}
