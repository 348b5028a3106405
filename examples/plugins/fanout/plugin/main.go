// Command plugin is the fanout workflow built as a Go plugin:
//
//	go build -buildmode=plugin -o fanout.so ./examples/plugins/fanout/plugin
//
// (or `make` in examples/plugins/fanout), then `flock serve --plugins DIR`
// with fanout.so in DIR.
package main

import (
	"github.com/flockrun/flock/examples/plugins/fanout"
	"github.com/flockrun/flock/phases"
)

// APIVersion tells the host which phases API this plugin was built against.
var APIVersion = phases.APIVersion

// Register adds the plugin's workflows to the host's registry.
func Register(r *phases.Registry) error { return fanout.Register(r) }

// main is never called; it lets `go build ./...` build this package as a
// program too.
func main() {}
