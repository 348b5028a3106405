package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
	jsstore "github.com/flockrun/flock/state/jetstream"
)

// ExampleOpen opens the store on an in-process JetStream server (in
// production: a cluster run with sync_interval always, and Replicas 3),
// commits a run and reads it back.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "flock-jetstream-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: dir, SyncAlways: true, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		panic("server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	st, err := jsstore.Open(ctx, js, jsstore.Options{Replicas: 1})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	head := &state.Run{ID: "run1", Workflow: "demo", Status: state.StatusRunning}
	if err := st.Commit(ctx, &state.Commit{RunID: "run1", Run: head, Spec: &state.Spec{Task: "say hi"}}); err != nil {
		panic(err)
	}
	// A commit expecting a revision the head does not have is fenced.
	err = st.Commit(ctx, &state.Commit{RunID: "run1", ExpectRevision: 7, Run: head})
	got, _ := st.Run(ctx, "run1")
	fmt.Println(got.Workflow, got.Status, got.Revision, errors.Is(err, state.ErrFenced))
	// Output: demo running 1 true
}
