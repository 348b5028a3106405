// Package phasetest runs golden tests of phase transitions: a case file
// holds a phase's input (settings, task, vars, entries, usage, results of
// the previous operations) and the output expected from it (operations,
// appended entries, vars set, next phase, delay, end). Regenerate the
// expected parts with `go test ./... -update`.
//
// CheckConflicts runs a workflow's settings check on a table of documents,
// each accepted or refused as conflicting with the keys the error names.
package phasetest
