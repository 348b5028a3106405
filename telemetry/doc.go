// Package telemetry is what flock tells the outside about its work:
// Prometheus metrics, OpenTelemetry traces built from the journal, and the
// loggers of the command line.
//
// # Metrics
//
// Metrics counts runs started and ended by workflow and status, phase
// commits, operations by kind with their durations, active runs, and the
// store's commits, transactions and bytes. The server mounts Handler at
// GET /metrics (behind the bearer token when one is set).
//
// # Traces
//
// Tracer turns the journal into spans: one per run ("run <workflow>"), one
// per step ("phase <name>": a phase call and the ops it asked for, until
// the next phase call) and one per op ("chat <model>" for generate ops,
// with the GenAI semantic conventions' gen_ai.* attributes for model,
// tokens and finish reasons, and flock.cost; the kind's name otherwise).
// Times are the journal's: op start and finish as recorded, a step from
// its phase call to the next. The executor tells the tracer which run and
// step each commit wrote (workflows.StepObserver); the tracer's goroutine
// reads the step's ops back from the store and exports them over OTLP/HTTP
// in batches. app.Open starts one when the standard environment names an
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
// headers, timeout and OTEL_SERVICE_NAME are honoured too).
//
// Ids come from the journal's names, not from randomness: a run tree's
// trace id is a hash of its root run's id, a run's span id a hash of its
// id, a step's of (run, step), an op's of its op id. A child run's id is
// its spawn op's id, so a chain of a rollout or a subagent is a span under
// the spawn op that started it, in its root's trace, with no lookup. A run
// that resumes after a restart or a crash, here or on another process,
// keeps its trace: the step that was in flight is exported when it
// finishes, read back from the journal.
//
// Tracing never holds a run up: notes go through a bounded queue (full:
// dropped and counted), and spans the collector refuses are dropped and
// counted (Tracer.Stats), with one warning per outage. What is not sent:
// a crash between a commit and its export loses that step's spans (the
// queue is memory); no span is sent twice. A run's own span is sent when
// it ends, so a run that is still going shows its steps under a parent not
// yet received.
//
// # Logs
//
// NewLogger builds the command line's logger in text or JSON (--log-format
// json): one object per line, and every line about a run (with a "run" or
// "run_id" attribute) also carries "trace_id", the run's trace.
package telemetry
