package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
)

// TestAwaitFindsClosedSession is the regression test of a hang: a program
// that exits before its session run's first wait op has looked up the
// session closes it; the wait op must still find it (and see it closed),
// or the session run waits forever. Release, once the run has ended,
// unregisters it.
func TestAwaitFindsClosedSession(t *testing.T) {
	g := New(nil)
	defer g.Close()
	s, err := g.Open("run1", SessionConfig{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	found, err := g.Await(ctx, "run1")
	if err != nil || found != s {
		t.Fatalf("Await after Close: %v", err)
	}
	calls, closed, err := found.Take(ctx)
	if err != nil || !closed || len(calls) != 0 {
		t.Fatalf("Take = %v, %v, %v; want closed", calls, closed, err)
	}
	if _, err := s.Do(ctx, operations.GenerateRequest{Model: "m"}, ""); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	s.Release()
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := g.Await(short, "run1"); err == nil {
		t.Fatal("Await found a released session")
	}
}

// TestReplayAnswersInOrder checks replay: the k-th identical request of an
// attempt gets the k-th recorded answer, the next one is a new call.
func TestReplayAnswersInOrder(t *testing.T) {
	g := New(nil)
	defer g.Close()
	req := operations.GenerateRequest{Model: "m", Messages: []operations.Message{{Role: "user", Content: "again"}}}
	rec := func(op, content string) Recorded {
		return Recorded{OpID: op, Request: req, Result: operations.GenerateResult{Outputs: []operations.Output{{Content: content}}}}
	}
	s, err := g.Open("run2", SessionConfig{Model: "m", Replay: []Recorded{rec("r/2/0", "first"), rec("r/4/0", "second"), rec("r/2/0", "dup")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, want := range []string{"first", "second"} {
		tr, err := s.Do(ctx, req, "")
		if err != nil || !tr.Replayed || tr.Result.Outputs[0].Content != want {
			t.Fatalf("replay: %+v, %v; want %q", tr, err, want)
		}
	}
	// The third is new: it waits in the queue for the session run.
	done := make(chan error, 1)
	go func() {
		_, err := s.Do(ctx, req, "")
		done <- err
	}()
	calls, closed, err := s.Take(ctx)
	if err != nil || closed || len(calls) != 1 {
		t.Fatalf("Take = %v, %v, %v", calls, closed, err)
	}
	s.Deliver(calls[0].ID, "r/6/0", req, operations.Result{Kind: operations.KindGenerate,
		Data: &operations.GenerateResult{Outputs: []operations.Output{{Content: "third"}}}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tr := s.Trace()
	if len(tr) != 3 || tr[2].Replayed || tr[2].OpID != "r/6/0" || tr[2].Result.Outputs[0].Content != "third" {
		t.Fatalf("trace %+v", tr)
	}
}
