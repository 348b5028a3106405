package operations

import "errors"

var (
	// ErrUnknownKind is returned for a request or result whose kind is not one of Kinds().
	ErrUnknownKind = errors.New("unknown operation kind")
	// ErrMissingParams is returned by Request.Validate when the kind's payload is absent.
	ErrMissingParams = errors.New("missing operation params")
	// ErrPayloadType is returned when a request's params or a result's
	// data is not the type its kind declares.
	ErrPayloadType = errors.New("operation payload of the wrong type")
	// ErrBadMeta is returned by Meta's typed accessors for a label that is
	// missing where it is required, malformed or out of range.
	ErrBadMeta = errors.New("bad operation label")
)
