package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
)

// The HTTP benchmarks time b.N requests (or events) over real HTTP on
// 127.0.0.1 and report the p50 and p90 of one round trip; run them with a
// fixed count so that every figure is over the same number of samples:
//
//	go test -run XXX -bench 'HTTP|SSE' -benchtime 1000x ./server

// reportLatencies reports the p50 and p90 of ds in microseconds.
func reportLatencies(b *testing.B, ds []time.Duration) {
	b.Helper()
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2])/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*9/10])/float64(time.Microsecond), "p90-µs")
}

// keepAliveClient returns a client with its own transport, so that every
// request after the first reuses one connection, and a counter of the
// requests that did not.
func keepAliveClient(b *testing.B) (*http.Client, func(*http.Request) *http.Request, *int) {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	fresh := new(int)
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !info.Reused {
			*fresh++
		}
	}}
	withTrace := func(r *http.Request) *http.Request {
		return r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	}
	return &http.Client{Transport: tr}, withTrace, fresh
}

// roundTrips sends b.N requests made by mk, each read to the end, and
// reports the latency percentiles. Every response must have status want,
// and all but the first request must reuse the connection.
func roundTrips(b *testing.B, want int, mk func() *http.Request) {
	b.Helper()
	client, withTrace, fresh := keepAliveClient(b)
	do := func() {
		res, err := client.Do(withTrace(mk()))
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if res.StatusCode != want {
			b.Fatalf("status %d, want %d: %s", res.StatusCode, want, body)
		}
	}
	do() // open the connection outside the timing
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		do()
		ds = append(ds, time.Since(t0))
	}
	b.StopTimer()
	if *fresh != 1 {
		b.Fatalf("%d connections opened for %d requests; want 1 (keep-alive)", *fresh, b.N+1)
	}
	reportLatencies(b, ds)
}

// BenchmarkHTTPGetRun times GET /runs/{id} of an ended run.
func BenchmarkHTTPGetRun(b *testing.B) {
	e := newEnv(b)
	id := e.start(b, "test.log", "")
	e.waitStatus(b, id, state.StatusSucceeded)
	roundTrips(b, http.StatusOK, func() *http.Request {
		r, err := http.NewRequest(http.MethodGet, e.base+"/runs/"+id, nil)
		if err != nil {
			b.Fatal(err)
		}
		return r
	})
}

// BenchmarkHTTPListOps times GET /runs/{id}/ops of an ended run with three
// ops: each op's request and result are converted to the API's view.
func BenchmarkHTTPListOps(b *testing.B) {
	e := newEnv(b)
	id := e.start(b, "test.log", "")
	e.waitStatus(b, id, state.StatusSucceeded)
	roundTrips(b, http.StatusOK, func() *http.Request {
		r, err := http.NewRequest(http.MethodGet, e.base+"/runs/"+id+"/ops", nil)
		if err != nil {
			b.Fatal(err)
		}
		return r
	})
}

// BenchmarkHTTPStartWorkflow times POST /start_workflow of test.fail, whose
// runs end in one phase: each start is one durable commit, and the run's
// end is another, in the background.
func BenchmarkHTTPStartWorkflow(b *testing.B) {
	e := newEnv(b)
	const body = `{"workflow":"test.fail","settings":{},"task":"bench"}`
	roundTrips(b, http.StatusCreated, func() *http.Request {
		r, err := http.NewRequest(http.MethodPost, e.base+"/start_workflow", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		return r
	})
}

// BenchmarkSSEDelivery times one event from the executor's publication to
// a client reading it on an open GET /runs/{id}/events stream. A run of
// bench.loop asks for one bash op per phase; each value sent on the env's
// step channel finishes one op, whose result and the next phase are one
// commit. A second subscriber on the executor stamps the commit's first
// event when it is published; the client stamps it when it has parsed it.
// The rest of the commit is read before the next step, so every event
// timed arrives on an idle stream.
func BenchmarkSSEDelivery(b *testing.B) {
	e := newEnv(b)
	e.ex.Registry().MustRegister(phases.Workflow{
		Name:  "bench.loop",
		Start: "step",
		Phases: []phases.PhaseSpec{{Name: "step", Next: []string{"step"},
			Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{
					Ops:  []operations.Request{operations.NewBash("true", 10)},
					Next: "step",
				}, nil
			}}},
	})
	id := e.start(b, "bench.loop", "")
	ch, unsubscribe := e.ex.Subscribe(id)
	defer unsubscribe()
	s := e.openEvents(b, id, "")
	// Read what the stream has replayed up to the first op waiting.
	ctx := context.Background()
	last := func() uint64 {
		evs, err := e.store.Events(ctx, id, 0, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) == 0 {
			return 0
		}
		return evs[len(evs)-1].Seq
	}
	testkit.CheckFor(b, 10*time.Second, func() error {
		if h, err := e.store.Run(ctx, id); err != nil || h.Step < 1 {
			return fmt.Errorf("the run has not committed its first phase (%v)", err)
		}
		return nil
	})
	streamTo := func(seq uint64) {
		for {
			ev, ok := s.next(b)
			if !ok {
				b.Fatalf("stream ended before event %d", seq)
			}
			if ev.id >= seq {
				return
			}
		}
	}
	liveTo := func(seq uint64) state.Event {
		for {
			select {
			case ev, ok := <-ch:
				if !ok {
					b.Fatal("subscription closed")
				}
				if ev.Seq >= seq {
					return ev
				}
			case <-time.After(10 * time.Second):
				b.Fatalf("no event %d within 10s", seq)
			}
		}
	}
	streamTo(last())
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		from := last()
		e.step <- struct{}{}
		first := liveTo(from + 1)
		t0 := time.Now()
		streamTo(first.Seq)
		ds = append(ds, time.Since(t0))
		// The rest of the commit, on both sides, untimed.
		b.StopTimer()
		end := last()
		if end > first.Seq {
			liveTo(end)
			streamTo(end)
		}
		b.StartTimer()
	}
	b.StopTimer()
	reportLatencies(b, ds)
}
