package generate

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// limiterKey identifies a rate-limited endpoint model.
type limiterKey struct{ name, baseURL string }

// limiter bounds the calls to one endpoint model across all runs: a token
// bucket for requests per minute and a semaphore for concurrency. Either
// may be nil (unlimited). Every HTTP attempt (retries and n-emulation calls
// included) takes one token and holds one slot while in flight.
type limiter struct {
	rpm, maxConc int
	bucket       *bucket
	sem          *semaphore.Weighted
}

// limiter returns the shared limiter of m. When a run declares different
// limits for the same model and base URL than the limiter in use, a new
// limiter replaces it for later calls (the latest settings win; calls in
// flight finish under the old one).
func (h *Handler) limiter(m *model) *limiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := limiterKey{m.name, m.baseURL}
	if l, ok := h.limiters[k]; ok && l.rpm == m.rpm && l.maxConc == m.maxConc {
		return l
	}
	l := &limiter{rpm: m.rpm, maxConc: m.maxConc}
	if m.rpm > 0 {
		l.bucket = newBucket(m.rpm, time.Now)
	}
	if m.maxConc > 0 {
		l.sem = semaphore.NewWeighted(int64(m.maxConc))
	}
	h.limiters[k] = l
	return l
}

// acquire waits for a token and a slot; the returned release frees the slot.
func (l *limiter) acquire(ctx context.Context) (release func(), err error) {
	if l.bucket != nil {
		if err := l.bucket.wait(ctx); err != nil {
			return nil, err
		}
	}
	if l.sem != nil {
		if err := l.sem.Acquire(ctx, 1); err != nil {
			return nil, err
		}
		return func() { l.sem.Release(1) }, nil
	}
	return func() {}, nil
}

// bucket is a token bucket (GCRA form): one token every interval, with a
// burst of one second's worth of tokens (at least one), so 60 rpm spaces
// calls a second apart and 600 rpm allows bursts of 10.
type bucket struct {
	interval time.Duration
	// tolerance is (burst-1)*interval.
	tolerance time.Duration
	now       func() time.Time

	mu sync.Mutex
	// tat is the theoretical arrival time of the next request; guarded by mu.
	tat time.Time
}

func newBucket(rpm int, now func() time.Time) *bucket {
	burst := max(1, rpm/60)
	iv := time.Minute / time.Duration(rpm)
	return &bucket{interval: iv, tolerance: time.Duration(burst-1) * iv, now: now}
}

// reserve books the next token and returns how long to wait for it.
func (b *bucket) reserve() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	tat := b.tat
	if tat.Before(now) {
		tat = now
	}
	wait := tat.Sub(now) - b.tolerance
	b.tat = tat.Add(b.interval)
	return max(0, wait)
}

// wait blocks until a token is available or ctx is done. A token booked by
// a cancelled wait is not returned to the bucket.
func (b *bucket) wait(ctx context.Context) error {
	d := b.reserve()
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
