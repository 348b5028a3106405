// Package cluster runs flock as a cluster of nodes on NATS JetStream
// (docs/design.md, "A cluster"): runs spread over the nodes, a dead
// node's runs resume on another, and every node answers the HTTP API for
// every run.
//
// # Nodes
//
// Each `flock serve --cluster` process embeds a NATS server (Node:
// github.com/nats-io/nats-server/v2) with JetStream, joined to the
// others by routes, or connects to an external NATS cluster (`--nats
// URL`). JetStream fsyncs every write before acknowledging it
// (sync_interval: always): Jepsen's analysis of NATS 2.12.1 found
// acknowledged writes lost under the default 2-minute interval. Streams
// are R3 in a cluster (R1 on a single embedded node), so a majority of
// three nodes must be up for the cluster to write. Runs live in the
// shared JetStream store (state/jetstream); a single node started
// without --cluster or --nats keeps its bbolt file.
//
// # Authentication and TLS
//
// Every NATS connection a node accepts is authenticated. An embedded
// node has one NATS user, UserName ("flock"), whose password is the
// cluster secret (Config.Secret, at least MinSecretLen bytes; the CLI
// reads it from --nats-secret-file, a file only its owner may read, or
// FLOCK_NATS_SECRET, never from the command line), and its routes
// authenticate both ways with the same name and secret: a client or a
// server without them is refused before it can subscribe, publish or
// join, so it reads nothing of flock.>, cannot cancel a run through its
// control subject, cannot call the JetStream API and cannot queue a
// forged run. The user's permissions cover flock's subjects only
// (natsPermissions: flock.>, the JetStream API, acks and flow control,
// flock's KV and object store subjects, reply inboxes). A node's own
// flock process connects in process (Node.Connect): no socket, no TLS.
// A single node (no ClusterListen) given no secret makes a random one
// for its own process.
//
// With TLSFiles (--nats-tls-cert, --nats-tls-key, --nats-tls-ca) the
// client and cluster ports speak TLS only and verify the peer's
// certificate against the CA both ways (a route is a TLS client of the
// node it dials). A listen address or a route that is not loopback is
// refused (ErrInsecure) without TLS and the secret.
//
// With an external NATS (Config.NATSURL, --nats) flock connects as
// Config.User (default UserName) with the secret as password, verifies
// the servers against TLSFiles.CA (or the system's roots for tls://
// URLs) and presents TLSFiles.Cert if asked; it refuses credentials in
// the URL, a non-loopback URL in clear, and a server that does not
// require authentication. Give flock's user an account of its own there,
// with JetStream, so that no other user sees its subjects or streams.
//
// # Dispatch
//
// A run is handed to a node by a claim: one message on the work-queue
// stream FLOCK_CLAIMS, subject flock.claims.<run> (dots of child ids
// become '~'), published with an expected last subject sequence of 0, so
// a run has at most one claim queued or held at any time. Every node
// pulls from one durable pull consumer (explicit ack, AckWait 3 s by
// default, MaxDeliver bounded, MaxAckPending above the peak number of
// live runs). A node that receives a claim takes the run's store lease
// (Executor.Drive; the lease TTL equals AckWait) and drives the run,
// telling JetStream every AckWait/3 that the claim is in progress. When
// the run stops being driven (workflows.Unload) the node settles the
// claim:
//
//   - ended or paused: acked; a paused run is claimed again when it is
//     resumed (Resume marks it running and publishes a new claim);
//   - waiting for a Delay longer than the executor's HandoffDelay
//     (default 10 s): acked, holding no lease; a timer on the node that
//     let it go publishes a new claim at the wake time, and every node's
//     sweep (each SweepInterval, default 10 s) publishes a claim for
//     every running run that is due and has none, which covers a timer
//     lost with its node;
//   - the executor stopped (graceful shutdown): nacked, so another node
//     takes it at once;
//   - fenced or lease lost: left alone (another node holds it now);
//   - a store failure: nacked with a one-second delay.
//
// StartRun on any node writes the run and publishes its claim; it does
// not drive it there. A claim delivered MaxDeliver times is terminated;
// the sweep queues its run again while it is unfinished.
//
// # Takeover and fencing
//
// A node that dies stops acknowledging: its claims are delivered to
// another node after AckWait, whose Drive waits (up to AckWait + 1 s)
// for the dead node's lease to lapse, then resumes the run from the
// store: results journaled before the crash are reused, only pending
// operations run again. A node that was only slow (paused, partitioned)
// and lost its lease is fenced: its next commit carries the head revision
// it last wrote, fails with state.ErrFenced and writes nothing, and it
// stops driving the run.
//
// # Control
//
// The node driving a run subscribes to flock.ctl.<run>, before it takes
// the run up (a request that arrives during the take-up waits for it).
// Cancel, Pause and answers of a run the asking node does not drive are
// requests on that subject (workflows.Controller); with no responder (the
// run is queued or parked) the asking node writes the store directly,
// fenced by the head revision it read before asking, so that a node that
// took the run up in between (and was not reachable yet) fences the write
// and is asked again. Core NATS carries a request and its reply at most
// once, so a cancel or pause unanswered for 5 s is asked again (both are
// safe to repeat); an answer to a question is asked once.
//
// # Events
//
// The driving node publishes every event of its runs on
// flock.events.<run> (core NATS, best effort). Engine, the server's
// engine on a cluster node, streams a run's events from that subject on
// any node; the server's event stream fills any gap from the store, and a
// quiet subscription reads the run's head every second so that a missed
// final event still ends the stream. While the store does not answer (a
// node died and its streams elect new leaders), the subscription and the
// server's stream both wait and go on: a stream follows its run across
// the takeover to its end (e2e TestClusterEventsFollowFailover).
// Live-only events of descendant runs (?descendants=true) are not
// forwarded between nodes.
//
// # Health
//
// Engine.Health adds to the executor's health a check of the shared
// store and the claim queue (every stream's info, at most one check a
// second): a node whose store does not answer or lost a stream is
// "unavailable", and its /health answers 503.
//
// # Caveats
//
// Run work directories are node-local paths under each node's data
// directory; a run taken over on another machine finds an empty work
// directory unless the data directories are on a shared file system.
// Live (what holds a run: stalled commits, rate-limit waits) is known
// only on the node that drives the run. The sweep lists every unfinished
// run each SweepInterval on every node.
package cluster
