package server

import (
	"errors"
	"fmt"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

var (
	// ErrBadInput is wrapped by errors about malformed requests: bad JSON,
	// missing or ill-typed fields, bad query parameters. The server answers
	// 400 with the error's text, which names the field.
	ErrBadInput = errors.New("bad input")

	// ErrRefused is wrapped by the refusals of the cross-site guard: a
	// foreign Host or Origin (403) or a state-changing request that is not
	// application/json (415). The error's text names the header and the
	// setting that would allow it.
	ErrRefused = errors.New("request refused")

	// errShuttingDown ends event streams when Shutdown is called.
	errShuttingDown = errors.New("server shutting down")
)

// inputError names the request field that is wrong and why.
type inputError struct {
	field  string
	reason string
}

func (e *inputError) Error() string { return e.field + ": " + e.reason }

// Unwrap makes errors.Is(err, ErrBadInput) true.
func (e *inputError) Unwrap() error { return ErrBadInput }

// badInput returns an ErrBadInput error about field.
func badInput(field, format string, args ...any) error {
	return &inputError{field: field, reason: fmt.Sprintf(format, args...)}
}

// refusedError is a request the guard refuses, with its status.
type refusedError struct {
	status int
	msg    string
}

func (e *refusedError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *refusedError) Unwrap() error { return ErrRefused }

// runError attributes a store or executor error to a run so that the
// message names the run. Status mapping still goes through errors.Is on
// the wrapped error.
type runError struct {
	id  string
	err error
	// status is the run's status when known (for ErrEnded).
	status state.Status
}

func (e *runError) Error() string {
	switch {
	case errors.Is(e.err, state.ErrNotFound):
		return fmt.Sprintf("run %q not found", e.id)
	case errors.Is(e.err, workflows.ErrEnded) && e.status != "":
		return fmt.Sprintf("run %q has already ended (%s)", e.id, e.status)
	case errors.Is(e.err, workflows.ErrEnded):
		return fmt.Sprintf("run %q has already ended", e.id)
	case errors.Is(e.err, workflows.ErrNotPaused) && e.status != "":
		return fmt.Sprintf("run %q is not paused (%s)", e.id, e.status)
	}
	// The operator's errors name the run and what is wrong themselves.
	for _, s := range []error{workflows.ErrBadFork, workflows.ErrNoQuestion, workflows.ErrAnswered, workflows.ErrNotWaiting, workflows.ErrBadRequest} {
		if errors.Is(e.err, s) {
			return trimSentinel(e.err, s)
		}
	}
	return fmt.Sprintf("run %q: %v", e.id, e.err)
}

func (e *runError) Unwrap() error { return e.err }

// Interface guards.
var (
	_ error = (*inputError)(nil)
	_ error = (*refusedError)(nil)
	_ error = (*runError)(nil)
)
