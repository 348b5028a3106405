package bash_test

import (
	"context"
	"fmt"
	"os"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/bash"
	"github.com/flockrun/flock/operations"
)

func ExampleHandler() {
	dir, err := os.MkdirTemp("", "flock-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	h := bash.New(bash.Options{})
	defer h.Close()
	env := handlers.Env{RunID: "run1", WorkDir: dir}
	do := func(command string) *operations.BashResult {
		req := operations.Request{Kind: operations.KindBash, Params: &operations.BashRequest{Command: command}}
		return operations.Bash.Result(h.Handle(context.Background(), env, req))
	}

	r := do("cd /; export GREETING=hello; echo out; echo err >&2; false")
	fmt.Printf("%q %q %d\n", r.Stdout, r.Stderr, r.ExitCode)
	r = do(`echo "$GREETING from $PWD"`)
	fmt.Printf("%q\n", r.Stdout)
	// Output:
	// "out\n" "err\n" 1
	// "hello from /\n"
}
