package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
)

func TestMetrics(t *testing.T) {
	st := teststore.Open(t)
	for i := range 2 {
		c := &state.Commit{RunID: fmt.Sprint("r", i), Run: &state.Run{Status: state.StatusRunning}}
		if err := st.Commit(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	s := st.Stats()
	m := New(st, func() int { return 3 })
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
		fmt.Sprint(`flock_store_commits_total `, s.Commits),
		fmt.Sprint(`flock_store_transactions_total `, s.Txs),
		fmt.Sprint(`flock_store_bytes_total `, s.Bytes),
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetricsStoreWithoutStats: a store that is not a StatsReporter gets
// no store counters, and nothing fails.
func TestMetricsStoreWithoutStats(t *testing.T) {
	plain := struct{ state.Store }{teststore.Open(t)} // hides Stats
	m := New(plain, nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if strings.Contains(string(body), "flock_store_") || !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("metrics of a store without stats:\n%s", body)
	}
}
