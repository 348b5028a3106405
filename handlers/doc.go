// Package handlers runs operations: one Handler per operation kind.
//
// # Contract
//
// A Handler turns a request into a result. Failures to do the job (bad
// params, a dead endpoint, a crashed interpreter) are reported in
// Result.Error, never by panicking; the executor still recovers panics and
// turns them into error results. Handlers must honour ctx: when it is done
// they stop work and return promptly. The executor may dispatch the same
// operation again after a crash (at-least-once); handlers that can be
// idempotent are (spawn reuses the child run derived from the op ID).
//
// Handlers that hold per-run resources (shells, interpreters) implement
// RunCloser and release them when the run ends.
package handlers
