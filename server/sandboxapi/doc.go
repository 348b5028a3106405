// Package sandboxapi serves flock's sandbox service (package sandbox)
// with AgentFlow's HTTP wire: GET /ready and the /api/v1 routes (execute,
// batches, sessions, lifecycle, tools, warm-up), whose answers are
// AgentFlow's envelopes {code, message, data, meta} (docs/sandbox.md).
//
// It is a server.Group: flock serve --sandbox-config mounts it beside
// flock's API (server.Server.MountGroup), and flock sandbox serves it
// alone (NewServer, which adds AgentFlow's GET /health). Either way the
// server's GET /openapi.json lists its routes (Routes), and its
// routes sit behind the server's guard (Host, Origin, Content-Type),
// bearer token, body limit and listener bounds; a caller is named by a
// digest of the server's token (server.Mount.Caller), so that one token
// never reaches the sessions of another.
//
// # Errors
//
// Every answer beneath /api/v1 and of /ready is JSON, errors included,
// because AgentFlow's client parses the body before it looks at the
// status: a malformed request, a refusal of the guard or of the token, an
// unknown route or method, all are envelopes (WriteError, which the
// server asks before it answers its own {"error"}).
//
// # Caveats
//
// Request bodies are decoded into maps, AgentFlow's loose typing: unknown
// keys are ignored, and a body may hold at most 100,000 JSON values,
// counted before it is decoded, besides the server's byte limit.
package sandboxapi
