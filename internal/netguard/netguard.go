package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/flockrun/flock/internal/selfaddr"
	"github.com/flockrun/flock/phases/settings"
)

// ErrBlocked marks a destination the policy refuses. Errors carrying it
// are *BlockedError, naming the host, the address and why.
var ErrBlocked = errors.New("destination not allowed")

// BlockedError is a refused destination.
type BlockedError struct {
	// Host is the host as the URL or request named it.
	Host string
	// Addr is the address it resolved to (invalid when Host was refused
	// before resolving).
	Addr netip.Addr
	// Reason says why, e.g. "loopback", "link-local (cloud metadata)".
	Reason string
	// Port is set when the refusal is of the port too: one of flock's own
	// listeners, refused whatever allow_hosts and allow_private say.
	Port uint16
}

func (e *BlockedError) Error() string {
	at := ""
	if e.Addr.IsValid() && e.Addr.String() != e.Host {
		at = " (" + e.Addr.String() + ")"
	}
	if e.Port != 0 {
		return fmt.Sprintf("%v: %s%s port %d is %s; no setting lets a sandbox tool reach it", ErrBlocked, e.Host, at, e.Port, e.Reason)
	}
	return fmt.Sprintf("%v: %s%s is not a public address (%s); sandbox tools reach only public addresses unless the config lists the host in allow_hosts or sets allow_private", ErrBlocked, e.Host, at, e.Reason)
}

// ownReason is the Reason of a destination that is one of flock's own
// listeners (package internal/selfaddr).
const ownReason = "flock's own listener (its API, viewer, sandbox service, gateway or proxy)"

// own refuses addr:port when it reaches one of flock's own listeners,
// whatever the policy allows.
func own(host string, a netip.Addr, port uint16) *BlockedError {
	if !selfaddr.Is(netip.AddrPortFrom(a, port)) {
		return nil
	}
	return &BlockedError{Host: host, Addr: a.Unmap(), Port: port, Reason: ownReason}
}

func (e *BlockedError) Unwrap() error { return ErrBlocked }

// Policy decides which destinations a sandbox tool may connect to. The zero
// Policy refuses every non-public address. It is safe for concurrent use.
type Policy struct {
	// AllowPrivate allows every address (loopback, private, link-local...):
	// for tests and local use.
	AllowPrivate bool
	// AllowOwn lets allowed destinations include flock's own listeners.
	// Only flock's own clients set it (the sandbox operation's client of
	// sandbox_url, whose requests are flock's, not a sandbox user's); the
	// sandbox tools never do.
	AllowOwn bool
	names    map[string]bool
	nets     []netip.Prefix
}

// Settings are the allow_hosts and allow_private settings of a backend's
// config section; a backend embeds them in its config struct (package
// phases/settings decodes them).
type Settings struct {
	// AllowHosts lists host names, IP addresses or CIDR prefixes a tool
	// may reach beyond public addresses.
	AllowHosts []string `json:"allow_hosts"`
	// AllowPrivate allows every address (loopback, private, link-local...).
	AllowPrivate bool `json:"allow_private"`
}

// Policy returns the policy the settings describe. A bad host is a
// *settings.Error naming allow_hosts (or the item).
func (s Settings) Policy() (*Policy, error) {
	p := &Policy{AllowPrivate: s.AllowPrivate}
	for i, h := range s.AllowHosts {
		if strings.TrimSpace(h) == "" {
			return nil, settings.Errorf(fmt.Sprintf("allow_hosts[%d]", i), "want a host name, an IP address or a CIDR prefix")
		}
	}
	if err := p.Allow(s.AllowHosts...); err != nil {
		return nil, settings.At("allow_hosts", err)
	}
	return p, nil
}

// Allow (call it before the policy is used) adds host names (matched case-insensitively, as the URL names
// them), IP addresses and CIDR prefixes (matched against the addresses a
// host resolves to) to the allowed destinations.
func (p *Policy) Allow(hosts ...string) error {
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch {
		case strings.Contains(h, "/"):
			pfx, err := netip.ParsePrefix(h)
			if err != nil {
				return fmt.Errorf("%q is not a CIDR prefix: %w", h, err)
			}
			p.nets = append(p.nets, pfx.Masked())
		default:
			if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
				p.nets = append(p.nets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				continue
			}
			if strings.ContainsAny(h, ":@ ") {
				return fmt.Errorf("%q is not a host name (no port, scheme or user)", h)
			}
			if p.names == nil {
				p.names = map[string]bool{}
			}
			p.names[canonName(h)] = true
		}
	}
	return nil
}

