package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
)

// provisionWait is how long a node that did not create the cluster's
// streams waits for the node that does before it creates them itself
// (that node may have died half-way).
const provisionWait = 10 * time.Second

// provisionPoll is how often a waiting node looks for the streams.
const provisionPoll = 50 * time.Millisecond

// provisionerKey is the claim stream's metadata key naming the node that
// created it, and with it the store's streams.
const provisionerKey = "flock.provisioner"

// StoreOptions are what Join opens the shared store with.
type StoreOptions struct {
	// Replicas of every stream.
	Replicas int
	// BindOnly: bind to the streams as they are, creating nothing; fail
	// while one is missing (another node creates them).
	BindOnly bool
	// BindLater: return at once and bind in the background; calls wait
	// for it and fail with state.ErrUnavailable until it is done (a
	// restarted node whose streams elect new leaders).
	BindLater bool
}

// Provisioned says how a node found the cluster's streams.
type Provisioned int

// How a node found the cluster's streams.
const (
	// Bound: they were there (a restart, a node joining a running
	// cluster); the node created nothing.
	Bound Provisioned = iota
	// Created: this node created them.
	Created
	// Waited: another node created them while this one waited.
	Waited
	// Restarted: the node's own NATS server holds them (a restart); the
	// store and the claim consumer bind in the background (see
	// provision).
	Restarted
)

// String names p for logs.
func (p Provisioned) String() string {
	switch p {
	case Bound:
		return "bound to the streams"
	case Created:
		return "created the streams"
	case Waited:
		return "waited for another node to create the streams"
	case Restarted:
		return "restarted on the streams its NATS server holds"
	}
	return fmt.Sprintf("Provisioned(%d)", int(p))
}

// provision opens the store and makes sure the claim stream and its
// consumer exist, with one node creating what is missing: concurrent
// creates of the same replicated streams by several nodes get no answer
// from JetStream and are retried, which made a cluster take many seconds
// to start. In order:
//
//  0. The node's own server holds the claim stream and its consumer
//     (made last, once everything else was): a restart. The node opens
//     the store binding in the background (StoreOptions.BindLater) and
//     waits for nothing: after a kill -9 the streams this node led
//     answer only once the others have elected new leaders (4-9 s, the
//     Raft election timeout of NATS, not settable by an embedder), and
//     every call of the store, a start included, waits that out as it
//     waits out any election. Dispatcher.Start binds the consumer the
//     same way.
//  1. Every stream is there: the node binds to them.
//  2. Otherwise the node that creates the claim stream (CreateStream,
//     naming itself in the stream's metadata: of several concurrent
//     creates one succeeds and the others fail at once with "name already
//     in use") creates the store's streams and the consumer.
//  3. The others wait for them, binding until everything is there; one
//     that finds nothing after provisionWait creates it all itself.
func (m *Member) provision(ctx context.Context, cfg Config, open StoreOpener, replicas int, began time.Time) (Provisioned, error) {
	claims := claimStreamConfig(replicas)
	claims.Metadata = map[string]string{provisionerKey: cfg.Name}
	bind := func(ctx context.Context) error {
		if m.Store == nil {
			st, err := open(ctx, m.JS, StoreOptions{Replicas: replicas, BindOnly: true})
			if err != nil {
				return err
			}
			m.Store = st
		}
		if _, err := m.JS.Stream(ctx, ClaimStream); err != nil {
			return fmt.Errorf("stream %s: %w", ClaimStream, err)
		}
		if _, err := m.JS.Consumer(ctx, ClaimStream, ClaimConsumer); err != nil {
			return fmt.Errorf("consumer %s: %w", ClaimConsumer, err)
		}
		return nil
	}
	create := func(ctx context.Context) error {
		if m.Store == nil {
			st, err := open(ctx, m.JS, StoreOptions{Replicas: replicas})
			if err != nil {
				return err
			}
			m.Store = st
		}
		if _, err := m.JS.CreateOrUpdateStream(ctx, claims); err != nil {
			return fmt.Errorf("create stream %s: %w", ClaimStream, err)
		}
		return nil
	}
	if m.Node != nil && m.Node.holds(ctx, ClaimStream, ClaimConsumer, replicas, restoreWait) {
		st, err := open(ctx, m.JS, StoreOptions{Replicas: replicas, BindOnly: true, BindLater: true})
		if err != nil {
			return 0, err
		}
		m.Store = st
		return Restarted, nil
	}
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	err := bind(tctx)
	cancel()
	if err == nil {
		return Bound, nil
	}
	cfg.Logger.Debug("cluster not provisioned yet", "node", cfg.Name, "err", err)
	// Try to be the one that creates everything.
	var creator bool
	if err := retryEvery(ctx, 2*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		st, err := m.JS.CreateStream(ctx, claims)
		switch {
		case err == nil:
			// JetStream answers an identical create of a stream that is
			// there as if it made it: the node that created the
			// streams, restarted (after a kill -9 its first bind may
			// time out while the cluster elects), binds to them too.
			creator = !st.CachedInfo().Created.Before(began)
			return nil
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			return nil // another node creates (or created) it
		}
		return err
	}); err != nil {
		return 0, fmt.Errorf("provision the cluster's streams: %w", err)
	}
	if creator {
		cfg.Logger.Debug("creating the cluster's streams", "node", cfg.Name)
		if err := retry(ctx, create); err != nil {
			return 0, fmt.Errorf("provision the cluster's streams: %w", err)
		}
		return Created, nil
	}
	// Another node creates them: wait, then do it ourselves.
	wctx, cancel := context.WithTimeout(ctx, provisionWait)
	err = retryEvery(wctx, time.Second, provisionPoll, bind)
	cancel()
	if err == nil {
		// Streams made before this process began were there: it only
		// waited for its own replicas to catch up (a restart).
		if st, err := m.JS.Stream(ctx, ClaimStream); err == nil && st.CachedInfo().Created.Before(began) {
			return Bound, nil
		}
		return Waited, nil
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("wait for the cluster's streams: %w", err)
	}
	cfg.Logger.Warn("the node creating the cluster's streams has not done so; creating them here", "node", cfg.Name, "err", err)
	if err := retry(ctx, create); err != nil {
		return 0, fmt.Errorf("provision the cluster's streams: %w", err)
	}
	return Created, nil
}

// claimStreamConfig is the claim stream's configuration.
func claimStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        ClaimStream,
		Description: "flock: one claim per run waiting for or held by a node",
		Subjects:    []string{claimPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

// probeStore reads a run that does not exist and takes and releases a
// lease on it: both answer once the store's streams serve on this node.
func probeStore(ctx context.Context, st state.Store, id, owner string) error {
	if _, err := st.Run(ctx, id); !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("read: %w", err)
	}
	if _, err := st.Claim(ctx, id, owner, time.Second); err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	return st.Release(ctx, id, owner)
}
