// Package selfaddr holds the addresses flock's own listeners are bound to
// (the API and viewer, the sandbox service, the model gateway, the
// sandbox's proxies), so that the sandbox's network guard can refuse them
// whatever a backend's allow list says: a tool allowed to read a page on
// 127.0.0.1 must still not read flock's own API.
//
// A listener bound to an unspecified address (0.0.0.0, ::) is reached on
// its port at every address of the machine: loopback and each
// interface's.
package selfaddr

import (
	"net"
	"net/netip"
	"sync"
)

var (
	mu    sync.Mutex
	addrs = map[netip.AddrPort]int{} // guarded by mu; a count per bound address
)

// Add records a, a listener's bound address (a *net.TCPAddr), until the
// returned function is called. Other kinds of address are ignored.
func Add(a net.Addr) (remove func()) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return func() {}
	}
	ap := ta.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	mu.Lock()
	addrs[ap]++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if addrs[ap]--; addrs[ap] <= 0 {
				delete(addrs, ap)
			}
		})
	}
}

// Is reports whether a connection to ap would reach one of flock's own
// listeners in this process.
func Is(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	mu.Lock()
	own := addrs[netip.AddrPortFrom(a, ap.Port())] > 0
	wild := false
	for b := range addrs {
		if b.Port() == ap.Port() && b.Addr().IsUnspecified() {
			wild = true
		}
	}
	mu.Unlock()
	if own {
		return true
	}
	return wild && local(a)
}

// local reports whether a is an address of this machine.
func local(a netip.Addr) bool {
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: count it as ours, refusing rather than leaking
	}
	for _, ia := range ifs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().Unmap() == a {
			return true
		}
	}
	return false
}

// Listener is a net.Listener whose address is recorded until Close.
type Listener struct {
	net.Listener
	remove func()
}

// Listen listens on network and address and records the bound address
// until the listener is closed.
func Listen(network, address string) (*Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &Listener{Listener: ln, remove: Add(ln.Addr())}, nil
}

// Close closes the listener and forgets its address.
func (l *Listener) Close() error {
	l.remove()
	return l.Listener.Close()
}
