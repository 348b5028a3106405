package workflows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/flockrun/flock/state"
)

// errLeaseLost is the cancellation cause of a run whose lease another
// owner took: this executor stops driving it without writing.
var errLeaseLost = errors.New("lease on the run lost to another owner")

// defaultOwner names this process in leases: host, pid and a random
// suffix, so that two executors never share a name.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "flock"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Owner returns the name this executor holds its runs' leases under.
func (e *Executor) Owner() string { return e.cfg.Owner }

// claim takes (or renews) this executor's lease on run id.
func (e *Executor) claim(ctx context.Context, id string) error {
	if _, err := e.store.Claim(ctx, id, e.cfg.Owner, e.cfg.LeaseTTL); err != nil {
		return fmt.Errorf("claim run %s: %w", id, err)
	}
	return nil
}

// release gives up this executor's lease on run id (best effort: an
// unreleased lease expires).
func (e *Executor) release(id string) {
	if err := e.store.Release(context.Background(), id, e.cfg.Owner); err != nil {
		e.log.Warn("release run lease", "run", id, "err", err)
	}
}

// renewLeases renews the lease of every driven run each LeaseTTL/3 until
// the executor stops. A run whose lease was lost (another owner claimed
// it after it expired) stops being driven. It runs on a goroutine owned by
// the executor (Start starts it, Stop waits for it).
func (e *Executor) renewLeases() {
	t := time.NewTicker(e.cfg.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-e.baseCtx.Done():
			return
		case <-t.C:
		}
		e.mu.Lock()
		runs := make([]*runner, 0, len(e.runs))
		for _, r := range e.runs {
			runs = append(runs, r)
		}
		e.mu.Unlock()
		for _, r := range runs {
			_, err := e.store.Renew(e.baseCtx, r.id, e.cfg.Owner, e.cfg.LeaseTTL)
			switch {
			case err == nil:
			case errors.Is(err, state.ErrLeaseLost):
				e.log.Error("lease on the run lost; another owner drives it now", "run", r.id, "err", err)
				r.cancel(errLeaseLost)
			case e.baseCtx.Err() != nil:
				return
			default:
				e.log.Warn("renew run lease", "run", r.id, "err", err)
			}
		}
	}
}
