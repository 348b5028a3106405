package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "flock-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	s, err := bolt.Open(filepath.Join(dir, "flock.db"), bolt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	ctx := context.Background()
	c := &state.Commit{
		RunID:  "run1",
		Run:    &state.Run{ID: "run1", Workflow: "demo", Status: state.StatusRunning},
		Spec:   &state.Spec{Task: "say hello"},
		Events: []state.Event{{Type: "run", Status: "running"}},
	}
	if err := s.Commit(ctx, c); err != nil {
		fmt.Println(err)
		return
	}
	head, err := s.Run(ctx, "run1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(head.ID, head.Status, "schema", head.Schema, "event seq", c.Events[0].Seq)
	// Output: run1 running schema 1 event seq 1
}
