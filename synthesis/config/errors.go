package config

import "errors"

var (
	// ErrConfig is returned for a synthesis config that does not decode or
	// validate; the message names the key.
	ErrConfig = errors.New("invalid synthesis config")
	// ErrSeeds is returned for a seeds file that cannot be read as seeds;
	// the message names the line or element.
	ErrSeeds = errors.New("invalid seeds")
	// ErrTools is returned for available_tools naming a tool, or a
	// "resource:*" pattern matching none, that the sandbox does not have.
	ErrTools = errors.New("unknown sandbox tool")
)
