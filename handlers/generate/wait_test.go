package generate

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// waitCall is one Env.Waiting call.
type waitCall struct {
	reason    string
	until, at time.Time
}

// waitRecorder records Env.Waiting calls.
type waitRecorder struct {
	mu    sync.Mutex
	calls []waitCall
}

func (w *waitRecorder) waiting(reason string, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, waitCall{reason: reason, until: until, at: time.Now()})
}

func (w *waitRecorder) all() []waitCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]waitCall(nil), w.calls...)
}

// runEnv is a run with a time limit of limitS of which usedS are spent.
func runEnv(s *configs.RunSettings, w *waitRecorder, usedS, limitS float64) handlers.Env {
	return handlers.Env{RunID: "r", Settings: s, Waiting: w.waiting,
		Usage: func() (operations.RunUsage, operations.RunLimits) {
			return operations.RunUsage{Seconds: usedS}, operations.RunLimits{Seconds: limitS}
		}}
}

// always429 answers every request 429 with the given Retry-After header.
func always429(header, value string) func(http.ResponseWriter, int, map[string]any) {
	return func(w http.ResponseWriter, _ int, _ map[string]any) {
		w.Header().Set(header, value)
		writeJSON(w, 429, apiError("slow down"))
	}
}

// TestRetryAfterBeyondCapFailsAtOnce: an endpoint asking for an hour no
// longer holds the op (it held a run 30 minutes before): the op fails at
// once, naming the model, the wait asked and the setting.
func TestRetryAfterBeyondCapFailsAtOnce(t *testing.T) {
	fs := newFakeServer(t, always429("Retry-After", "3600"))
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	w := &waitRecorder{}
	s := liveSettings(fs, func(m *configs.Model) { m.MaxRetryWaitS = 0.2 })
	start := time.Now()
	r := h.Handle(context.Background(), runEnv(s, w, 0, 0), genReq(operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
	if d := time.Since(start); d > time.Second {
		t.Fatalf("op took %s", d)
	}
	for _, want := range []string{`model "m"`, "HTTP 429", "after 1 attempt", "asked to wait 3600 s", "models.m.max_retry_wait_s (0.2 s)", "slow down"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error %q lacks %q", r.Error, want)
		}
	}
	if fs.requests() != 1 || len(w.all()) != 0 {
		t.Fatalf("requests = %d, waits = %v", fs.requests(), w.all())
	}
}

// TestRetryWaitIsAnnounced: a wait within the bounds is taken, and the run
// is told why and until when, then told the wait is over.
func TestRetryWaitIsAnnounced(t *testing.T) {
	tests := []struct {
		name       string
		header     string
		value      string
		backoff    time.Duration // Options.BackoffBase and BackoffMax
		wantReason string
		wantWait   time.Duration // the until announced, from the wait's start
	}{
		{name: "Retry-After", header: "Retry-After", value: "0.3", wantReason: "rate limited by m (HTTP 429), retrying", wantWait: 300 * time.Millisecond},
		{name: "retry-after-ms", header: "Retry-After-Ms", value: "250", wantReason: "rate limited by m (HTTP 429), retrying", wantWait: 250 * time.Millisecond},
		{name: "backoff capped by max_retry_wait_s", backoff: time.Hour, wantReason: "m failed (HTTP 503), retrying", wantWait: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, n int, _ map[string]any) {
				if n > 1 {
					writeJSON(w, 200, textCompletion("ok"))
					return
				}
				if tt.header == "" {
					writeJSON(w, 503, apiError("busy"))
					return
				}
				always429(tt.header, tt.value)(w, n, nil)
			})
			h, _ := newTestHandlerWith(t, map[string]string{"OPENAI_API_KEY": testKey}, func(o *Options) {
				if tt.backoff > 0 {
					o.BackoffBase, o.BackoffMax = tt.backoff, tt.backoff
				}
			})
			w := &waitRecorder{}
			s := liveSettings(fs, func(m *configs.Model) { m.MaxRetryWaitS = 0.2 })
			if tt.header != "" {
				s.Models["m"] = withWait(s.Models["m"], 1)
			}
			start := time.Now()
			r := h.Handle(context.Background(), runEnv(s, w, 0, 0), genReq(operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
			elapsed := time.Since(start)
			mustGen(t, r)
			calls := w.all()
			if len(calls) != 2 {
				t.Fatalf("waiting calls = %+v, want a start and an end", calls)
			}
			begin, end := calls[0], calls[1]
			if begin.reason != tt.wantReason || end.reason != tt.wantReason || !end.until.IsZero() {
				t.Fatalf("calls = %+v, want reason %q then a zero until", calls, tt.wantReason)
			}
			if d := begin.until.Sub(begin.at); d < tt.wantWait-20*time.Millisecond || d > tt.wantWait+20*time.Millisecond {
				t.Fatalf("until is %s after the call, want about %s", d, tt.wantWait)
			}
			if end.at.Before(begin.until.Add(-5 * time.Millisecond)) {
				t.Fatalf("wait ended at %s, before its until %s", end.at, begin.until)
			}
			if elapsed < tt.wantWait || elapsed > tt.wantWait+time.Second {
				t.Fatalf("op took %s for a %s wait", elapsed, tt.wantWait)
			}
		})
	}
}

func withWait(m configs.Model, s float64) configs.Model {
	m.MaxRetryWaitS = s
	return m
}

