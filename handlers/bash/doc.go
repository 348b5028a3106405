// Package bash implements the bash operation: commands run in persistent
// shells, one per (run, session), so that the working directory, exported
// variables, functions and aliases carry over from one command to the next.
// The shells are package internal/shell's (see its doc for how a shell is
// started, isolated, fed commands, read, interrupted and killed with every
// process it started); this package maps a request to its shell and
// resolves what the run's settings decide.
//
// A request names its session (DefaultSession, "main", when it names none)
// and its timeout_s. The timeout is the request's timeout_s, else the run's
// bash.timeout_s, else Options.DefaultTimeout, else 600 s; each stream is
// capped at the run's bash.output_limit, else Options.OutputLimit, else
// 100000 bytes. Shells run in the run's work directory, isolated as the
// operator's policy (Options.Isolation, set from the server's in
// Provision) and the run's settings.isolation resolve, with the server's
// data directory hidden; ValidateRun refuses, at a run's start, an
// isolation the policy cannot give or does not allow.
//
// A command that ran, whatever its exit status, yields a result without
// Error. A timeout yields timed_out, exit code 124 and the output captured
// until then; the next command of the session gets a new shell in the same
// cwd (exported variables, functions and aliases are lost). A done context
// yields the partial output, exit code 130 and Error "cancelled".
//
// CloseRun kills the run's shells and Close kills all; commands running in
// them return at once with shell.ErrSessionClosed's text.
package bash
