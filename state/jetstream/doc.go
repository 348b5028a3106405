// Package jetstream is a state.Store on NATS JetStream, for flock nodes
// that share their runs (docs/design.md, "Stores"): any node reads every
// run, one node at a time drives each, and a run whose node died is
// resumed by another from what was acknowledged.
//
// Open binds to a server or cluster through a jetstream.JetStream the
// caller owns (import this package under another name, e.g. jsstore, next
// to nats.go's own jetstream package):
//
//	nc, _ := nats.Connect(urls)
//	js, _ := jetstream.New(nc)
//	st, err := jsstore.Open(ctx, js, jsstore.Options{Replicas: 3})
//
// The store passes the contract suite of package state/storetest, as the
// bbolt store does, on one server and on a three-node cluster.
//
// # Layout
//
// With the default prefix "flock":
//
//   - stream FLOCK_RUNS holds each run's append-only logs, one subject
//     per log: flock.run.<key>.spec, .entry, .op (op request records),
//     .result (op result records) and .event. A commit appends at most one
//     message per log, holding all of that log's records of the commit
//     (a JSON array; entries and events carry their first number in the
//     Flock-First header). The stream also holds the op codec's chunks,
//     one subject per chunk: flock.chunk.<hex key>, written once.
//   - KV bucket FLOCK_HEADS holds, per run, the envelope: the head (with
//     its Revision) and, per log, the stream sequence of its last
//     committed message (the tip), the entry and event counts, and marks
//     mapping item numbers to stream sequences so that reading a log's
//     tail does not scan its start.
//   - KV bucket FLOCK_LEASES holds, per run, the lease: owner and expiry.
//   - stream FLOCK_INDEX indexes runs by subject, one empty message each:
//     flock.idx.u.<key> for a run that may be unfinished and
//     flock.idx.c.<parent key>.<key> for a child. An entry is put before
//     the head write that needs it and removed (its subject purged) after
//     the head write that ends it, so the index is a superset of the
//     truth, which readers check against each candidate's head.
//   - object store FLOCK_BLOBS holds payloads over Options.BlobThreshold
//     (256 KiB, below NATS's 1 MiB max_payload): a log message's payload
//     is then replaced by the name of its object (Flock-Blob header), and
//     a chunk that large is stored as object chunk-<hex key>.
//
// <key> is the run ID when it is made of letters, digits, '-' and '_'
// (as flock's IDs are), otherwise "=" and its base64url encoding.
//
// # Commit: appends, then the head
//
// A Commit is applied by one revision-checked write of the run's
// envelope; the log appends come first and are invisible until then:
//
//  1. Read the envelope (the copy this store last wrote for the run, or
//     the bucket leader's) and validate the commit against it exactly as
//     the bbolt store does (ExpectRevision against the head's Revision,
//     entries continuing the count, spec once), numbering events.
//  2. Put the chunks the op records refer to (if absent), then append one
//     message per log, in parallel. Each append is fenced with
//     Nats-Expected-Last-Subject-Sequence = the log's tip in the envelope
//     read, and carries a Nats-Msg-Id made of the run, the log, the first
//     item ((step, index) for ops, the number for entries and events),
//     the envelope revision and the commit's nonce, so that a resent
//     publish is deduplicated by the server (within the stream's
//     two-minute window) rather than appended twice; where the server
//     checks the fence first, the failed resend finds the log's last
//     message carrying its own nonce (Flock-Commit) and takes it as
//     appended. Each message carries the envelope revision it was based
//     on (Flock-Base).
//  3. Write the new envelope (new head, new tips) with kv.Update at the
//     revision read. This is the commit point: it succeeds for exactly one
//     of any number of commits based on the same envelope.
//
// A crash, a lost race or a fence failure between 2 and 3 leaves messages
// past their logs' tips: readers never look past a tip, so the commit
// reads as not applied. The next commit of the run that appends to such a
// log finds its fence failing (the log's last sequence is past the tip)
// and clears the way: a message based on an older revision than the
// current envelope's belongs to a commit that can no longer apply and is
// deleted; a message based on the current revision belongs to a commit
// still in flight (or dead just before its step 3), which gets
// Options.OrphanWait to finish, after which the envelope is rewritten
// unchanged, bumping its revision, so that the stalled commit can no
// longer apply, and its messages are then deleted as above. Every message
// at or before a tip is therefore committed, and a log reads in order up
// to its tip.
//
// Two commits on the same envelope that each appended to a log the other
// needs would wait for each other: the one with the greater nonce deletes
// its appends (never visible) and waits like the other. A head write that
// got no answer (a timeout) is settled before Commit returns: applied if
// the leader's envelope carries the commit's nonce, otherwise fenced off
// by rewriting that envelope unchanged, so the caller always learns the
// outcome.
//
// Fencing of owners follows: a node that lost its lease and still
// commits passes the ExpectRevision it last wrote; once the new owner has
// written the head, that check fails (state.ErrFenced) before anything is
// appended, and if the two race, step 3 lets one through.
//
// An error is never decided on a cached envelope: a commit that fails
// validation against the cache reads the leader's envelope and validates
// again.
//
// # Reads
//
// Every read of the Store starts from the leader's envelope (a message get
// of the API, which the stream leader answers, not a replica that may lag)
// and reads log messages up to the tips with leader gets. Reads after a
// takeover therefore see every acknowledged commit. The runs and heads
// streams (ShardsFor(Replicas) shards of each, by run id) allow direct gets, which any
// current replica answers: FailoverReads, which the HTTP API of a cluster
// node reads with, asks a replica when a leader does not answer within
// Options.FailoverAfter (a stream electing a new leader), and asks again
// when the replica lacks a message at or before a committed tip. Every
// stream is declared with its direct-gets setting from the start, never
// turned on and off (a client bound in between would keep reading the
// wrong way). The leases bucket and the object store never allow them. A log is read message
// by message from the mark nearest the requested position: Entries and
// Events of a run's tail cost a few gets; Ops reads the run's whole op
// log; StepOps of the current step starts at that step's first message.
//
// Unfinished, Children, and Runs filtered by parent or by a running or
// paused status list their candidates from the index stream (stream info
// with a subject filter, answered by its leader) and read each
// candidate's head from the leader, 16 at a time: their cost follows the
// runs listed, not the runs stored. Runs with other filters reads every
// head (a KV watch of the heads bucket, whose consumer JetStream may place
// on a replica that lags: the watch reads on until it has seen the last
// message the leader reports, a later value of a key replacing an earlier
// one) and filters in memory: fine for thousands of runs, not for millions.
// A failover reader whose heads stream has no leader (stream info not
// answered within FailoverAfter, or no watch) reads every head from a
// replica instead, with batched direct gets of the bucket's messages in
// order (one per key), which may lack the last writes.
// CountRuns (GET /stats/runs) reads every head the same way and decodes
// only its status.
//
// # Leases
//
// Claim, Renew and Release read the run's lease record and write it back
// with kv.Create / kv.Update at the revision read, so that of two owners
// racing for a run one wins (state.ErrLeaseHeld for the other). Renew and
// Release of a lease this store wrote skip the read: they write at the
// revision their last write made, which holds only if nobody wrote the
// lease since, and read it only when that write finds another. Expiry
// stamps are written by the claiming node's clock (Options.Now): nodes'
// clocks must agree to well within a lease's duration. The work-queue
// that decides which node claims which run is the cluster's, not the
// store's.
//
// # Durability
//
// Commit returns nil only once every append and the envelope write were
// acknowledged; JetStream acknowledges a write once a quorum of the
// stream's replicas stored it. That is durable only if the servers fsync
// every write: run them with `sync_interval: always` in the jetstream
// block (the default syncs every two minutes, and Jepsen's analysis of
// NATS 2.12.1 found acknowledged writes lost under it). Use Replicas 3 in
// a cluster of three or more nodes so that a node's loss loses nothing;
// Replicas 1 suits a single server.
//
// # Caveats
//
// Commits to one run must not be retried blindly by several callers at
// once: the store resolves races (one applies), but a stalled commit is
// fenced off only after Options.OrphanWait. Close does not close the
// connection. Deleted (dead) messages leave gaps in the stream's
// sequence, which nothing relies on. A head is one KV value, so it must
// fit the server's max_payload (1 MiB by default) with the envelope:
// keep Vars small, as the Run type asks. A single server (Replicas 1)
// syncs each message on its own: a transition costs one fsync per message
// (its log appends and its head; 2.4 per transition of the engine's
// benchmark), and throughput is bound by the disk. Three servers (Replicas
// 3) sync each Raft append once for all the messages in it (0.6–0.8 per
// transition across the three) and are bound by the servers' CPU time
// instead (docs/benchmarks.md, issues 14 and 28). BenchmarkPublishCeiling
// measures what the servers alone do for a layout: with every write
// synced, one server stores 7,000–9,000 fenced messages a second on
// the project's machine however many streams share its disk, which
// bounds any R1 layout (a commit is at least one fenced message; bbolt
// commits many runs' transitions in one transaction).
package jetstream