// TestWaitsBoundedByRunTime: with a run time limit, no wait outlasts the
// run's remaining time: a retry that would come after it fails the op at
// once, naming limits.seconds.
func TestWaitsBoundedByRunTime(t *testing.T) {
	tests := []struct {
		name        string
		reply       func(http.ResponseWriter, int, map[string]any)
		backoff     time.Duration
		used, limit float64
		wantReqs    int
		wantErr     []string
	}{
		{name: "Retry-After longer than the time left", reply: always429("Retry-After", "2"), used: 9.7, limit: 10,
			wantReqs: 1, wantErr: []string{"asked to wait 2 s", "the run's time left", "limits.seconds 10 s"}},
		{name: "retries until the time left runs out", reply: always429("Retry-After-Ms", "200"), used: 9.45, limit: 10,
			wantReqs: 3, wantErr: []string{"after 3 attempts", "asked to wait 0.2 s", "limits.seconds 10 s"}},
		{name: "backoff longer than the time left", backoff: 2 * time.Second, used: 9.7, limit: 10,
			reply:    func(w http.ResponseWriter, _ int, _ map[string]any) { writeJSON(w, 500, apiError("boom")) },
			wantReqs: 1, wantErr: []string{"HTTP 500", "the next retry, in", "limits.seconds 10 s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, tt.reply)
			h, _ := newTestHandlerWith(t, map[string]string{"OPENAI_API_KEY": testKey}, func(o *Options) {
				if tt.backoff > 0 {
					o.BackoffBase, o.BackoffMax = tt.backoff, tt.backoff
				}
			})
			w := &waitRecorder{}
			s := liveSettings(fs, func(m *configs.Model) { m.MaxRetries = new(6) })
			remaining := time.Duration((tt.limit - tt.used) * float64(time.Second))
			start := time.Now()
			r := h.Handle(context.Background(), runEnv(s, w, tt.used, tt.limit), genReq(operations.GenerateRequest{Model: "m", Messages: userMsg("hi")}))
			elapsed := time.Since(start)
			for _, want := range append([]string{`model "m"`, "not retried"}, tt.wantErr...) {
				if !strings.Contains(r.Error, want) {
					t.Errorf("error %q lacks %q", r.Error, want)
				}
			}
			if fs.requests() != tt.wantReqs {
				t.Errorf("requests = %d, want %d", fs.requests(), tt.wantReqs)
			}
			if elapsed > remaining {
				t.Errorf("op took %s, more than the run's %s left", elapsed, remaining)
			}
			deadline := start.Add(remaining)
			for _, c := range w.all() {
				if c.until.After(deadline) {
					t.Errorf("wait announced until %s, after the run's deadline %s", c.until, deadline)
				}
			}
		})
	}
}

// TestTokenWaitBounded: a requests_per_minute token that would come later
// than max_retry_wait_s fails the op at once; a long enough one is waited
// for and announced.
func TestTokenWaitBounded(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
		writeJSON(w, 200, textCompletion("ok"))
	})
	h, _ := newTestHandlerWith(t, map[string]string{"OPENAI_API_KEY": testKey}, func(o *Options) {
		o.ModelLimits = map[string]configs.ModelLimits{"test-model": {RequestsPerMinute: 100}} // one per 0.6 s, burst 1
	})
	w := &waitRecorder{}
	tight := liveSettings(fs, func(m *configs.Model) { m.MaxRetryWaitS = 0.1 })
	req := genReq(operations.GenerateRequest{Model: "m", Messages: userMsg("hi")})
	mustGen(t, h.Handle(context.Background(), runEnv(tight, w, 0, 0), req))
	// Every limiter wait is announced from here on: the second call must
	// fail without one (no time is asserted).
	h.notice = 0
	r := h.Handle(context.Background(), runEnv(tight, w, 0, 0), req)
	if waits := w.all(); len(waits) != 0 || fs.requests() != 1 {
		t.Fatalf("second call waited %+v, requests = %d; want it refused at once", waits, fs.requests())
	}
	for _, want := range []string{`model "m"`, "the server's models.test-model.requests_per_minute (100)", "models.m.max_retry_wait_s (0.1 s)"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error %q lacks %q", r.Error, want)
		}
	}

	h.notice = 100 * time.Millisecond
	mustGen(t, h.Handle(context.Background(), runEnv(liveSettings(fs, nil), w, 0, 0), req))
	calls := w.all()
	if len(calls) != 2 || !strings.HasPrefix(calls[0].reason, "queued by the server's models.test-model.requests_per_minute (100) for m") || !calls[1].until.IsZero() {
		t.Fatalf("waiting calls = %+v", calls)
	}
	if d := calls[0].until.Sub(calls[0].at); d < 100*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("token wait announced for %s", d)
	}
}

func TestWaitTooLongIsSentinel(t *testing.T) {
	fs := newFakeServer(t, always429("Retry-After", "3600"))
	h, _ := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
	m, err := h.resolve(liveSettings(fs, nil), "m")
	if err != nil {
		t.Fatal(err)
	}
	if m.maxRetryWait != configs.DefaultModelMaxRetryWaitS*time.Second {
		t.Fatalf("default max_retry_wait = %s", m.maxRetryWait)
	}
	_, err = h.callOpenAI(context.Background(), handlers.Env{RunID: "r"}, m, &operations.GenerateRequest{Model: "m", Messages: userMsg("hi")})
	if !errors.Is(err, ErrWaitTooLong) || !strings.Contains(err.Error(), "max_retry_wait_s (60 s)") {
		t.Fatalf("err = %v", err)
	}
}
