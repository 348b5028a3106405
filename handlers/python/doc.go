// Package python runs the python operation: code cells executed in one
// persistent interpreter per run, so globals, imports and definitions carry
// over from call to call, as in a notebook. The interpreters are package
// internal/pyinterp's (see its doc for the driver and its protocol, output,
// timeouts, the processes a cell starts, the environment and isolation);
// this package maps a request to its run's interpreter and resolves what
// the run's settings decide.
//
// A cell runs for the request's timeout_s, else settings.python.timeout_s,
// else Options.DefaultTimeout (600 s); its output is capped at
// settings.bash.output_limit, else Options.OutputLimit (100000 bytes). The
// binary is settings.python.interpreter, else python3 found on the
// server's PATH. Interpreters run in the run's work directory, isolated as
// the operator's policy (Options.Isolation, set from the server's in
// Provision) and the run's settings.isolation resolve, with the server's
// data directory hidden.
//
// Code errors, timeouts and interpreter deaths during a cell are reported
// in the PythonResult; a cell that did not run at all has Result.Error:
// "cancelled" when the context ended (the interpreter is killed), else
// "python: " and why (no interpreter, closed, not started).
package python
