// Package phases defines what a phase is, what it receives and returns, and
// the registry of workflows (graphs of phases).
//
// # Phases
//
// A Phase is a pure function of its Input: the run's identity and settings,
// the current time (injected by the executor), a read-only view of the run's
// state and the results of the operations the previous phase asked for, in
// request order. It returns operations to run, entries to append, small vars
// to set and the name of the next phase ("" ends the run).
//
// A phase that reads its workflow's settings is declared through Typed,
// which hands it the parsed settings, parsing each distinct settings
// document once rather than on every call.
//
// # Caveats
//
// Phases must be deterministic: no clock, randomness, I/O, goroutines or
// dependence on map iteration order. The executor may call a phase again with
// the same input after a crash, and golden tests compare outputs byte for
// byte. Phase packages import only phases, operations, record,
// phases/settings (the settings decoder) and the standard library. This package itself imports no cgo and no plugin machinery:
// Go plugins implement the contract declared here (APIVersion and
// func Register(*Registry) error) and package phases/plugin loads them.
package phases