func canonName(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// allowedName reports whether host is listed by name.
func (p *Policy) allowedName(host string) bool { return p.names[canonName(host)] }

// Reason returns why the address is refused, or "" when it may be reached.
func (p *Policy) Reason(a netip.Addr) string {
	a = a.Unmap()
	if p.AllowPrivate {
		return ""
	}
	for _, n := range p.nets {
		if n.Contains(a) {
			return ""
		}
	}
	return Classify(a)
}

// special are the non-public ranges beyond what netip classifies.
var special = []struct {
	pfx    netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" (0.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
}

// Classify returns the kind of a non-public address ("loopback",
// "private", "link-local (cloud metadata)"...), or "" for a public one.
func Classify(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsPrivate():
		return "private"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, s := range special {
		if s.pfx.Contains(a) {
			return s.reason
		}
	}
	return ""
}

// Static refuses, without a lookup, a host that is an address the policy
// refuses, or "localhost" (or a name beneath it) when loopback is refused:
// for configured URLs, checked at start.
func (p *Policy) Static(host string) error {
	if p.allowedName(host) {
		return nil
	}
	a, ok := hostAddr(host)
	if !ok {
		n := canonName(host)
		if n != "localhost" && !strings.HasSuffix(n, ".localhost") {
			return nil
		}
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if r := p.Reason(a); r != "" {
		return &BlockedError{Host: host, Addr: a, Reason: r}
	}
	return nil
}

// Resolver looks host names up; net.DefaultResolver by default.
var Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
} = net.DefaultResolver

// hostAddr parses host as an IP address, including the forms browsers and
// URL libraries accept for IPv4 (2130706433, 0x7f.1, 0177.0.0.1), so that
// such a host cannot pass as a name.
func hostAddr(host string) (netip.Addr, bool) {
	h := strings.Trim(host, "[]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i] // a zone
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap(), true
	}
	return looseIPv4(strings.TrimSuffix(h, "."))
}

// looseIPv4 parses the WHATWG URL forms of IPv4: one to four parts, each
// decimal, 0x-hex or 0-octal, the last filling the remaining bytes.
func looseIPv4(h string) (netip.Addr, bool) {
	parts := strings.Split(h, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, s := range parts {
		base := 10
		switch {
		case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
			base, s = 16, s[2:]
			if s == "" {
				s = "0"
			}
		case len(s) > 1 && s[0] == '0':
			base, s = 8, s[1:]
		}
		n, err := strconv.ParseUint(s, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// Resolve returns the addresses of host the policy allows, or a
// *BlockedError when it allows none. A host listed by name is allowed
// whatever it resolves to. A lookup failure is returned as it is.
func (p *Policy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, ok := hostAddr(host); ok {
		if r := p.Reason(a); r != "" && !p.allowedName(host) {
			return nil, &BlockedError{Host: host, Addr: a, Reason: r}
		}
		return []netip.Addr{a}, nil
	}
	addrs, err := Resolver.LookupNetIP(ctx, "ip", canonName(host))
	if err != nil {
		return nil, err
	}
	if p.allowedName(host) {
		return addrs, nil
	}
	var ok []netip.Addr
	var first *BlockedError
	for _, a := range addrs {
		if r := p.Reason(a); r != "" {
			if first == nil {
				first = &BlockedError{Host: host, Addr: a.Unmap(), Reason: r}
			}
			continue
		}
		ok = append(ok, a.Unmap())
	}
	if len(ok) == 0 {
		if first == nil {
			return nil, fmt.Errorf("%s: no address", host)
		}
		return nil, first
	}
	return ok, nil
}

// CheckURL refuses an http(s) URL whose host is, or resolves to, an
// address the policy refuses, or one of flock's own listeners whatever the
// policy allows (*BlockedError). A host that does not resolve here passes:
// whoever fetches it resolves it on its own network.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	host := u.Hostname()
	addrs, err := p.Resolve(ctx, host)
	var be *BlockedError
	if errors.As(err, &be) {
		return err
	}
	if err != nil {
		return nil
	}
	port := urlPort(u)
	for _, a := range addrs {
		if be := own(host, a, port); be != nil && !p.AllowOwn {
			return be
		}
	}
	return nil
}

// urlPort is the port u names, or its scheme's default.
func urlPort(u *url.URL) uint16 {
	if n, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(n)
	}
	if strings.EqualFold(u.Scheme, "https") || strings.EqualFold(u.Scheme, "wss") {
		return 443
	}
	return 80
}

// DialContext returns a dial function for http.Transport that connects only
// to addresses the policy allows: it resolves the host itself, dials the
// allowed addresses in turn by number (so that a second lookup cannot
// answer differently), and checks the address again as the socket
// connects.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		addrs, err := p.Resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		byName := p.allowedName(host)
		dd := *d
		dd.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("connect to %s: %w", address, err)
			}
			if be := own(host, ap.Addr(), ap.Port()); be != nil && !p.AllowOwn {
				return be
			}
			if byName {
				return nil
			}
			if r := p.Reason(ap.Addr()); r != "" {
				return &BlockedError{Host: host, Addr: ap.Addr().Unmap(), Reason: r}
			}
			return nil
		}
		// IPv4 first, then IPv6, each in the resolver's order.
		sort.SliceStable(addrs, func(i, j int) bool { return addrs[i].Is4() && !addrs[j].Is4() })
		var firstErr error
		for _, a := range addrs {
			c, err := dd.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return c, nil
			}
			if firstErr == nil {
				firstErr = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, firstErr
	}
}

// NewClientPolicy returns a guard for a client flock drives itself (not
// a sandbox tool's; the sandbox operation's sandbox_url): it allows
// public addresses, the hosts listed (names, IP addresses, CIDR
// prefixes) and, with allowPrivate, every address; flock's own listeners
// are allowed where their host is (AllowOwn).
func NewClientPolicy(allowHosts []string, allowPrivate bool) (*Policy, error) {
	p := &Policy{AllowPrivate: allowPrivate, AllowOwn: true}
	if err := p.Allow(allowHosts...); err != nil {
		return nil, err
	}
	return p, nil
}
