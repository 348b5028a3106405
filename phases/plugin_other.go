//go:build !(cgo && (linux || darwin))

package phases

// PluginsSupported reports whether this build can load Go plugins.
const PluginsSupported = false

// LoadPlugin always fails: Go plugins need cgo on linux or darwin.
func LoadPlugin(r *Registry, path string) error {
	return &PluginError{File: path, Err: ErrPluginsUnsupported,
		Hint: "build flock with CGO_ENABLED=1 on linux or darwin, or compile the phases in (see docs/writing-phases.md)"}
}
