package bolt

import (
	"context"
	"fmt"
	"time"

	"github.com/flockrun/flock/state"
)

// Claim gives owner the lease on run id until ttl from now (see Leaser).
// The bbolt store keeps leases in memory: one process holds the file, and
// a restarted process starts with no lease held.
func (s *Store) Claim(ctx context.Context, id, owner string, ttl time.Duration) (state.Lease, error) {
	if err := checkLease(ctx, id, owner, ttl); err != nil {
		return state.Lease{}, fmt.Errorf("claim: %w", err)
	}
	if s.isClosed.Load() {
		return state.Lease{}, state.ErrClosed
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	now := s.now()
	if l, ok := s.leases[id]; ok && l.Owner != owner && now.Before(l.Expires) {
		return state.Lease{}, fmt.Errorf("%w: run %s is held by %s until %s", state.ErrLeaseHeld, id, l.Owner, l.Expires.UTC().Format(time.RFC3339Nano))
	}
	l := state.Lease{RunID: id, Owner: owner, Expires: now.Add(ttl)}
	s.leases[id] = l
	return l, nil
}

// Renew extends owner's lease on run id (see Leaser). An expired lease no
// one else claimed is renewed.
func (s *Store) Renew(ctx context.Context, id, owner string, ttl time.Duration) (state.Lease, error) {
	if err := checkLease(ctx, id, owner, ttl); err != nil {
		return state.Lease{}, fmt.Errorf("renew: %w", err)
	}
	if s.isClosed.Load() {
		return state.Lease{}, state.ErrClosed
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	l, ok := s.leases[id]
	if !ok || l.Owner != owner {
		return state.Lease{}, fmt.Errorf("%w: run %s, owner %s", state.ErrLeaseLost, id, owner)
	}
	l.Expires = s.now().Add(ttl)
	s.leases[id] = l
	return l, nil
}

// Release ends owner's lease on run id, if owner holds it.
func (s *Store) Release(ctx context.Context, id, owner string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if l, ok := s.leases[id]; ok && l.Owner == owner {
		delete(s.leases, id)
	}
	return nil
}

// checkLease checks a lease call's context and arguments.
func checkLease(ctx context.Context, id, owner string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return state.CheckLease(id, owner, ttl)
}
