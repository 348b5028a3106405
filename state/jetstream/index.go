package jetstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
)

// The index stream holds one empty message per subject, the subject being
// the entry: "<prefix>.idx.u.<key>" for a run that may be unfinished and
// "<prefix>.idx.c.<parent key>.<key>" for a child. It is a superset of
// the truth, kept so without a transaction across it and the heads: an
// entry is put before the head write that needs it and removed (the
// subject purged) after the head write that ends it. Readers list the
// subjects (stream info, answered by the stream leader) and check each
// candidate's head.

// idxUnfinished and idxChild return index subjects.
func (s *Store) idxUnfinished(key string) string { return s.subjIdx + "u." + key }

func (s *Store) idxChild(parentKey, key string) string {
	return s.subjIdx + "c." + parentKey + "." + key
}

// indexBefore sends the index entries the commit's head will need, marks
// them in w.env, and returns the wait for their acknowledgements, which
// must succeed before the head is written: the entries go out with the
// commit's log appends rather than in a round trip of their own.
func (s *Store) indexBefore(ctx context.Context, p *prepared, old *envelope, w *write) func() error {
	if p.head == nil {
		return func() error { return nil }
	}
	var subjs []string
	if !p.head.Status.Terminal() && !old.Unf {
		subjs = append(subjs, s.idxUnfinished(p.key))
	}
	w.env.Unf = !p.head.Status.Terminal()
	if p.head.ParentID != "" && !old.Child {
		subjs = append(subjs, s.idxChild(runKey(p.head.ParentID), p.key))
		w.env.Child = true
	}
	futs := make([]jetstream.PubAckFuture, len(subjs))
	errs := make([]error, len(subjs))
	for i, subj := range subjs {
		futs[i], errs[i] = s.js.PublishMsgAsync(&nats.Msg{Subject: subj}, stallWait(ctx))
	}
	return func() error {
		for i, f := range futs {
			if errs[i] == nil {
				select {
				case <-f.Ok():
				case errs[i] = <-f.Err():
				case <-ctx.Done():
					errs[i] = ctx.Err()
				}
			}
			if errs[i] != nil {
				return fmt.Errorf("index %s: %w", subjs[i], errs[i])
			}
		}
		return nil
	}
}

// indexAfter removes the unfinished entry of a run whose applied head
// ended it. A failure leaves a stale entry, which readers skip.
func (s *Store) indexAfter(ctx context.Context, p *prepared, old *envelope) {
	if p.head != nil && p.head.Status.Terminal() && old.Unf {
		_ = s.index.Purge(ctx, jetstream.WithPurgeSubject(s.idxUnfinished(p.key)))
	}
}

// indexed lists the run keys whose index subjects start with prefix
// (after the index root), in no order: from the stream's leader (stream
// info with a subject filter), or, for a failover reader whose leader does
// not answer in time, from a replica (at most 1024 keys then).
func (r reader) indexed(ctx context.Context, prefix string) ([]string, error) {
	s := r.s
	root := s.subjIdx + prefix
	fromLeader := func(ctx context.Context) ([]string, error) {
		// A failover reader of a store not bound yet (Options.BindLater)
		// asks a replica.
		if err := s.boundWithin(ctx, 0); err != nil {
			return nil, err
		}
		info, err := s.index.Info(ctx, jetstream.WithSubjectFilter(root+">"))
		if err != nil {
			return nil, err
		}
		subjects := make([]string, 0, len(info.State.Subjects))
		for subj := range info.State.Subjects {
			subjects = append(subjects, subj)
		}
		return subjects, nil
	}
	var subjects []string
	var err error
	if r.failover {
		fctx, fcancel := withGetTimeout(ctx)
		subjects, err = failover(fctx, s, s.indexName, fromLeader, func(ctx context.Context) ([]string, error) {
			return fromReplicas(ctx, func(ctx context.Context) ([]string, error) {
				return s.directLastSubjects(ctx, s.indexName, root+">")
			})
		})
		fcancel()
	} else {
		subjects, err = fromLeader(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("list index %s: %w", prefix, unavailable(err))
	}
	keys := make([]string, 0, len(subjects))
	for _, subj := range subjects {
		keys = append(keys, strings.TrimPrefix(subj, root))
	}
	return keys, nil
}

// headsOf reads the heads of run keys from the leader, concurrently, in
// ID order; keys without a head are left out, unreadable heads returned
// as errors beside the others.
func (r reader) headsOf(ctx context.Context, keys []string) ([]state.Run, []error, error) {
	if err := r.check(ctx); err != nil {
		return nil, nil, err
	}
	var (
		mu   sync.Mutex
		runs []state.Run
		bad  []error
		fail error
		wg   sync.WaitGroup
	)
	next := make(chan string)
	for range min(16, len(keys)) {
		wg.Go(func() {
			for key := range next {
				c, err := r.load(ctx, key)
				var h state.Run
				var ok bool
				if err == nil {
					h, ok, err = c.env.head(key)
				}
				mu.Lock()
				switch {
				case errors.Is(err, state.ErrCorrupt) || errors.Is(err, state.ErrSchema):
					bad = append(bad, err)
				case err != nil:
					fail = cmp.Or(fail, err)
				case ok:
					runs = append(runs, h)
				}
				mu.Unlock()
			}
		})
	}
	for _, k := range keys {
		next <- k
	}
	close(next)
	wg.Wait()
	if fail != nil {
		return nil, nil, fmt.Errorf("read heads: %w", unavailable(fail))
	}
	slices.SortFunc(runs, func(a, b state.Run) int { return cmp.Compare(a.ID, b.ID) })
	return runs, bad, nil
}
