// Package operations defines the requests a phase can make and the results the
// executor hands back. It holds data only: every type here is a concrete,
// JSON-tagged struct that is journaled verbatim in the run's operation log.
//
// # Wire format
//
// A request is {"type": KIND, "params": {...}, "meta": {...}} and a result is
// {"type": KIND, "error": "...", "data": {...}}. The kind names and the field
// names of every params/data struct are part of flock's public contract
// (docs/design.md, "Operations and handlers"); renaming one breaks stored runs and clients.
//
// # Kinds
//
// Kinds are a registry (RegisterKind, Kinds sorted, LookupKind). The
// built-in kinds (docs/design.md) have a typed field in Request and Result and
// are registered by this package; a kind added by a handler package is
// registered from its init with constructors for its payloads, which
// travel in Request.Ext and Result.Ext, typed. Each kind may declare a
// View: the fields workflow files read as results[i].NAME (Result.View),
// known at registration so that a compiler can check expressions against
// them.
//
// The human and intervention kinds (human.go) are answered by a person
// through the API, not run: a phase asks a question {question, choices?,
// scale?} or shows an action for approval, and the answer is the result.
//
// # Effects
//
// A result declares what it changes in its run (Effects): usage (actions,
// tokens, cost), entries to record and the run's result. A payload that
// implements Effector has effects; the executor applies them with no code
// for any kind. Bash, python and submit count as actions, generate and
// spawn add usage, score records a "score" entry (read back by
// score_log), log, action and observation record their request, and an
// accepted submission becomes the run's result.
//
// # Caveats
//
// Exactly one of the kind-specific pointers of a Request or Result (or its
// Ext) is set, the one matching Kind. Constructors (NewBash, NewGenerate,
// ...) keep that invariant; code that builds a Request by hand must keep it
// too. Payload types are part of the journal: a registered kind's wire
// name and JSON fields must not change once runs have used them.
package operations
