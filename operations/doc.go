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
// Every kind is declared the same way, with Declare: its wire name, its
// params type and its result type (JSON-tagged structs), and its View, the
// fields workflow files read as results[i].NAME (Result.View), known at
// declaration so that a compiler can check expressions against them. A
// request carries its params in Request.Params and a result its data in
// Result.Data; the KindOf value Declare returns reads and builds them
// typed (Bash.Params(req), Generate.Result(res), Bash.New(p)). The kinds
// of docs/design.md are declared by this package (builtin.go, human.go,
// external.go) because phases emit them; a package that adds a kind (a
// handler package, a Go plugin) declares it with the same call, and the
// registry (Kinds, LookupKind) makes no difference between them.
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
// A request's Params (a result's Data, when set) must be a pointer to the
// type its kind declares: KindOf.New keeps that invariant; code that
// builds a Request or Result by hand must keep it too (the codec refuses
// anything else with ErrPayloadType). Payload types are part of the
// journal: a declared kind's wire name and JSON fields must not change once
// runs have used them.
package operations
