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
//
// # Registry and lifecycle
//
// A handler package registers itself from init with Register: an ID
// ("flock.bash"), the kinds it serves and a side-effect-free New.
// Register panics on an empty or duplicate ID or kind; Registered lists
// the packages sorted by ID. A server (package app) imports the packages
// it wants and hands Registered() to the executor, which builds a Set and
// drives each handler's optional lifecycle, Caddy style:
//
//   - Provisioner: Provision(ctx, Deps) once at start, with the
//     dependencies a handler may use: the server's configuration (mode,
//     data directory, read roots), the logger, the file opener, and the
//     ports below.
//   - RunValidator: ValidateRun(ctx, RunCheck) for every run about to start;
//     an error refuses the run (generate's API keys, bash's isolation).
//   - RunPreparer: PrepareRun(ctx, RunCheck) after every ValidateRun
//     passed; it returns the settings document to journal (the sandbox
//     handler fills in the schemas of the sandbox tools a run offers).
//   - Closer: Close() once at stop, and after a failed Provision, so
//     it must tolerate a handler never set up.
//
// # Ports
//
// Package handlers links none of the store, the sandbox service or the
// model gateway (TestImportRules): what a handler may ask of the server
// is declared here as a port, and the server wires the service in. Journal
// reads a run's head and operations (the executor adapts its store; the
// generate handler's replay and scripted cursors, the external handler's
// recorded answers); Runs starts and waits for child runs (the executor;
// spawn, external); Sandbox is the sandbox service the server hosts
// (app.Hosted; the sandbox operation, whose sandbox_url client is the
// same port over HTTP); Ops runs an operation of any kind. A service only
// one handler uses is found among Deps.Services by the type the handler
// asks for (Service): the external handler's *gateway.Gateway.
//
// # Adding an operation kind
//
// A new kind is one package plus one import: the package declares the
// kind's payload types, effects and result fields with
// operations.Declare (the call that declares the built-in kinds) and
// registers its handler with Register, and the server imports it
// (app/handlers.go). The executor applies a result's effects
// (operations.Effector) and the declarative compiler reads its fields
// (operations.KindInfo.View) without code for the kind; see
// handlers/internal/echokind, which a test runs end to end.
package handlers
