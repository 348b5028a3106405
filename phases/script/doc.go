// Package script is the built-in "script" workflow: a durable, resumable
// shell pipeline. Each command of the settings runs in the run's persistent
// shell (so cd and exports carry over), one command per phase; each result
// is appended to the run's log as a "command" entry.
//
// Settings:
//
//	{"commands": ["make build", "make test"], "continue_on_error": false, "timeout_s": 600}
//
// The run succeeds when every command exits 0 (or continue_on_error is
// set); otherwise it fails at the first failing command with end_reason
// "command_failed: <command>". The result is {"commands": N, "failed": K}.
package script
