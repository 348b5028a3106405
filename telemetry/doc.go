// Package telemetry exposes flock's Prometheus metrics: runs started and
// ended by workflow and status, phase commits, operations by kind with
// their durations, active runs, and the store's commits, transactions and
// bytes. The server mounts Handler at GET /metrics (behind the bearer
// token when one is set).
package telemetry
