package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// lossyDriver answers the control requests of run id in place of a
// driving node, and loses (never answers) the first one: core NATS
// carries a request and its reply at most once.
type lossyDriver struct {
	mu    sync.Mutex
	asked int
	code  string // the reply's code from the second request on
}

func (l *lossyDriver) subscribe(t *testing.T, nc *nats.Conn, id string) {
	t.Helper()
	sub, err := nc.Subscribe(controlPrefix+token(id), func(m *nats.Msg) {
		l.mu.Lock()
		l.asked++
		first, code := l.asked == 1, l.code
		l.mu.Unlock()
		if first {
			return // lost
		}
		b, _ := json.Marshal(controlReply{Code: code})
		_ = m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func (l *lossyDriver) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asked
}

// TestControlAsksAgainAfterLostReply: a cancel or pause whose request or
// reply was lost is asked again (a reply lost while a restarted NATS
// server rejoined left the asker waiting its whole minute, then a 503);
// when the second ask finds the run ended or no longer driven, the first
// may have done it, and the caller is told to read the run again
// (state.ErrUnavailable). An answer to a question is not asked twice.
func TestControlAsksAgainAfterLostReply(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	d := c.nodes[1].m.Dispatcher
	for _, tt := range []struct {
		action      workflows.Action
		code        string
		unavailable bool
	}{
		{workflows.ActionCancel, "", false},
		{workflows.ActionPause, "", false},
		{workflows.ActionCancel, "ended", true},
		{workflows.ActionPause, "not_driven", true},
	} {
		id := "lossy-" + string(tt.action) + "-" + tt.code
		l := &lossyDriver{code: tt.code}
		l.subscribe(t, c.nodes[1].dispatch, id)
		handled, err := d.Control(context.Background(), id, workflows.ControlRequest{Action: tt.action})
		if !handled || l.count() != 2 || errors.Is(err, state.ErrUnavailable) != tt.unavailable || (err != nil) != tt.unavailable {
			t.Fatalf("%s answered %q the second time: handled %v, %v, asked %d times; want asked twice, unavailable %v",
				tt.action, tt.code, handled, err, l.count(), tt.unavailable)
		}
	}
	l := &lossyDriver{}
	l.subscribe(t, c.nodes[1].dispatch, "lossy-answer")
	ctx, cancel := context.WithTimeout(context.Background(), 2*controlReask)
	defer cancel()
	if _, err := d.Control(ctx, "lossy-answer", workflows.ControlRequest{Action: workflows.ActionAnswer, Op: "lossy-answer/1/0"}); err == nil || l.count() != 1 {
		t.Fatalf("an answer whose request was lost: %v, asked %d times; want asked once, and an error", err, l.count())
	}
}
