package state

import (
	"context"
	"iter"
)

// OpLister is the part of a Reader that lists a run's ops.
type OpLister interface {
	Ops(ctx context.Context, id string, after string, limit int) ([]Op, error)
}

// AllOps yields run id's ops in journal order (step, then index), read a
// page at a time. A read error is yielded once, with a zero Op, and ends
// the sequence.
func AllOps(ctx context.Context, r OpLister, id string) iter.Seq2[Op, error] {
	return func(yield func(Op, error) bool) {
		const page = 1000
		for after := ""; ; {
			ops, err := r.Ops(ctx, id, after, page)
			if err != nil {
				yield(Op{}, err)
				return
			}
			for _, op := range ops {
				if !yield(op, nil) {
					return
				}
			}
			if len(ops) < page {
				return
			}
			after = ops[len(ops)-1].ID
		}
	}
}
