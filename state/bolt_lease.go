package state

import (
	"context"
	"fmt"
	"time"
)

// Claim gives owner the lease on run id until ttl from now (see Leaser).
// The bbolt store keeps leases in memory: one process holds the file, and
// a restarted process starts with no lease held.
func (s *BoltStore) Claim(ctx context.Context, id, owner string, ttl time.Duration) (Lease, error) {
	if err := checkLease(ctx, id, owner, ttl); err != nil {
		return Lease{}, fmt.Errorf("claim: %w", err)
	}
	if s.isClosed.Load() {
		return Lease{}, ErrClosed
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	now := s.now()
	if l, ok := s.leases[id]; ok && l.Owner != owner && now.Before(l.Expires) {
		return Lease{}, fmt.Errorf("%w: run %s is held by %s until %s", ErrLeaseHeld, id, l.Owner, l.Expires.UTC().Format(time.RFC3339Nano))
	}
	l := Lease{RunID: id, Owner: owner, Expires: now.Add(ttl)}
	s.leases[id] = l
	return l, nil
}

// Renew extends owner's lease on run id (see Leaser). An expired lease no
// one else claimed is renewed.
func (s *BoltStore) Renew(ctx context.Context, id, owner string, ttl time.Duration) (Lease, error) {
	if err := checkLease(ctx, id, owner, ttl); err != nil {
		return Lease{}, fmt.Errorf("renew: %w", err)
	}
	if s.isClosed.Load() {
		return Lease{}, ErrClosed
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	l, ok := s.leases[id]
	if !ok || l.Owner != owner {
		return Lease{}, fmt.Errorf("%w: run %s, owner %s", ErrLeaseLost, id, owner)
	}
	l.Expires = s.now().Add(ttl)
	s.leases[id] = l
	return l, nil
}

// Release ends owner's lease on run id, if owner holds it.
func (s *BoltStore) Release(ctx context.Context, id, owner string) error {
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
	return CheckLease(id, owner, ttl)
}
