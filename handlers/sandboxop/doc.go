// Package sandboxop serves the operation kind "sandbox": one call of a
// sandbox tool, AgentFlow style,
//
//	{"action": "text2sql:execute", "params": {...}, "timeout_s": 30}
//
// answered with the envelope's code, message, data and meta
// (operations.SandboxResult). A call that got an envelope counts as an
// action whatever its code; a tool failure is the envelope's code, not an
// operation error. Operation errors are kept for what is not the tool's
// answer: bad params, no sandbox, an unreachable sandbox_url.
//
// # Where calls run
//
// With sandbox_url in the run's settings, over HTTP on that flock or
// AgentFlow sandbox (POST /api/v1/execute, worker_id = the run id).
// Otherwise in-process on the sandbox service the server hosts (flock serve
// --sandbox-config; app.WithSandbox hands it to Provision). Both give the
// same envelope: the in-process one goes through JSON as the wire's does.
// ValidateRun refuses a run whose settings offer a sandbox tool (a
// "resource:tool" name in the top-level tools list, an agent's) when there
// is neither, and a sandbox_url that is not http(s) or carries credentials.
//
// # Where sandbox_url may point
//
// sandbox_url passes the network guard of the web tools (internal/netguard):
// a host that is, or resolves to, a loopback, private, link-local,
// unspecified or other non-public address is refused at start
// (ErrURLNotAllowed, naming the server settings that would allow it), and
// every connection to the sandbox is checked again as it is made
// (redirects, a name that resolves elsewhere later). The operator allows
// hosts with the server settings sandbox_url_allow_hosts (names, IPs, CIDR
// prefixes) and sandbox_url_allow_private. Without this a client could
// point the server, and a token of its environment, at any host.
//
// # A sandbox with an auth token
//
// A remote flock sandbox started with an auth token refuses calls without
// it. sandbox_token_env names the environment variable of this server that
// holds the token (as models name api_key_env); the settings, which are
// journaled, never hold it. Only a variable the operator lists in the
// server setting sandbox_token_envs may be named: any other is refused at
// start (ErrTokenEnvNotAllowed) before the environment is looked at, so
// the answer is the same whether it is set or not. A listed variable is
// read at each call and sent only as "Authorization: Bearer <token>":
// never in the store, events, logs or errors (an answer quoted in an error
// has it replaced by "[redacted]"). A listed variable that is not set
// refuses the run at start (ErrNoToken); a 401 or 403 of the sandbox fails
// the op with ErrRefused, naming the route, the sandbox's message and
// sandbox_token_env. A listed variable may be sent to any allowed host.
//
// # Tool schemas for agents
//
// PrepareRun (handlers.RunPreparer) fills in the settings key
// sandbox_tools with the description and JSON-Schema parameters, from the
// sandbox's registry (in-process, or GET /api/v1/tools/{name}/schema), of
// every sandbox tool the top-level tools list names, before the settings
// are journaled. react reads them there and offers the tools to the model
// as "text2sql-execute" (":" becomes "-"), mapping calls back to sandbox
// operations; its phases stay pure, and a resumed run offers the same
// schemas. An unknown tool refuses the run.
//
// # Sessions
//
// A stateful tool (bash:run...) runs on the run's session of its resource
// type, created on first use (session/create) and destroyed when the run
// ends (CloseRun). The work directory's .sandbox-sessions/<type> file
// remembers that the run had one: a resumed run whose session is gone gets
// a new one, and the first result's message starts with "[session
// recreated: ...]" so that the agent knows its earlier state is lost.
// Stateless tools (text2sql, rag, doc, web) use no session.
//
// A call may name one of the run's sessions ("session": the synthesis
// sampler gives each branch of a tree its own): the sandbox worker is then
// "<run id>~<session>". "fork_from" lists sessions of the run, nearest
// first: a session created for the call is forked (POST
// /api/v1/session/fork; sandbox.Forker) from the first of them that has a
// session of the tool's resource type, so a branch starts with its
// parent's workspace and siblings never see each other's actions. A
// backend that cannot fork, or an AgentFlow sandbox without the route,
// gives a fresh session and the message starts "[session not forked:
// ...]". CloseRun destroys every session of the run.
//
// # Synthesis tools
//
// For the synthesis workflow, PrepareRun resolves available_tools
// ("resource:*" wildcards included, against the sandbox's registry:
// in-process, or GET /api/v1/tools of sandbox_server_url) into
// sandbox_tools, the schemas of the concrete tools; an unknown tool
// refuses the run naming it.
package sandboxop
