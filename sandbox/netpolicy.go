package sandbox

import "github.com/flockrun/flock/sandbox/internal/netguard"

// NetPolicy is the network guard of the web and browser tools
// (sandbox/internal/netguard): loopback, private, link-local and other
// non-public addresses are refused unless allowed. flock's sandbox client
// (the sandbox operation's sandbox_url) uses the same guard.
type NetPolicy = netguard.Policy

// BlockedError is a destination a NetPolicy refused (errors.As).
type BlockedError = netguard.BlockedError

// ErrBlocked is wrapped by every BlockedError.
var ErrBlocked = netguard.ErrBlocked

// NewNetPolicy returns a guard for a client flock drives itself (not a
// sandbox tool's): it allows public addresses, the hosts listed (names, IP
// addresses, CIDR prefixes) and, with allowPrivate, every address; flock's
// own listeners are allowed where their host is (AllowOwn).
func NewNetPolicy(allowHosts []string, allowPrivate bool) (*NetPolicy, error) {
	p := &NetPolicy{AllowPrivate: allowPrivate, AllowOwn: true}
	if err := p.Allow(allowHosts...); err != nil {
		return nil, err
	}
	return p, nil
}
