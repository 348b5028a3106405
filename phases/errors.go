package phases

import "errors"

var (
	// ErrBadWorkflow is returned when a workflow declaration is invalid.
	ErrBadWorkflow = errors.New("invalid workflow")
	// ErrDuplicate is returned when a workflow name is registered twice.
	ErrDuplicate = errors.New("duplicate workflow")

	// Errors of plugin loading; a *PluginError wraps one of them.

	// ErrPluginsUnsupported is returned by builds that cannot load Go
	// plugins (no cgo, or not linux/darwin).
	ErrPluginsUnsupported = errors.New("this build cannot load plugins (needs cgo on linux or darwin)")
	// ErrPluginOpen is returned when the Go runtime refuses a plugin file,
	// typically because it was built with another toolchain, other build
	// flags or other versions of shared packages.
	ErrPluginOpen = errors.New("cannot open plugin")
	// ErrPluginVersion is returned when a plugin's APIVersion differs from
	// this flock's phases.APIVersion.
	ErrPluginVersion = errors.New("plugin API version mismatch")
	// ErrPluginSymbol is returned when a plugin lacks APIVersion or Register,
	// or exports them with the wrong type.
	ErrPluginSymbol = errors.New("plugin symbol missing or of the wrong type")
	// ErrPluginRegister is returned when a plugin's Register fails or
	// registers nothing usable.
	ErrPluginRegister = errors.New("plugin registration failed")
)
