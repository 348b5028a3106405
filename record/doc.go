// Package record holds the types every layer of flock shares: a run's log
// entry and its encoding, run statuses, the end reasons the engine sets,
// the entry types it writes, and the types and statuses of a run's events
// with the one test of a stream's final event (FinalEvent).
//
// # Overview
//
// record is a leaf: it imports only the standard library, so the phase
// contract (phases), the store (state), the engine (workflows) and the
// HTTP layer can all use it without importing each other. phases keeps
// Entry as an alias (phases.Entry = record.Entry) so phase code reads as
// before; state uses record directly and never imports phases.
//
// # Caveats
//
// The values here are persisted and sent over the wire: a status, reason,
// entry type or event type, once written, must keep its spelling.
package record
