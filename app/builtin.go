package app

// Built-in workflows register themselves in phases.Default from init.
import (
	_ "github.com/flockrun/flock/phases/externalagent"
	_ "github.com/flockrun/flock/phases/modular"
	_ "github.com/flockrun/flock/phases/react"
	_ "github.com/flockrun/flock/phases/rollout"
	_ "github.com/flockrun/flock/phases/script"
	_ "github.com/flockrun/flock/phases/synthesis"
	_ "github.com/flockrun/flock/phases/triframe"
)

// Every sandbox backend registers itself through sandbox/all.
import _ "github.com/flockrun/flock/sandbox/all"
