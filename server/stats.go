package server

import (
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/state"
)

// countsTTL is how long GET /stats/runs answers from its last count: the
// viewer's runs list polls it, and a count reads every head.
const countsTTL = time.Second

// errNoCounts answers GET /stats/runs on a store that cannot count.
var errNoCounts = echo.NewHTTPError(http.StatusNotImplemented, "this store does not count runs")

// countCache holds the last count of GET /stats/runs.
type countCache struct {
	mu sync.Mutex
	at time.Time       // guarded by mu; when counts was read
	c  state.RunCounts // guarded by mu
}

// runCounts answers GET /stats/runs: the runs by status, at most countsTTL
// old. Concurrent callers share one count (the mutex is held while
// counting).
func (s *Server) runCounts(c *echo.Context) error {
	counter, ok := s.store.(state.RunCounter)
	if !ok {
		return errNoCounts
	}
	s.counts.mu.Lock()
	defer s.counts.mu.Unlock()
	if s.counts.at.IsZero() || time.Since(s.counts.at) >= countsTTL {
		got, err := counter.CountRuns(c.Request().Context())
		if err != nil {
			return err
		}
		s.counts.c, s.counts.at = got, time.Now()
	}
	n := s.counts.c
	return c.JSON(http.StatusOK, api.RunCounts{Total: n.Total, Running: n.Running, Paused: n.Paused,
		Succeeded: n.Succeeded, Failed: n.Failed, Cancelled: n.Cancelled})
}
