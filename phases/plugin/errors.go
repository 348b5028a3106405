package plugin

import "errors"

// Errors of plugin loading; an *Error wraps one of them.
var (
	// ErrUnsupported is returned by builds that cannot load Go
	// plugins (no cgo, or not linux/darwin).
	ErrUnsupported = errors.New("this build cannot load plugins (needs cgo on linux or darwin)")
	// ErrOpen is returned when the Go runtime refuses a plugin file,
	// typically because it was built with another toolchain, other build
	// flags or other versions of shared packages.
	ErrOpen = errors.New("cannot open plugin")
	// ErrVersion is returned when a plugin's APIVersion differs from
	// this flock's phases.APIVersion.
	ErrVersion = errors.New("plugin API version mismatch")
	// ErrSymbol is returned when a plugin lacks APIVersion or Register,
	// or exports them with the wrong type.
	ErrSymbol = errors.New("plugin symbol missing or of the wrong type")
	// ErrRegister is returned when a plugin's Register fails or
	// registers nothing usable.
	ErrRegister = errors.New("plugin registration failed")
)
