package telemetry

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
)

type stats state.BoltStats

func (s stats) Stats() state.BoltStats { return state.BoltStats(s) }

func TestMetrics(t *testing.T) {
	m := New(stats{Commits: 10, Txs: 4, Bytes: 900}, func() int { return 3 })
	m.RunStarted("script", false)
	m.RunStarted("script", true)
	m.PhaseCommitted("script", "run")
	m.OpFinished(operations.KindBash, true, 2*time.Millisecond)
	m.OpFinished(operations.KindBash, false, time.Millisecond)
	m.RunEnded("script", state.StatusSucceeded)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`flock_runs_started_total{resumed="false",workflow="script"} 1`,
		`flock_runs_started_total{resumed="true",workflow="script"} 1`,
		`flock_runs_ended_total{status="succeeded",workflow="script"} 1`,
		`flock_phase_commits_total{phase="run",workflow="script"} 1`,
		`flock_operations_total{kind="bash",outcome="ok"} 1`,
		`flock_operations_total{kind="bash",outcome="error"} 1`,
		`flock_operation_duration_seconds_count{kind="bash"} 2`,
		`flock_active_runs 3`,
		`flock_store_commits_total 10`,
		`flock_store_transactions_total 4`,
		`flock_store_bytes_total 900`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
