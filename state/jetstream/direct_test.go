package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDirectGetsNeverOn: no stream of the store changes whether it allows
// direct gets at any moment, not even while a second node opens the same
// store: the leases bucket and the object store never allow them, the
// runs and heads shards and the index always do (failover reads). A
// client that binds a bucket while its stream allows them (a node
// starting while another was between nats.go's CreateOrUpdateKeyValue,
// which turns them on, and turning them off again) reads with direct gets
// for good; once they are off, every read of it fails with "no
// responders": a node that passed its start probe and then refused every
// run (e2e TestClusterTLSProcesses, now and then). The test reads every
// stream create and update request two opens of one store send.
func TestDirectGetsNeverOn(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	spy := connect(t, servers...)
	reqs := make(chan *nats.Msg, 256)
	for _, subj := range []string{"$JS.API.STREAM.CREATE.*", "$JS.API.STREAM.UPDATE.*"} {
		if _, err := spy.ChanSubscribe(subj, reqs); err != nil {
			t.Fatal(err)
		}
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	first := openStore(t, servers, Options{Prefix: "direct"})
	second := openStore(t, servers, Options{Prefix: "direct"})
	// The requests reached the server before their answers; the spy's
	// PONG comes after them on its connection.
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	direct := map[string]bool{"DIRECT_INDEX": true, "KV_DIRECT_LEASES": false, "OBJ_DIRECT_BLOBS": false}
	for i := range ShardsFor(1) {
		direct[fmt.Sprintf("DIRECT_RUNS_%d", i)] = true
		direct[fmt.Sprintf("KV_DIRECT_HEADS_%d", i)] = true
	}
	seen := map[string]int{}
	for len(reqs) > 0 {
		m := <-reqs
		var cfg jetstream.StreamConfig
		if err := json.Unmarshal(m.Data, &cfg); err != nil {
			t.Fatalf("%s: %v", m.Subject, err)
		}
		seen[cfg.Name]++
		if want, ok := direct[cfg.Name]; !ok || cfg.AllowDirect != want {
			t.Errorf("%s: direct gets %v, want %v", m.Subject, cfg.AllowDirect, want)
		}
	}
	ctx := context.Background()
	for name, want := range direct {
		if seen[name] < 1 {
			t.Errorf("no request made stream %s (seen: %v)", name, seen)
		}
		for _, s := range []*Store{first, second} {
			st, err := s.js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if st.CachedInfo().Config.AllowDirect != want {
				t.Errorf("%s: direct gets %v, want %v", name, !want, want)
			}
		}
	}
	if err := first.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOpenOverNatsBuckets: a store whose buckets and object store nats.go
// made (as flock did before it declared their streams itself: direct gets
// on, turned off afterwards) opens, its streams keep their messages and
// allow no direct gets, and its buckets are written and read.
func TestOpenOverNatsBuckets(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	js, err := jetstream.New(connect(t, servers...))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, b := range []string{"OLD_LEASES"} {
		kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, History: 1, Storage: jetstream.FileStorage, Replicas: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "before", []byte("kept")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "OLD_BLOBS", Storage: jetstream.FileStorage, Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, servers, Options{Prefix: "old"})
	for _, kv := range []jetstream.KeyValue{s.leases} {
		e, err := kv.Get(ctx, "before")
		if err != nil || string(e.Value()) != "kept" {
			t.Fatalf("%s: the key written before: %v", kv.Bucket(), err)
		}
	}
	for _, name := range []string{"KV_OLD_LEASES", "OBJ_OLD_BLOBS"} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if st.CachedInfo().Config.AllowDirect {
			t.Errorf("%s allows direct gets", name)
		}
	}
	id := "01m8direct0000ab"
	if _, err := s.Claim(ctx, id, "n1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.blobs.PutBytes(ctx, "b", []byte("blob")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.blobs.GetBytes(ctx, "b"); err != nil || string(b) != "blob" {
		t.Fatalf("blob: %q, %v", b, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
