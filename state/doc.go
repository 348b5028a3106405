// Package state holds what flock persists about runs and the Store that
// persists it.
//
// # Layout
//
// A run is split so that each step writes only what changed:
//
//   - Run, the head: a small record (status, phase, step, usage, limits,
//     counters, small vars) rewritten by each phase commit;
//   - Spec, the run's immutable inputs (task, settings), written once;
//   - the entry log: append-only, one key per entry;
//   - the operation journal: one request record per operation, written
//     pending when the phase that asked for it commits, and a separate
//     result record written when its result arrives (completing an op does
//     not write its request again);
//   - the event log: append-only, numbered per run, read by SSE clients;
//   - blobs: generate prompts cut into content-defined chunks of messages,
//     each stored once by hash, so that prompts that repeat a run's history
//     cost only what is new.
//
// # bbolt
//
// BoltStore (OpenBolt) is the embedded Store. Each record kind has a
// bucket; per-run logs are keyed run ID + 0x00 + big-endian sequence, so a
// commit puts a few small keys and rewrites only the B+tree pages on their
// paths, whatever the run's history length. Indexes of unfinished runs and
// of children are kept in the same transactions. One committer goroutine
// applies queued commits, as many as are waiting, in one transaction.
//
// # Caveats
//
// Every persisted type carries SchemaVersion (in the head) and is concrete
// JSON. Store implementations must apply a Commit atomically and durably
// before Commit returns, and must group concurrent commits so that many runs
// share one fsync without making a lone commit wait on a timer.
package state
