// Package sandbox is flock's sandbox service: AgentFlow-compatible sessions,
// a registry of tools grouped into backends, and the envelope and codes of
// AgentFlow's wire (described in docs/sandbox.md). It holds no
// HTTP; server/ mounts the routes under /api/v1 and `flock sandbox` runs the
// service alone.
//
// # Backends
//
// A backend is one module: a resource type with sessions (bash, code, browser,
// mcp) or an API group of stateless tools (text2sql, rag, doc, web). Each lives
// in its own package under sandbox/ and registers itself from init():
//
//	func init() {
//		sandbox.RegisterBackend(sandbox.BackendInfo{
//			Name: "text2sql",
//			New:  func() sandbox.Backend { return new(Backend) },
//		})
//	}
//
// RegisterBackend panics on an empty or duplicate name; Backends lists the
// registered names sorted. New must be free of side effects; set-up goes in
// the optional Provision (config section, data dir, logger), global loading in
// WarmUp, per-session state in Initialize, teardown in Cleanup and Shutdown.
// Provision decodes its section into its own tagged struct with
// Env.Decode (package phases/settings: defaults, bounds and enums as tags,
// Normalize and Validate methods), durations as Seconds and counts as
// Count, which refuse a value out of range (one that rounds to a zero
// duration, one that overflows) with the setting's path, so that nothing
// checked at load fails later; a key the struct does not name is a warning
// with the closest known key (Service.Warnings), or an error with
// Env.DecodeStrict. Optional capabilities are found by type
// assertion (Provisioner, WarmUpper, Initializer, Cleaner, Shutdowner,
// Forker). A Forker's sessions can be forked (Service.ForkSession, POST
// /api/v1/session/fork, flock's own route): bash and code copy the
// source's workspace into the new session with CopyWorkspace, which keeps
// the holes of sparse files (SEEK_DATA/SEEK_HOLE, a reflink where the file
// system has them). A source whose workspace takes more disk than
// server.max_workspace_bytes (2 GiB) is not forked (4001, nothing
// created), and a copy stops at that many bytes of data.
//
// # Where backends are linked in
//
// Every backend package is blank-imported by exactly one place, the package
// sandbox/all (sandbox/all/all.go). A backend engineer adds one line there:
//
//	import _ "github.com/flockrun/flock/sandbox/text2sql"
//
// app/ imports sandbox/all, so `flock serve --sandbox-config` and
// `flock sandbox` see every backend. Tests of a single backend package may
// import only that package and sandbox.
//
// # Tools and calls
//
// A Tool's Name is its full name "resource:tool". Its Parameters are a JSON
// Schema object; the core answers a call missing a required parameter with
// code 4003 (HTTP 400) before Run is called. Run gets a Call whose ctx carries
// the call's deadline; it returns the tool's data, a *Error with an AgentFlow
// code, or any other error (answered 5000). Stateless tools run without a
// session (Call.Session is nil); stateful tools run on the caller's session
// for their resource type, or on a temporary session destroyed after the
// call. Calls on one session are serialised by the core; a worker (caller
// and worker_id) runs at most server.max_worker_parallel calls at once and
// a parallel batch at most server.max_batch_parallel actions at a time,
// the others waiting their turn.
//
// What a tool echoes of its call (AgentFlow's data.inputs) goes through
// Echo, which bounds it (strings cut at 1 KiB, lists and objects at 32
// items, about 8 KiB in all), so that an answer is never much larger than
// what the tool itself returns.
//
// Backends keep their files inside Session.Workspace and Env.DataDir and
// sanitize any client-sent name before it touches a path (the code
// backend's read, write, glob, grep and edit go through an os.Root on the
// workspace). Secrets come from the environment or ${VAR} expansion and
// never reach logs, errors or envelopes.
//
// # Network reach
//
// A backend that connects where a client says (web, browser) reaches
// public addresses only unless its config says otherwise: it dials through
// internal/netguard, which refuses loopback, private, link-local
// (cloud metadata), unspecified, multicast and other non-public addresses
// as the socket connects, redirects included, so that a client cannot turn
// the sandbox against flock's own API or the host's network. The refusal
// is 4001 naming the host and why. The config section's allow_hosts (host
// names, IP addresses, CIDR prefixes) and allow_private: true opt in.
//
// # Auth token
//
// With an auth token (flock serve/sandbox --auth-token-file), every route
// needs it as a bearer token. A flock run that uses such a sandbox
// remotely names the environment variable holding it in sandbox_token_env,
// among those the operator lists (package handlers/sandboxop).
//
// # Isolation of sessions' programs
//
// Backends that start programs per session (bash, code) resolve their
// isolation with Env.Isolation: the section's "isolation" ("bwrap", or
// "none" for the operator to opt out) over the service's policy
// (Options.Isolation, flock's --isolation; by default bwrap wherever it
// can run), and hide Env.Hidden (the service's data directory, so other
// sessions' workspaces, and flock's data directory under flock serve)
// from them. See package isolation.
package sandbox
