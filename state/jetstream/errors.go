package jetstream

import "errors"

var (
	// ErrOptions is returned by Open for invalid Options.
	ErrOptions = errors.New("invalid jetstream store options")
	// ErrCorrupt is wrapped (with state.ErrCorrupt) by reads that find a
	// record they cannot decode, or a log that does not match its head.
	ErrCorrupt = errors.New("jetstream store record is damaged")
	// ErrNotProvisioned is returned by Open with Options.BindOnly while
	// a stream, bucket or object store of the store is missing or
	// configured otherwise.
	ErrNotProvisioned = errors.New("jetstream store is not provisioned")
)
