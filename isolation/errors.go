package isolation

import "errors"

var (
	// ErrUnknownKind is returned for an isolation kind other than "none" and
	// "bwrap".
	ErrUnknownKind = errors.New("unknown isolation kind")
	// ErrUnavailable is returned when bwrap is missing or cannot create a
	// sandbox on this host.
	ErrUnavailable = errors.New("bwrap sandbox unavailable")
	// ErrBadPath is returned for a work directory that is not an absolute
	// path to an existing directory.
	ErrBadPath = errors.New("bad sandbox path")
	// ErrNotAllowed is returned for a run asking for less isolation than
	// the operator's policy gives (isolation.kind none under a policy that
	// isolates). Callers name the setting ("isolation.kind: ...").
	ErrNotAllowed = errors.New("kind none is not allowed")
)
