//go:build !(cgo && (linux || darwin))

package plugin

import "github.com/flockrun/flock/phases"

// Supported reports whether this build can load Go plugins.
const Supported = false

// Load always fails: Go plugins need cgo on linux or darwin.
func Load(r *phases.Registry, path string) error {
	return &Error{File: path, Err: ErrUnsupported,
		Hint: "build flock with CGO_ENABLED=1 on linux or darwin, or compile the phases in (see docs/writing-phases.md)"}
}
