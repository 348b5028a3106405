package app

import "errors"

var (
	// ErrNoStore is returned by Open when the data directory's database is
	// missing or empty while its runs directory holds run directories: the
	// store was lost, and starting would silently begin an empty one.
	// configs.Server.NewStore (--new-store) starts anyway.
	ErrNoStore = errors.New("database is missing but runs exist")
)
