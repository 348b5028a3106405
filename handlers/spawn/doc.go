// Package spawn runs the spawn operation: it starts a child run and
// completes when the child ends. It starts runs through handlers.Runs,
// given to Provision by the executor, and does not import the executor.
//
// # Result
//
// The result carries the child's end state and its work directory
// (operations.SpawnResult.WorkDir, children/NAME under the parent's), so
// that a parent reads the child's files without knowing where spawn put
// them.
//
// # Idempotency
//
// The child's id is derived from the spawning op's id, so when the executor
// dispatches a spawn again after a crash, the handler finds the child it
// started before (which resumed on its own) and waits for it instead of
// starting a second one.
//
// # Cancellation
//
// Cancelling the parent cancels its children (the executor does that). If
// the op's context ends for another reason (the parent's time limit), the
// run starter (handlers.Runs.WaitChild) cancels the child. When the executor is stopping, the child is
// left running: both resume after the restart. Pausing the parent pauses
// its children (the executor does that) and leaves them be here.
package spawn
