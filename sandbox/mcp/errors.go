package mcp

import "errors"

var (
	// ErrServerStart means an MCP server did not start or did not complete the MCP
	// initialisation handshake (bad command, early exit, startup timeout).
	ErrServerStart = errors.New("mcp server did not start")
	// ErrServerGone means a session's MCP server process is no longer running (it
	// crashed or closed its stdout); the session must be destroyed and created again.
	ErrServerGone = errors.New("mcp server is no longer running")
	// ErrUnknownServer means a name does not match any configured server.
	ErrUnknownServer = errors.New("unknown mcp server")
	// ErrNotEnabled means the session did not start the server a tool belongs to (its
	// session_config selected other servers).
	ErrNotEnabled = errors.New("mcp server not enabled in this session")
	// ErrToolFailed means the server ran the tool and reported isError.
	ErrToolFailed = errors.New("mcp tool reported an error")
	// ErrCall means the MCP call itself failed (protocol error, unknown tool on the
	// server, bad arguments rejected by the server).
	ErrCall = errors.New("mcp call failed")
	// ErrClosed means the session's servers were already stopped.
	ErrClosed = errors.New("mcp session closed")
)
