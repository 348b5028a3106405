// Command flock runs LLM agents and agent-data pipelines as durable phase
// graphs. See README.md, or run "flock help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/flockrun/flock/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
