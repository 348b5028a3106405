package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/testkit"
)

// sseFollower reads one GET /runs/{id}/events connection (no reconnect:
// the server must follow the run to its end by itself) and keeps the
// sequence numbers of the stored events it got.
type sseFollower struct {
	node, id string
	done     chan struct{}

	mu    sync.Mutex
	seqs  []uint64 // guarded by mu
	final bool     // the run's final event came; guarded by mu
	err   error    // why the connection ended, if not after the final event; guarded by mu
}

// followEvents opens run id's event stream on p from its first event.
func followEvents(t testing.TB, p *proc, node, id string) *sseFollower {
	t.Helper()
	f := &sseFollower{node: node, id: id, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/runs/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET events of %s on %s: %s", id, node, resp.Status)
	}
	go func() { // owned: the cleanup cancels it and waits for done
		defer close(f.done)
		defer resp.Body.Close()
		f.read(bufio.NewScanner(resp.Body))
	}()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

// read parses events until the final one or the end of the connection.
func (f *sseFollower) read(sc *bufio.Scanner) {
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var id, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			var ev api.Event
			err := json.Unmarshal([]byte(data), &ev)
			if err == nil && id != "" {
				var seq uint64
				seq, err = strconv.ParseUint(id, 10, 64)
				f.mu.Lock()
				f.seqs = append(f.seqs, seq)
				f.final = ev.Final()
				f.mu.Unlock()
			}
			if err != nil {
				f.fail(fmt.Errorf("bad event %q %q: %w", id, data, err))
				return
			}
			if ev.Final() {
				return
			}
			id, data = "", ""
		}
	}
	f.fail(fmt.Errorf("the stream ended before the run's final event: %v", sc.Err()))
}

func (f *sseFollower) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// check says whether the stream carried events 1..n in order, the last
// one final, and nothing else.
func (f *sseFollower) check(n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return fmt.Errorf("events of %s on %s, after %d events (last seq %d): %w", f.id, f.node, len(f.seqs), last(f.seqs), f.err)
	}
	for i, seq := range f.seqs {
		if seq != uint64(i+1) {
			return fmt.Errorf("events of %s on %s: event %d has seq %d (a gap or a repeat): %v", f.id, f.node, i+1, seq, f.seqs)
		}
	}
	if !f.final || len(f.seqs) != n {
		return fmt.Errorf("events of %s on %s: %d events (final %v), the store has %d", f.id, f.node, len(f.seqs), f.final, n)
	}
	return nil
}

func last(s []uint64) uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// readProbe times reads of runs from surviving nodes during a failover:
// a run's head, the runs list and a page of a run's events.
type readProbe struct {
	mu   sync.Mutex
	took map[string][]time.Duration // by read; guarded by mu
	errs []string                   // guarded by mu
}

// probeReads reads from every node of ps in turn until stop is closed,
// then returns what it measured.
func probeReads(ps []*proc, names []string, ids []string, stop <-chan struct{}) *readProbe {
	r := &readProbe{took: map[string][]time.Duration{}}
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() { // owned: waited for below
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				id := ids[k%len(ids)]
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				for _, read := range []struct {
					name string
					do   func() error
				}{
					{"head", func() error { _, err := p.c.Run(ctx, id); return err }},
					{"list", func() error { _, err := p.c.Runs(ctx, client.RunsQuery{Limit: 10}); return err }},
					{"events", func() error { _, err := p.c.StoredEvents(ctx, id, 0, 50); return err }},
				} {
					began := time.Now()
					err := read.do()
					r.mu.Lock()
					r.took[read.name] = append(r.took[read.name], time.Since(began))
					if err != nil {
						r.errs = append(r.errs, fmt.Sprintf("%s of %s on %s after %v: %v", read.name, id, names[i],
							time.Since(began).Round(time.Millisecond), err))
					}
					r.mu.Unlock()
				}
				cancel()
				time.Sleep(50 * time.Millisecond) // a client's pace, not a load test
			}
		}()
	}
	wg.Wait()
	return r
}

// summary is each read's count, p50 and max.
func (r *readProbe) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, name := range []string{"head", "list", "events"} {
		ds := slices.Clone(r.took[name])
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		out = append(out, fmt.Sprintf("%s: %d reads, p50 %v, max %v", name, len(ds),
			ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond)))
	}
	return strings.Join(out, "; ")
}

