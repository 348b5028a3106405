package selfaddr

import (
	"net"
	"net/netip"
	"testing"
)

// TestListenRecordsUntilClose: a listener's address is flock's own while
// it listens; one bound to all interfaces makes its port flock's own at
// every address of the machine, and nowhere else.
func TestListenRecordsUntilClose(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap := ln.Addr().(*net.TCPAddr).AddrPort()
	if !Is(ap) {
		t.Fatalf("%v not recorded", ap)
	}
	if Is(netip.AddrPortFrom(ap.Addr(), ap.Port()+1)) || Is(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), ap.Port())) {
		t.Fatal("another port or address counted as flock's own")
	}
	ln.Close()
	if Is(ap) {
		t.Fatalf("%v still recorded after Close", ap)
	}

	all, err := Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen on all interfaces: %v", err)
	}
	defer all.Close()
	port := all.Addr().(*net.TCPAddr).AddrPort().Port()
	for _, a := range []string{"127.0.0.1", "127.9.9.9", "::1", "0.0.0.0"} {
		if !Is(netip.AddrPortFrom(netip.MustParseAddr(a), port)) {
			t.Errorf("%s:%d not flock's own under a listener on all interfaces", a, port)
		}
	}
	if ifs, err := net.InterfaceAddrs(); err == nil {
		for _, ia := range ifs {
			if p, err := netip.ParsePrefix(ia.String()); err == nil && !Is(netip.AddrPortFrom(p.Addr(), port)) {
				t.Errorf("interface address %v:%d not flock's own", p.Addr(), port)
			}
		}
	}
	if Is(netip.AddrPortFrom(netip.MustParseAddr("93.184.215.14"), port)) {
		t.Error("a public address of another machine counted as flock's own")
	}
}
