// Package plugin loads Go plugins (*.so files built with
// -buildmode=plugin) that register workflows into a phases.Registry. It is
// the only part of flock that imports the standard library's plugin
// package (and with it cgo); the contract a plugin implements —
// phases.APIVersion and func Register(*phases.Registry) error — stays in
// package phases, so a plugin imports phases and never this package.
//
// # Loading
//
// LoadDir opens every *.so of a directory in name order with Load, which
// checks the plugin's exported APIVersion against phases.APIVersion before
// calling its Register on a staging registry; what it registers is moved
// into the target registry with Source "plugin:<path>". Every failure is
// an *Error naming the file, wrapping one of the sentinels of errors.go,
// with a hint on how to rebuild the plugin.
//
// # Caveats
//
// Loading works only in builds with cgo on linux or darwin (Supported);
// elsewhere Load returns ErrUnsupported. A plugin cannot be unloaded: once
// opened it stays in the process even when a later check fails, and a
// panic or crash in plugin code is one of the whole server.
package plugin
