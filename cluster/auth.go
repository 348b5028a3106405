package cluster

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/flockrun/flock/configs"
	jsstore "github.com/flockrun/flock/state/jetstream"
)

// UserName is the NATS user flock nodes connect as. On an embedded node it
// is the only user there is (its password is the cluster secret), and
// the routes between nodes authenticate with the same name and secret.
const UserName = "flock"

// MinSecretLen is the shortest cluster secret accepted, in bytes.
const MinSecretLen = configs.MinAuthTokenLen

// TLSFiles name the PEM files of a node's TLS.
//
// On an embedded node all three are required together: the node serves
// Cert on its client and cluster ports, presents it to the nodes its
// routes connect to, and accepts a route or a client only with a
// certificate signed by CA (mutual TLS). Each node's certificate must name
// (DNS or IP SAN) the host the other nodes' routes use for it, and allow
// both server and client authentication.
//
// With an external NATS (Config.NATSURL), CA verifies the servers (the
// system's roots when empty and the URL's scheme is tls://), and Cert and
// Key are the client certificate, if the servers ask for one.
type TLSFiles struct {
	Cert string
	Key  string
	CA   string
}

// IsZero reports whether no TLS file is named.
func (t TLSFiles) IsZero() bool { return t == TLSFiles{} }

// serverConfig returns the TLS configuration of an embedded node's
// listeners and routes: its certificate, and peers verified against the
// CA both ways.
func (t TLSFiles) serverConfig() (*tls.Config, error) {
	if t.Cert == "" || t.Key == "" || t.CA == "" {
		return nil, fmt.Errorf("%w: NATS TLS needs the node's certificate, its key and the CA that signed the nodes' certificates (--nats-tls-cert, --nats-tls-key, --nats-tls-ca)", ErrConfig)
	}
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.Cert, KeyFile: t.Key, CaFile: t.CA, Verify: true})
	if err != nil {
		return nil, fmt.Errorf("%w: NATS TLS (--nats-tls-cert %s, --nats-tls-key, --nats-tls-ca %s): %v", ErrConfig, t.Cert, t.CA, err)
	}
	if tc.ClientCAs == nil {
		return nil, fmt.Errorf("%w: NATS TLS CA %s: no certificate in it", ErrConfig, t.CA)
	}
	// A node is a TLS client of the nodes its routes connect to: it
	// verifies them against the same CA.
	tc.RootCAs = tc.ClientCAs
	return tc, nil
}

// clientOptions returns the connection options for an external NATS
// cluster: flock's user and secret, and TLS as t names it.
func (t TLSFiles) clientOptions(tlsURL bool) []nats.Option {
	var opts []nats.Option
	if t.CA != "" {
		opts = append(opts, nats.RootCAs(t.CA))
	} else if tlsURL {
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	if t.Cert != "" || t.Key != "" {
		opts = append(opts, nats.ClientCert(t.Cert, t.Key))
	}
	return opts
}

// checkSecret checks a cluster secret; what names where it comes from.
func checkSecret(secret string) error {
	if secret == "" {
		return fmt.Errorf("%w: NATS secret: required; every connection to flock's NATS authenticates with it (--nats-secret-file or FLOCK_NATS_SECRET; create one with: (umask 077; head -c 32 /dev/urandom | base64 > nats.secret))", ErrConfig)
	}
	if len(secret) < MinSecretLen {
		// The secret itself is never quoted, nor its length.
		return fmt.Errorf("%w: NATS secret (--nats-secret-file or FLOCK_NATS_SECRET): shorter than %d bytes; use a long random value (for example: openssl rand -hex 32)", ErrConfig, MinSecretLen)
	}
	return nil
}

// newSecret returns a random secret, for a single node whose only client
// is its own flock process.
func newSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a NATS secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// insecure returns the error for a non-loopback address that lacks TLS
// or the secret.
func insecure(what, addr string) error {
	return fmt.Errorf("%w: %s %s is not a loopback address: it needs TLS (--nats-tls-cert, --nats-tls-key, --nats-tls-ca) and the cluster secret (--nats-secret-file or FLOCK_NATS_SECRET), or anyone who reaches it reads and writes every run", ErrInsecure, what, addr)
}

// natsPermissions are the permissions of flock's NATS user: the subjects
// of the run store (state/jetstream with its default prefix: streams
// FLOCK_RUNS_<shard> and FLOCK_INDEX, buckets FLOCK_HEADS_<shard> and
// FLOCK_LEASES, the object store FLOCK_BLOBS) and of dispatch (claims,
// control, events), JetStream's API, acknowledgements and flow control,
// and reply inboxes. On an external NATS, give flock's user an account of
// its own with these (README, "Running a cluster").
func natsPermissions() *server.Permissions {
	allow := []string{"flock.>", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>",
		"$KV.FLOCK_LEASES.>", "$O.FLOCK_BLOBS.>", "_INBOX.>"}
	for i := range jsstore.MaxShards {
		allow = append(allow, fmt.Sprintf("$KV.FLOCK_HEADS_%d.>", i))
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: allow},
		Subscribe: &server.SubjectPermission{Allow: []string{"flock.>", "_INBOX.>"}},
	}
}

// natsURLs parses the comma-separated URLs of an external NATS cluster.
// It refuses credentials in a URL (they would be on the command line),
// and a host that is not loopback unless the connection uses TLS
// (tlsFiles names a CA, or every URL's scheme is tls://). tlsURL reports
// whether some URL asks for TLS.
func natsURLs(list string, tlsFiles TLSFiles) (urls []string, tlsURL bool, err error) {
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls") {
			return nil, false, fmt.Errorf("%w: --nats URL %q: want nats://host:port or tls://host:port", ErrConfig, redact(raw))
		}
		if u.User != nil {
			return nil, false, fmt.Errorf("%w: --nats URL %s: holds credentials, which every local user sees on the command line; give the user with --nats-user and the password in --nats-secret-file or FLOCK_NATS_SECRET", ErrConfig, u.Redacted())
		}
		if u.Scheme == "tls" {
			tlsURL = true
		}
		if !configs.IsLoopback(u.Hostname()) && u.Scheme != "tls" && tlsFiles.CA == "" {
			return nil, false, fmt.Errorf("%w: --nats URL %s is not a loopback address: use TLS (a tls:// URL, or --nats-tls-ca) so that the secret and the runs do not cross the network in clear", ErrInsecure, u.Redacted())
		}
		urls = append(urls, u.String())
	}
	if len(urls) == 0 {
		return nil, false, fmt.Errorf("%w: --nats: no URL", ErrConfig)
	}
	return urls, tlsURL, nil
}

// redact hides what looks like a password in a URL that did not parse.
func redact(raw string) string {
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			return raw[:j+3] + "xxxxx" + raw[i:]
		}
		return "xxxxx" + raw[i:]
	}
	return raw
}
