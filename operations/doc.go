// Package operations defines the requests a phase can make and the results the
// executor hands back. It holds data only: every type here is a concrete,
// JSON-tagged struct that is journaled verbatim in the run's operation log.
//
// # Wire format
//
// A request is {"type": KIND, "params": {...}, "meta": {...}} and a result is
// {"type": KIND, "error": "...", "data": {...}}. The kind names and the field
// names of every params/data struct are part of flock's public contract
// (DESIGN §6); renaming one breaks stored runs and clients.
//
// # Caveats
//
// Exactly one of the kind-specific pointers of a Request or Result is set, the
// one matching Kind. Constructors (NewBash, NewGenerate, ...) keep that
// invariant; code that builds a Request by hand must keep it too.
package operations
