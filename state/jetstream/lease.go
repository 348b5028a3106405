package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
)

// leaseRec is the value of a run's key in the leases bucket.
type leaseRec struct {
	Owner string `json:"owner"`
	// Expires is when the lease lapses, in Unix nanoseconds by the clock
	// of the node that wrote it (Options.Now).
	Expires int64 `json:"expires"`
}

// leaseAttempts bounds the retries of a lease call against concurrent
// writers of the same lease.
const leaseAttempts = 32

// readLease returns run key's lease and its revision (zero values if
// none), from the bucket's leader.
func (s *Store) readLease(ctx context.Context, key string) (leaseRec, uint64, error) {
	e, err := s.leases.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return leaseRec{}, 0, nil
	}
	if err != nil {
		return leaseRec{}, 0, err
	}
	var l leaseRec
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return leaseRec{}, 0, fmt.Errorf("%w: %w: lease of run key %s: %v", state.ErrCorrupt, ErrCorrupt, key, err)
	}
	return l, e.Revision(), nil
}

// writeLease writes l if the lease is still at revision rev (0: absent),
// and remembers what it wrote (see leaseMemo).
func (s *Store) writeLease(ctx context.Context, key string, l leaseRec, rev uint64) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	var now uint64
	if rev == 0 {
		now, err = s.leases.Create(ctx, key, b)
	} else {
		now, err = s.leases.Update(ctx, key, b, rev)
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if err != nil || l.Owner == "" {
		delete(s.leaseRevs, key)
		return err
	}
	if _, ok := s.leaseRevs[key]; !ok && len(s.leaseRevs) >= maxCached {
		for k := range s.leaseRevs { // an arbitrary entry: map order is random
			delete(s.leaseRevs, k)
			break
		}
	}
	s.leaseRevs[key] = leaseMemo{owner: l.Owner, rev: now}
	return nil
}

// leaseMemo is the lease this store last wrote for a run: its owner and
// the revision the write made. While the lease is still at that revision
// nobody else wrote it since, so its owner may renew or release it with
// one revision-checked write, without reading it first; a write that
// finds another revision reads the lease and decides on what it holds.
type leaseMemo struct {
	owner string
	rev   uint64
}

// memoRev returns the revision of owner's lease on run key as this store
// last wrote it, if it did.
func (s *Store) memoRev(key, owner string) (uint64, bool) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	m, ok := s.leaseRevs[key]
	if !ok || m.owner != owner {
		return 0, false
	}
	return m.rev, true
}

// Claim gives owner the lease on run id until ttl from now, unless another
// owner holds an unexpired one (state.ErrLeaseHeld). The check and the
// write are one revision-checked update of the run's key in the leases
// bucket, so of two owners claiming at once one wins.
func (s *Store) Claim(ctx context.Context, id, owner string, ttl time.Duration) (state.Lease, error) {
	if err := s.checkLease(ctx, id, owner, ttl); err != nil {
		return state.Lease{}, fmt.Errorf("claim: %w", err)
	}
	key := runKey(id)
	for range leaseAttempts {
		l, rev, err := s.readLease(ctx, key)
		if err != nil {
			return state.Lease{}, fmt.Errorf("claim run %s: %w", id, unavailable(err))
		}
		now := s.opts.Now()
		if rev != 0 && l.Owner != "" && l.Owner != owner && now.UnixNano() < l.Expires {
			return state.Lease{}, fmt.Errorf("%w: run %s is held by %s until %s", state.ErrLeaseHeld, id, l.Owner,
				time.Unix(0, l.Expires).UTC().Format(time.RFC3339Nano))
		}
		exp := now.Add(ttl)
		err = s.writeLease(ctx, key, leaseRec{Owner: owner, Expires: exp.UnixNano()}, rev)
		if isWrongLast(err) {
			continue
		}
		if err != nil {
			return state.Lease{}, fmt.Errorf("claim run %s: %w", id, unavailable(err))
		}
		return state.Lease{RunID: id, Owner: owner, Expires: exp}, nil
	}
	return state.Lease{}, fmt.Errorf("claim run %s: gave up against concurrent claims", id)
}

// Renew extends owner's lease on run id to ttl from now, or fails with
// state.ErrLeaseLost if owner no longer holds it (released, or claimed by
// another owner). Like the bbolt store, it renews an expired lease no one
// else claimed.
func (s *Store) Renew(ctx context.Context, id, owner string, ttl time.Duration) (state.Lease, error) {
	if err := s.checkLease(ctx, id, owner, ttl); err != nil {
		return state.Lease{}, fmt.Errorf("renew: %w", err)
	}
	key := runKey(id)
	if rev, ok := s.memoRev(key, owner); ok {
		// The lease as this store wrote it: renewed in one write
		// unless another owner (or this one, elsewhere) wrote since.
		exp := s.opts.Now().Add(ttl)
		err := s.writeLease(ctx, key, leaseRec{Owner: owner, Expires: exp.UnixNano()}, rev)
		if err == nil {
			return state.Lease{RunID: id, Owner: owner, Expires: exp}, nil
		}
		if !isWrongLast(err) {
			return state.Lease{}, fmt.Errorf("renew run %s: %w", id, unavailable(err))
		}
	}
	for range leaseAttempts {
		l, rev, err := s.readLease(ctx, key)
		if err != nil {
			return state.Lease{}, fmt.Errorf("renew run %s: %w", id, unavailable(err))
		}
		if rev == 0 || l.Owner != owner {
			return state.Lease{}, fmt.Errorf("%w: run %s, owner %s", state.ErrLeaseLost, id, owner)
		}
		exp := s.opts.Now().Add(ttl)
		err = s.writeLease(ctx, key, leaseRec{Owner: owner, Expires: exp.UnixNano()}, rev)
		if isWrongLast(err) {
			continue
		}
		if err != nil {
			return state.Lease{}, fmt.Errorf("renew run %s: %w", id, unavailable(err))
		}
		return state.Lease{RunID: id, Owner: owner, Expires: exp}, nil
	}
	return state.Lease{}, fmt.Errorf("renew run %s: gave up against concurrent claims", id)
}

// Release ends owner's lease on run id so that another owner may claim it
// at once; releasing a lease owner does not hold is a no-op.
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed.Load() {
		return state.ErrClosed
	}
	if err := state.CheckRunID(id); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if err := s.awaitBound(ctx); err != nil {
		return fmt.Errorf("release run %s: %w", id, err)
	}
	key := runKey(id)
	if rev, ok := s.memoRev(key, owner); ok {
		err := s.writeLease(ctx, key, leaseRec{}, rev)
		if err == nil {
			return nil
		}
		if !isWrongLast(err) {
			return fmt.Errorf("release run %s: %w", id, unavailable(err))
		}
	}
	for range leaseAttempts {
		l, rev, err := s.readLease(ctx, key)
		if err != nil {
			return fmt.Errorf("release run %s: %w", id, unavailable(err))
		}
		if rev == 0 || l.Owner != owner {
			return nil
		}
		err = s.writeLease(ctx, key, leaseRec{}, rev)
		if isWrongLast(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("release run %s: %w", id, unavailable(err))
		}
		return nil
	}
	return fmt.Errorf("release run %s: gave up against concurrent claims", id)
}

// checkLease checks a lease call's arguments.
func (s *Store) checkLease(ctx context.Context, id, owner string, ttl time.Duration) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return state.CheckLease(id, owner, ttl)
}
