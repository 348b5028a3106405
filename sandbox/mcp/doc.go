// Package mcp is the sandbox's "mcp" backend: any MCP stdio server, run per session
// through github.com/modelcontextprotocol/go-sdk, its tools offered as
// mcp:<server>.<tool> with the input schemas the server declares.
//
// # Config
//
// The backend's section is resources.mcp.config of the sandbox config file:
//
//	"mcp": {"config": {
//	  "servers": {
//	    "fs": {"command": "/usr/bin/mcp-fs", "args": ["{workspace}"],
//	           "env": {"FS_TOKEN": "${FS_TOKEN}"}, "cwd": ""}
//	  },
//	  "startup_timeout_s": 30
//	}}
//
// AgentFlow's key is accepted too: "enabled_mcp_servers" given as the same object is an
// alias of "servers"; given as a list of names (at least one), it selects which entries
// of "servers" run (AgentFlow's YAML manifests and its mcp_servers_path, workspace_root
// and env_overrides are not read: the core owns workspaces, and each server's command is
// written out here; like any key the section does not name, they are warned of at
// start). Errors name the JSON path (resources.mcp.config.servers.fs.command).
//
// {workspace} in args, env values and cwd becomes the session workspace's absolute
// path. cwd defaults to the workspace; a relative cwd is a directory beneath it.
//
// # Tools
//
// MCP tools are known only once a server runs, and the registry serves them at
// /api/v1/tools from start-up on, so Provision starts each configured server once (in
// <data dir>/discovery/<server>), lists its tools (following pagination), and stops it.
// A server that does not start fails start-up with its config path named. The list is
// fixed from then on; a server whose tools change later answers calls to unknown tools
// with an MCP error.
//
// # Sessions
//
// Initialize starts every configured server (or those named by the session_config's
// "enabled_mcp_servers" list: a client selects servers, never adds or changes one; a call
// to a server its session did not start is 5011) as a child process in the session's
// workspace and
// completes the MCP handshake within startup_timeout_s. Each server leads its own
// process group. Its environment is the base set of flock's (isolation.Environ: PATH,
// the locale, ...), HOME and TMPDIR set to the workspace, and the configured env:
// nothing else of flock's environment (API keys) reaches it. Servers are programs the
// operator configures: they run as flock's user, not under bwrap (flock's memory and
// environment stay out of their reach, its data directory does not; see package
// isolation). A server that fails to start fails the session (Initialize
// answers 5011 naming the server, with the tail of its stderr; the service reports
// session creation as 4007 with that text); the servers already started are stopped.
//
// Cleanup closes each client (closing the server's stdin, then SIGTERM and SIGKILL
// after 2 s each, as the MCP spec asks) and then kills the server's process group, so
// children the server started do not outlive the session. A server that crashed stays
// crashed: its calls answer 5012 until the session is destroyed and created again.
//
// # Results and errors
//
// A call's data is {result: the text items joined by newlines, content: every content
// item as the server sent it, structured_content: the structured result when given}.
//
//   - a result with isError: 5000 (the tool ran and failed: an execution error like any
//     other tool's), the text as the message and the result as data;
//   - the call failed (the server crashed, closed its pipe, or answered a JSON-RPC
//     error such as an unknown tool or rejected arguments): 5012 DEPENDENCY_FAILURE,
//     naming the server and, for a crash, the tail of its stderr;
//   - the server is not started in this session: 5011;
//   - the call's deadline passed: 5006.
//
// The values of a server's configured variables whose names mark them as secrets (KEY,
// TOKEN, SECRET, PASS, AUTH, CREDENTIAL, COOKIE, SESSION in the name) are redacted from
// every message the backend builds, stderr tails included. The redaction is by value:
// a secret cut in two by the 4 KiB stderr tail could leave its end visible.
package mcp
