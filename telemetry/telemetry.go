package telemetry

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// Metrics holds flock's collectors in a registry of its own. It implements
// workflows.Observer.
type Metrics struct {
	reg         *prometheus.Registry
	runsStarted *prometheus.CounterVec
	runsEnded   *prometheus.CounterVec
	phases      *prometheus.CounterVec
	ops         *prometheus.CounterVec
	opSeconds   *prometheus.HistogramVec
}

// New returns Metrics reading the number of active runs from active (nil
// for none) and store counters from st, if st is a state.StatsReporter
// (st may be nil, or a store that counts nothing).
func New(st state.Store, active func() int) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flock_runs_started_total",
			Help: "Runs created or resumed, by workflow and whether they were resumed."}, []string{"workflow", "resumed"}),
		runsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flock_runs_ended_total",
			Help: "Runs that ended, by workflow and status."}, []string{"workflow", "status"}),
		phases: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flock_phase_commits_total",
			Help: "Phase outputs committed, by workflow and phase."}, []string{"workflow", "phase"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flock_operations_total",
			Help: "Operations finished, by kind and outcome (ok or error)."}, []string{"kind", "outcome"}),
		opSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flock_operation_duration_seconds",
			Help:    "Operation durations, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 12)}, []string{"kind"}),
	}
	m.reg.MustRegister(m.runsStarted, m.runsEnded, m.phases, m.ops, m.opSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if active != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "flock_active_runs",
			Help: "Runs being driven by this server."}, func() float64 { return float64(active()) }))
	}
	if sr, ok := st.(state.StatsReporter); ok {
		counter := func(name, help string, f func(state.Stats) float64) {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
				func() float64 { return f(sr.Stats()) }))
		}
		counter("flock_store_commits_total", "Commits applied by the store.", func(s state.Stats) float64 { return float64(s.Commits) })
		counter("flock_store_transactions_total", "Write transactions (fsyncs) of the store; commits/transactions is the group size.",
			func(s state.Stats) float64 { return float64(s.Txs) })
		counter("flock_store_bytes_total", "Logical bytes (keys and values) written by the store.", func(s state.Stats) float64 { return float64(s.Bytes) })
	}
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// RunStarted implements workflows.Observer.
func (m *Metrics) RunStarted(workflow string, resumed bool) {
	r := "false"
	if resumed {
		r = "true"
	}
	m.runsStarted.WithLabelValues(workflow, r).Inc()
}

// RunEnded implements workflows.Observer.
func (m *Metrics) RunEnded(workflow string, status state.Status) {
	m.runsEnded.WithLabelValues(workflow, string(status)).Inc()
}

// PhaseCommitted implements workflows.Observer.
func (m *Metrics) PhaseCommitted(workflow, phase string) {
	m.phases.WithLabelValues(workflow, phase).Inc()
}

// OpFinished implements workflows.Observer.
func (m *Metrics) OpFinished(kind operations.Kind, ok bool, d time.Duration) {
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	m.ops.WithLabelValues(string(kind), outcome).Inc()
	m.opSeconds.WithLabelValues(string(kind)).Observe(d.Seconds())
}

var _ workflows.Observer = (*Metrics)(nil)
