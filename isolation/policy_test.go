package isolation

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
)

// withAvailable makes bwrap look available (err nil) or not for the test.
func withAvailable(t *testing.T, err error) {
	t.Helper()
	old := available
	available = func() error { return err }
	t.Cleanup(func() { available = old })
}

func TestPolicyResolve(t *testing.T) {
	missing := fmt.Errorf("%w: bwrap: not found", ErrUnavailable)
	def := configs.Isolation{Kind: KindBwrap, Network: true, HostTmp: true}
	none := configs.Isolation{Kind: KindNone}
	strict := configs.Isolation{Kind: KindBwrap}
	tests := []struct {
		name   string
		policy Policy
		bwrap  error
		run    configs.Isolation
		want   configs.Isolation
		err    error
	}{
		{"auto, bwrap, no kind", "", nil, configs.Isolation{}, def, nil},
		{"auto, bwrap, kind bwrap", PolicyAuto, nil, strict, strict, nil},
		{"auto, bwrap, kind none", PolicyAuto, nil, none, configs.Isolation{}, ErrNotAllowed},
		{"auto, no bwrap, no kind", PolicyAuto, missing, configs.Isolation{}, none, nil},
		{"auto, no bwrap, kind none", PolicyAuto, missing, none, none, nil},
		{"auto, no bwrap, kind bwrap", PolicyAuto, missing, strict, configs.Isolation{}, ErrUnavailable},
		{"bwrap, no kind", PolicyBwrap, nil, configs.Isolation{}, def, nil},
		{"bwrap, kind none", PolicyBwrap, nil, none, configs.Isolation{}, ErrNotAllowed},
		{"bwrap, no bwrap", PolicyBwrap, missing, configs.Isolation{}, configs.Isolation{}, ErrUnavailable},
		{"none, no kind", PolicyNone, nil, configs.Isolation{}, none, nil},
		{"none, kind none", PolicyNone, nil, none, none, nil},
		{"none, kind bwrap with network", PolicyNone, nil, configs.Isolation{Kind: KindBwrap, Network: true}, configs.Isolation{Kind: KindBwrap, Network: true}, nil},
		{"unknown kind", PolicyAuto, nil, configs.Isolation{Kind: "docker"}, configs.Isolation{}, ErrUnknownKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withAvailable(t, tt.bwrap)
			got, err := tt.policy.Resolve(tt.run)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Resolve error = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("Resolve = %+v, want %+v", got, tt.want)
			}
			// A refused "none" names the setting once (its callers
			// prefix "isolation.kind: ") and where the policy comes
			// from: a flag of the command, not only a server's
			// settings (flock run --isolation bwrap said "this server").
			if errors.Is(tt.err, ErrNotAllowed) {
				msg := "isolation.kind: " + err.Error()
				if strings.Count(msg, "isolation.kind") != 1 || !strings.Contains(msg, "--isolation flag") ||
					strings.Contains(msg, "this server") {
					t.Fatalf("refusal %q: want the setting named once and the --isolation flag named", msg)
				}
			}
		})
	}
}

func TestPolicyStartUp(t *testing.T) {
	missing := fmt.Errorf("%w: bwrap: not found", ErrUnavailable)
	withAvailable(t, missing)
	if err := PolicyBwrap.Check(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Check(bwrap) without bwrap = %v, want ErrUnavailable", err)
	}
	if err := PolicyAuto.Check(); err != nil {
		t.Fatalf("Check(auto) = %v", err)
	}
	if w := Policy("").Warning(); !strings.Contains(w, "bubblewrap") || !strings.Contains(w, "isolation: none") || !strings.Contains(w, "flock.db") {
		t.Fatalf("Warning = %q, want what is exposed and both ways out", w)
	}
	if w := PolicyNone.Warning(); w != "" {
		t.Fatalf("Warning(none) = %q: the operator opted out by name", w)
	}
	withAvailable(t, nil)
	if w := PolicyAuto.Warning(); w != "" {
		t.Fatalf("Warning with bwrap = %q", w)
	}
	for _, s := range []string{"", "auto", "bwrap", "none"} {
		if _, err := ParsePolicy(s); err != nil {
			t.Errorf("ParsePolicy(%q) = %v", s, err)
		}
	}
	if _, err := ParsePolicy("off"); !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "auto, bwrap, none") {
		t.Errorf("ParsePolicy(off) = %v", err)
	}
}

// TestEnviron: a program's environment holds the base set and what the
// caller adds, and none of the variables that carry secrets, whatever they
// are called.
func TestEnviron(t *testing.T) {
	secrets := map[string]string{
		"PGPASSWORD": "pg-secret", "OPENAI_KEY": "oa-secret", "TOKEN": "tok-secret", "GITHUB_PAT": "ghp-secret",
		"AWS_ACCESS_KEY_ID": "AKIA-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret", "SSH_AUTH_SOCK": "/tmp/ssh-secret/agent",
		"FLOCK_AUTH_TOKEN": "flock-secret", "OPENAI_API_KEY": "sk-secret", "DATABASE_URL": "postgres://u:db-secret@h/d",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_MESSAGES", "C")
	t.Setenv("TZ", "UTC")
	t.Setenv("TMPDIR", "/var/tmp/x")
	t.Setenv("HOME", "/home/op")
	got := Environ(configs.Isolation{}, "A=1", "HOME=/work", "A=2")
	env := map[string]string{}
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("%s twice in %q", k, got)
		}
		env[k] = v
	}
	for k, v := range secrets {
		if _, ok := env[k]; ok {
			t.Errorf("%s passed through", k)
		}
		for _, kv := range got {
			if strings.Contains(kv, v) {
				t.Errorf("%q carries the value of %s", kv, k)
			}
		}
	}
	for k, v := range map[string]string{"LANG": "C.UTF-8", "LC_MESSAGES": "C", "TZ": "UTC", "TMPDIR": "/var/tmp/x", "HOME": "/work", "A": "2"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if env["PATH"] == "" {
		t.Error("no PATH")
	}
	if isolated := Environ(configs.Isolation{Kind: KindBwrap}); strings.Contains(strings.Join(isolated, " "), "TMPDIR=") {
		t.Errorf("an isolated program got TMPDIR (its /tmp is its own): %q", isolated)
	}
	t.Setenv("PATH", "")
	if p := Environ(configs.Isolation{}); !strings.Contains(strings.Join(p, " "), "PATH=") {
		t.Errorf("no PATH when the server has an empty one: %q", p)
	}
	if l := Lookup([]string{"TOKEN", "FLOCK_TEST_NOT_SET"}); len(l) != 1 || l[0] != "TOKEN=tok-secret" {
		t.Errorf("Lookup = %q", l)
	}
}
