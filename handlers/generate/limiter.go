package generate

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/flockrun/flock/configs"
)

// limiter bounds the calls to one endpoint model: a token bucket for
// requests per minute and a semaphore for concurrency. Either may be nil
// (unlimited). Every HTTP attempt (retries and n-emulation calls included)
// takes one token and holds one slot while in flight.
type limiter struct {
	rpm, maxConc int
	// what names where the limit comes from, for messages: "the server's
	// models.KEY" or "models.KEY".
	what   string
	bucket *bucket
	sem    *semaphore.Weighted
}

func newLimiter(rpm, maxConc int, what string) *limiter {
	l := &limiter{rpm: rpm, maxConc: maxConc, what: what}
	if rpm > 0 {
		l.bucket = newBucket(rpm, time.Now)
	}
	if maxConc > 0 {
		l.sem = semaphore.NewWeighted(int64(maxConc))
	}
	return l
}

// sharedKey identifies an operator limiter: the server key that matched
// and, for a model-name key, the base URL (each endpoint counted apart).
type sharedKey struct{ serverKey, baseURL string }

// serverLimits holds the operator's limits (Options.ModelLimits), indexed
// for matching. It is read-only after New.
type serverLimits struct {
	byName map[string]configs.ModelLimits
	// byURL is keyed by base URL without trailing slashes.
	byURL map[string]configs.ModelLimits
	// urlKey maps a trimmed base URL back to the key the operator wrote.
	urlKey map[string]string
}

func newServerLimits(in map[string]configs.ModelLimits) serverLimits {
	sl := serverLimits{byName: map[string]configs.ModelLimits{}, byURL: map[string]configs.ModelLimits{}, urlKey: map[string]string{}}
	for k, l := range in {
		if !strings.Contains(k, "://") {
			sl.byName[k] = l
			continue
		}
		u := strings.TrimRight(k, "/")
		sl.byURL[u] = l
		sl.urlKey[u] = k
	}
	return sl
}

// match finds the operator's limits for m: the model name sent to the
// endpoint first, then the base URL. ok is false when neither is listed.
func (sl serverLimits) match(m *model) (l configs.ModelLimits, k sharedKey, what string, ok bool) {
	if l, ok := sl.byName[m.name]; ok {
		return l, sharedKey{m.name, m.baseURL}, fmt.Sprintf("the server's models.%s", m.name), true
	}
	if l, ok := sl.byURL[m.baseURL]; ok {
		key := sl.urlKey[m.baseURL]
		return l, sharedKey{serverKey: key}, fmt.Sprintf("the server's models[%q]", key), true
	}
	return configs.ModelLimits{}, sharedKey{}, "", false
}

// limiters returns the limiters a call of runID through m goes through,
// the run's own first: the run's limiter (from its settings' models.KEY,
// private to the run) and the operator's (shared by all runs). A run's
// limits can only add a tighter cap for its own calls: the shared limiter
// comes from the server settings alone, so no run can lift it.
func (h *Handler) limiters(runID string, m *model) []*limiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*limiter
	if m.rpm > 0 || m.maxConc > 0 {
		rl := h.runLimiters[runID]
		if rl == nil {
			rl = map[string]*limiter{}
			h.runLimiters[runID] = rl
		}
		l := rl[m.key]
		if l == nil || l.rpm != m.rpm || l.maxConc != m.maxConc {
			l = newLimiter(m.rpm, m.maxConc, "models."+m.key)
			rl[m.key] = l
		}
		out = append(out, l)
	}
	if lim, k, what, ok := h.serverLimits.match(m); ok && (lim.RequestsPerMinute > 0 || lim.MaxConcurrency > 0) {
		l := h.shared[k]
		if l == nil {
			l = newLimiter(lim.RequestsPerMinute, lim.MaxConcurrency, what)
			h.shared[k] = l
		}
		out = append(out, l)
	}
	return out
}

// closeRunLimiters forgets the run's own limiters (calls in flight finish
// under them).
func (h *Handler) closeRunLimiters(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.runLimiters, runID)
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
	d, _ := b.reserveWithin(math.MaxInt64)
	return d
}

// reserveWithin books the next token if it comes within limit and returns
// how long to wait for it; when it would come later, nothing is booked and
// ok is false (d is then the wait it would have taken).
func (b *bucket) reserveWithin(limit time.Duration) (d time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	tat := b.tat
	if tat.Before(now) {
		tat = now
	}
	wait := max(0, tat.Sub(now)-b.tolerance)
	if wait > limit {
		return wait, false
	}
	b.tat = tat.Add(b.interval)
	return wait, true
}

// wait blocks until a token is available or ctx is done. A token booked by
// a cancelled wait is not returned to the bucket.
func (b *bucket) wait(ctx context.Context) error {
	return sleep(ctx, b.reserve())
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
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
