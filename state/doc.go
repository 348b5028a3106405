// Package state holds what flock persists about runs, the Store contract
// that persists it, and the op codec every store shares.
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
//   - chunks: generate prompts (and the prompts of a gateway_wait result's
//     calls) cut into content-defined chunks of messages, each stored once
//     by hash, so that prompts that repeat a run's history cost only what
//     is new.
//
// The op journal's records and chunks are made by the op codec
// (EncodeRequest, DecodeRequest, EncodeResult, ApplyResult; opcodec.go),
// which knows nothing of bbolt: every Store keeps the same records.
//
// Entries, run statuses and end reasons are types of package record, the
// leaf every layer shares; state never imports the phase contract.
//
// # Ownership and fencing
//
// A run is driven by one owner at a time (an executor; a node of a
// cluster). The contract has two parts, and a Store must provide both:
//
//   - Leases (Leaser): Claim gives an owner a run for a time, Renew
//     extends it, Release ends it. While a lease is unexpired no other
//     owner can claim the run (ErrLeaseHeld); a holder whose lease lapsed
//     and was claimed by another owner cannot renew it (ErrLeaseLost) and
//     must stop driving the run.
//   - Fencing: the head carries a Revision, bumped by every commit that
//     writes it. A commit with ExpectRevision applies only against that
//     revision, checked and written in one atomic step; otherwise it fails
//     with ErrFenced and writes nothing. An owner passes the revision it
//     last wrote on every commit, so a slow owner that lost its lease
//     cannot write once the new owner has committed; whichever commits
//     first wins, and the loser stops (and, if it still holds the lease,
//     reloads the run before writing again).
//
// Leases alone cannot guard writes (a paused process wakes up believing it
// still holds one); the revision can. The bbolt store (package state/bolt) keeps leases in memory
// (the file is locked by one process, and a restarted process holds
// none) and reads the stored revision from the head's first bytes inside
// the commit transaction. The JetStream store (package state/jetstream)
// keeps leases in a KV bucket with revision-checked updates, and maps the
// fence to a revision-checked head update after expected-sequence
// appends; the cluster maps which node claims a run to work-queue claims
// with an ack deadline renewed by in-progress acks.
//
// The contract's behaviours are tested once for every Store, by the
// suite of package state/storetest.
//
// # Stores
//
// The stores are packages of their own, so that naming the contract links
// neither: state/bolt, the embedded store of one file, and
// state/jetstream, the store of a cluster.
//
// # Caveats
//
// Every persisted type carries SchemaVersion (in the head) and is concrete
// JSON. Store implementations must apply a Commit atomically and durably
// before Commit returns, and must group concurrent commits so that many runs
// share one fsync without making a lone commit wait on a timer (the full
// list is on Store). Heads written before revisions existed read as
// revision 0 and take unfenced commits until their next write gives them
// revision 1.
package state
