// Package netguard keeps the sandbox's network tools (web, browser) and
// flock's own client of a run's sandbox_url (NewClientPolicy) off
// addresses that are not public: loopback, private (RFC 1918, fc00::/7),
// link-local (169.254.0.0/16 with the cloud metadata service, fe80::/10),
// unspecified, multicast, broadcast, shared (100.64.0.0/10) and reserved
// ranges, IPv4-mapped IPv6 included. This is server-side request forgery
// protection: a sandbox client must not make flock reach its own API, the
// host's services or the cloud's metadata endpoint.
//
// A Policy is read from a backend's config (allow_hosts, allow_private).
// Destinations are checked when the socket connects (DialContext, with a
// net.Dialer Control that checks the address actually dialled), so
// redirects and every later request are checked too, and a host name that
// resolves to a refused address is refused whatever it is called. Proxy is
// an HTTP forward proxy on loopback that dials through the policy, for
// clients flock does not dial for itself (chromium).
//
// # Allowing destinations
//
// allow_hosts lists host names (matched case-insensitively as the URL names
// them, whatever they resolve to), IP addresses and CIDR prefixes (matched
// against the resolved addresses). allow_private: true allows every
// address, for tests and local use.
//
// # flock's own listeners
//
// Whatever the policy allows, the addresses flock itself listens on in
// this process (the API and viewer, the sandbox service, the model
// gateway, the proxies; package internal/selfaddr records each while it
// listens) are refused, by address and port: allow_hosts ["127.0.0.1"]
// lets a tool read a local page, never flock's API. A listener on all
// interfaces makes its port refused at every address of the machine.
// CheckURL refuses such a page URL before it is handed to a reader, and
// DialContext refuses it as it connects (a host allowed by name too).
package netguard
