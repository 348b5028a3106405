// Package phasetest runs golden tests of phase transitions: a case file
// holds a phase's input (settings, task, vars, entries, usage, results of
// the previous operations) and the output expected from it (operations,
// appended entries, vars set, next phase, delay, end). Regenerate the
// expected parts with `go test ./... -update`.
package phasetest
