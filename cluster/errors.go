package cluster

import "errors"

var (
	// ErrConfig is returned for bad cluster settings (flags); the error
	// names the setting.
	ErrConfig = errors.New("invalid cluster setting")
	// ErrInsecure is returned for a NATS address that is not loopback
	// without TLS and the cluster secret; the error names the flags.
	ErrInsecure = errors.New("insecure cluster setting")
	// ErrNode is returned when the embedded NATS server cannot start.
	ErrNode = errors.New("nats node failed")
	// ErrNotReady is returned when JetStream does not answer in time (in a
	// cluster: no majority of the nodes is up yet).
	ErrNotReady = errors.New("jetstream not ready")
)
