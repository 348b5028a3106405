package state

import "context"

// RunCounts are how many runs a store holds, by status.
type RunCounts struct {
	Total     int
	Running   int
	Paused    int
	Succeeded int
	Failed    int
	Cancelled int
}

// Count adds one run of status st to its status's count (Total is the
// caller's: a store may count runs whose status it cannot read).
func (c *RunCounts) Count(st Status) {
	switch st {
	case StatusRunning:
		c.Running++
	case StatusPaused:
		c.Paused++
	case StatusSucceeded:
		c.Succeeded++
	case StatusFailed:
		c.Failed++
	case StatusCancelled:
		c.Cancelled++
	}
}

// RunCounter is implemented by stores that count their runs by status
// (both of flock's stores; the contract suite requires it). It is an
// optional capability of a Reader, found by type assertion.
type RunCounter interface {
	// CountRuns counts every stored run by status.
	CountRuns(ctx context.Context) (RunCounts, error)
}

// ChildCounter is implemented by stores that count a run's direct
// children without reading their heads (a list of runs shows how many
// each has). It is an optional capability of a Reader, found by type
// assertion; CountChildren of an unknown run is 0.
type ChildCounter interface {
	CountChildren(ctx context.Context, id string) (int, error)
}
