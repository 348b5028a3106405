package app

// Built-in operation handlers register their kinds in package handlers
// from init; Open provisions every registered one. A new kind is a new
// handler package plus one import here.
import (
	_ "github.com/flockrun/flock/handlers/bash"
	_ "github.com/flockrun/flock/handlers/external"
	_ "github.com/flockrun/flock/handlers/files"
	_ "github.com/flockrun/flock/handlers/generate"
	_ "github.com/flockrun/flock/handlers/human"
	_ "github.com/flockrun/flock/handlers/python"
	_ "github.com/flockrun/flock/handlers/sandboxop"
	_ "github.com/flockrun/flock/handlers/spawn"
	_ "github.com/flockrun/flock/handlers/task"
)
