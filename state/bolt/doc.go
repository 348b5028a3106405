// Package bolt is flock's embedded store: the state.Store contract on
// one bbolt file (DATA/flock.db), which the server owns alone.
//
// # Layout
//
// Store (Open) is the embedded state.Store. Each record kind has a
// bucket; per-run logs are keyed run ID + 0x00 + big-endian sequence, so a
// commit puts a few small keys and rewrites only the B+tree pages on their
// paths, whatever the run's history length. Indexes of unfinished runs and
// of children are kept in the same transactions. One committer goroutine
// applies queued commits, as many as are waiting, in one transaction.
//
// # Damage
//
// bbolt trusts its pages: a truncated or garbled file makes it panic or
// fault, partly in goroutines of its own where nothing can recover. So
// Open first walks the file's B+tree with plain reads (verify.go:
// meta checksums, file length against the last transaction, and for every
// reachable page its id, type, bounds and key order) and refuses a damaged
// file with an error wrapping state.ErrCorrupt that names the file and the
// first damage; this walk reads every reachable page once (about 0.2 s
// for 10,000 runs, docs/benchmarks.md). Reads and commits run with
// debug.SetPanicOnFault and recover, so a page damaged later is an
// state.ErrCorrupt error, not a crash; Unfinished returns the readable heads
// along with the error naming the others.
//
// CheckFile checks a file read-only (structure plus flock's invariants:
// heads decode, specs exist, entries 1..Entries and the current step's
// ops are present, the unfinished index matches the heads). RecoverFile
// copies every readable record of a damaged file into a new one, using
// the same walk rather than bbolt, and reports what was lost per run.
package bolt