// natsAdmin connects to the NATS servers at url as flock's user, to ask
// JetStream who leads a stream or to move a leader.
func natsAdmin(t testing.TB, url, secret string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo("flock", secret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamLeader returns the server that leads stream.
func streamLeader(t testing.TB, js jetstream.JetStream, stream string) string {
	t.Helper()
	var leader string
	testkit.CheckFor(t, 30*time.Second, func() error {
		s, err := js.Stream(context.Background(), stream)
		if err != nil {
			return err
		}
		info, err := s.Info(context.Background())
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return fmt.Errorf("stream %s has no leader", stream)
		}
		leader = info.Cluster.Leader
		return nil
	})
	return leader
}

// moveLeader makes server to the leader of stream (a step-down of the
// leader, preferring to).
func moveLeader(t testing.TB, js jetstream.JetStream, stream, to string) {
	t.Helper()
	body := fmt.Sprintf(`{"placement": {"preferred": %q}}`, to)
	testkit.CheckFor(t, 60*time.Second, func() error {
		if streamLeader(t, js, stream) == to {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, []byte(body)); err != nil {
			return fmt.Errorf("step down the leader of %s: %w", stream, err)
		}
		return fmt.Errorf("stream %s not led by %s yet", stream, to)
	})
}

// TestClusterEventsFollowFailover kills with SIGKILL, on three real
// `flock serve --cluster` processes, the node that drives a run while
// the other two stream that run's events (one GET /runs/{id}/events each,
// never reconnected), and reads runs from the survivors throughout:
//
//   - embedded NATS: the killed node also leads the store's streams (the
//     test moves their leaders there), so the run's takeover waits for a
//     JetStream election (issue 28.5: a survivor's stream stopped before
//     the run finished);
//   - nats: the nodes are clients of three nats-server processes, and the
//     nats-server that leads the heads stream is killed with the node.
//
// Each survivor's stream carries every event of the run, 1..n without a
// gap, up to its final one; every read from a survivor answers without
// an error during the failover (issue 28.2), and the reads' p50 and max
// are logged.
func TestClusterEventsFollowFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	t.Run("embedded", func(t *testing.T) { testEventsFollowFailover(t, false) })
	t.Run("nats", func(t *testing.T) { testEventsFollowFailover(t, true) })
}

func testEventsFollowFailover(t *testing.T, external bool) {
	secretFile := clusterSecretFile(t)
	b, err := os.ReadFile(secretFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(b))
	var servers []*natsServer
	urls := ""
	if external {
		servers, urls = startNATSCluster(t, secret)
	}
	c := startTickClusterOn(t, urls)
	natsURL := "nats://" + c.nodes[0].natsAddr
	if external {
		natsURL = urls
	}
	admin := natsAdmin(t, natsURL, secret)
	// The run to follow, and the node to kill: the one that drives it.
	id := c.start(0, "bash", "follow", 50, 1)
	var victim string
	testkit.WaitFor(t, "run "+id+" driven", func() bool {
		victim = c.driver(0, id)
		return victim != ""
	})
	// Embedded: the victim leads the store's streams, so that its death
	// costs an election; nats: the nats-server that leads them dies too.
	streams := []string{"KV_FLOCK_HEADS_0", "FLOCK_RUNS_0"}
	heads := ""
	if external {
		heads = streamLeader(t, admin, streams[0])
	} else {
		for _, s := range streams {
			moveLeader(t, admin, s, victim)
		}
	}
	t.Logf("%s led by %s, %s by %s", streams[0], streamLeader(t, admin, streams[0]), streams[1], streamLeader(t, admin, streams[1]))
	// Another run on each other node, read by the probe.
	var others []string
	for i := 1; i < 3; i++ {
		others = append(others, c.start(i, "bash", fmt.Sprintf("other%d", i), 50, 1))
	}
	vi := slices.IndexFunc(c.nodes, func(n clusterNode) bool { return n.name == victim })
	var survivors []*proc
	var names []string
	var follows []*sseFollower
	for i, p := range c.procs {
		if i != vi {
			survivors, names = append(survivors, p), append(names, c.nodes[i].name)
			follows = append(follows, followEvents(t, p, c.nodes[i].name, id))
		}
	}
	// The run is under way on the victim.
	testkit.CheckFor(t, 30*time.Second, func() error {
		if n := c.procs[vi].run(id).Step; n < 3 {
			return fmt.Errorf("run %s at step %d", id, n)
		}
		return nil
	})
	stop := make(chan struct{})
	probed := make(chan *readProbe, 1)
	go func() { probed <- probeReads(survivors, names, append([]string{id}, others...), stop) }() // owned: stop ends it
	c.procs[vi].kill()
	killed := time.Now()
	if external {
		for _, s := range servers {
			if s.name == heads {
				s.kill9()
			}
		}
		t.Logf("SIGKILL flock node %s, which drives %s, and nats-server %s", victim, id, heads)
	} else {
		t.Logf("SIGKILL flock node %s, which drives %s and leads the streams", victim, id)
	}
	// Every follower reaches the run's end.
	for _, f := range follows {
		select {
		case <-f.done:
		case <-time.After(3 * time.Minute):
			t.Errorf("events of %s on %s: no end after 3 minutes", id, f.node)
		}
	}
	close(stop)
	r := <-probed
	t.Logf("after the kill: the streams ended %v later; reads from %v: %s", time.Since(killed).Round(time.Millisecond), names, r.summary())
	h := waitEnded(t, survivors[0], id, time.Minute)
	if h.Status != "succeeded" {
		t.Fatalf("run %s ended %s: %s", id, h.Status, h.Error)
	}
	evs, err := survivors[0].c.StoredEvents(context.Background(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range follows {
		if err := f.check(len(evs.Events)); err != nil {
			t.Error(err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		t.Errorf("a read failed during the failover: %s", e)
	}
}
