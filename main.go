// Command flock runs LLM agents and agent-data pipelines as durable phase
// graphs. See README.md, or run "flock help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/flockrun/flock/cli"
	"github.com/flockrun/flock/isolation"
)

func main() {
	// Before anything reads a secret: nothing flock starts may read its
	// memory or environment (see package isolation).
	if err := isolation.ProtectSelf(); err != nil {
		cli.Warn(os.Args[1:], os.Stderr, err.Error())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
