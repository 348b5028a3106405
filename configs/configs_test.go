package configs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRunSettings(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		err  string
	}{
		{name: "empty", doc: ``},
		{name: "object", doc: `{"limits":{"tokens":10},"models":{"m":{"base_url":"http://x/v1"}}}`},
		{name: "negative limit", doc: `{"limits":{"actions":-1}}`, err: "limits.actions: must be >= 0"},
		{name: "wrong type", doc: `{"limits":{"tokens":"lots"}}`, err: "limits.tokens: expected int"},
		{name: "malformed", doc: `{"limits":`, err: "malformed JSON"},
		{name: "isolation kind", doc: `{"isolation":{"kind":"docker"}}`, err: `isolation.kind: "docker" is not one of none, bwrap`},
		{name: "deprecated sandbox kind", doc: `{"sandbox":{"kind":"docker"}}`, err: `sandbox.kind: "docker" is not one of none, bwrap`},
		{name: "isolation and sandbox", doc: `{"isolation":{"kind":"bwrap"},"sandbox":{"kind":"bwrap"}}`,
			err: `sandbox: both "isolation" and its deprecated name "sandbox" are set; keep only "isolation"`},
		{name: "isolation null and sandbox", doc: `{"isolation":null,"sandbox":{"kind":"none"}}`,
			err: `sandbox: both "isolation" and its deprecated name "sandbox" are set`},
		{name: "provider", doc: `{"models":{"m":{"provider":"magic"}}}`, err: "models.m.provider"},
		{name: "script required", doc: `{"models":{"m":{"provider":"scripted"}}}`, err: "models.m.script: required"},
		{name: "key in place of env name", doc: `{"models":{"m":{"api_key_env":"sk-abc"}}}`, err: "must name an environment variable"},
		{name: "inline key", doc: `{"models":{"m":{"api_key":"sk-abc"}}}`, err: "models.m.api_key: API keys do not belong in settings"},
		{name: "negative retry wait", doc: `{"models":{"m":{"max_retry_wait_s":-1}}}`, err: "models.m.max_retry_wait_s: must be a number of seconds >= 0"},
		{name: "negative concurrency", doc: `{"models":{"m":{"max_concurrency":-2}}}`, err: "models.m.max_concurrency: must be >= 0"},
		{name: "small retry wait", doc: `{"models":{"m":{"max_retry_wait_s":0.5}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseRunSettings([]byte(tt.doc))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				// No isolation kind: the server's policy decides.
				if s.Bash.TimeoutS != DefaultBashTimeoutS || s.Isolation.Kind != "" {
					t.Fatalf("defaults not applied: %+v", s)
				}
				for name, m := range s.Models {
					if m.Name != name || m.Provider != "openai" || m.APIKeyEnv != "OPENAI_API_KEY" || *m.MaxRetries != DefaultModelRetries {
						t.Fatalf("model defaults: %+v", m)
					}
					if !strings.Contains(tt.doc, "max_retry_wait_s") && m.MaxRetryWaitS != DefaultModelMaxRetryWaitS {
						t.Fatalf("max_retry_wait_s = %v", m.MaxRetryWaitS)
					}
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tt.err)
			}
		})
	}
}

// TestSandboxAlias checks that the deprecated "sandbox" key still selects
// the isolation: ParseRunSettings moves it into Isolation, so handlers read
// one field.
func TestSandboxAlias(t *testing.T) {
	tests := []struct {
		name, doc string
		want      Isolation
	}{
		{name: "isolation", doc: `{"isolation":{"kind":"bwrap","network":true}}`, want: Isolation{Kind: "bwrap", Network: true}},
		{name: "sandbox", doc: `{"sandbox":{"kind":"bwrap","network":true}}`, want: Isolation{Kind: "bwrap", Network: true}},
		{name: "sandbox without kind", doc: `{"sandbox":{"network":true}}`, want: Isolation{Network: true}},
		{name: "neither", doc: `{}`, want: Isolation{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseRunSettings([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if s.Isolation != tt.want || s.Sandbox != nil {
				t.Fatalf("Isolation = %+v, Sandbox = %v; want %+v and nil", s.Isolation, s.Sandbox, tt.want)
			}
		})
	}
}

func TestServerValidate(t *testing.T) {
	tests := []struct {
		name, addr, token, mode, err string
		models                       map[string]ModelLimits
	}{
		{name: "model limits", models: map[string]ModelLimits{"gpt-4o": {MaxConcurrency: 2}, "http://vllm/v1": {RequestsPerMinute: 60}}},
		{name: "negative concurrency", models: map[string]ModelLimits{"gpt-4o": {MaxConcurrency: -1}}, err: "models.gpt-4o.max_concurrency: must be >= 0"},
		{name: "negative rpm", models: map[string]ModelLimits{"x": {RequestsPerMinute: -1}}, err: "models.x.requests_per_minute: must be >= 0"},
		{name: "empty model key", models: map[string]ModelLimits{" ": {}}, err: "an empty key"},
		{name: "default", addr: "", mode: ""},
		{name: "localhost", addr: "localhost:1"},
		{name: "ipv6 loopback", addr: "[::1]:1"},
		{name: "public without token", addr: "0.0.0.0:46397", err: "not a loopback address"},
		{name: "all interfaces", addr: ":46397", err: "not a loopback address"},
		{name: "public with token", addr: "0.0.0.0:46397", token: "0123456789abcdef"},
		{name: "short token", addr: "0.0.0.0:46397", token: "t0k3n-15-bytes!", err: "auth token (--auth-token, FLOCK_AUTH_TOKEN or auth_token_env): shorter than 16 bytes"},
		{name: "short token on loopback", addr: "127.0.0.1:1", token: "s3cret", err: "shorter than 16 bytes"},
		{name: "bad mode", mode: "dream", err: `--mode "dream"`},
		{name: "bad addr", addr: "nope", err: "--addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Server{Addr: tt.addr, AuthToken: tt.token, Mode: tt.mode, Models: tt.models}
			s.ApplyDefaults()
			err := s.Validate()
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if err != nil && tt.token != "" && strings.Contains(err.Error(), tt.token) {
				t.Fatalf("error %q quotes the token", err)
			}
		})
	}
}

func TestServerValidateOriginsAndNames(t *testing.T) {
	tests := []struct {
		name    string
		origins []string
		names   []string
		err     string
	}{
		{name: "none"},
		{name: "good", origins: []string{"https://ui.example", "http://localhost:5173", "http://[::1]:8080"}, names: []string{"flock.example", "10.0.0.5", "[fd00::1]", "::1"}},
		{name: "origin with path", origins: []string{"https://ui.example/app"}, err: `allowed_origins[0]: "https://ui.example/app" is not an origin`},
		{name: "origin without scheme", origins: []string{"ui.example"}, err: `allowed_origins[0]`},
		{name: "wildcard origin", origins: []string{"https://ok.example", "*"}, err: `allowed_origins[1]: "*": wildcards are not supported`},
		{name: "null origin", origins: []string{"null"}, err: `allowed_origins[0]`},
		{name: "ftp origin", origins: []string{"ftp://x.example"}, err: `scheme http or https`},
		{name: "name with port", names: []string{"flock.example:8080"}, err: `public_names[0]: "flock.example:8080" is not a host name: give the name alone, without a port`},
		{name: "name as URL", names: []string{"https://flock.example"}, err: `public_names[0]`},
		{name: "empty name", names: []string{"ok.example", " "}, err: `public_names[1]: empty host name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Server{AllowedOrigins: tt.origins, PublicNames: tt.names}
			s.ApplyDefaults()
			err := s.Validate()
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestNormalizeOrigin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://UI.Example", "https://ui.example"},
		{"HTTPS://ui.example:443", "https://ui.example"},
		{"http://ui.example:80", "http://ui.example"},
		{"http://ui.example:443", "http://ui.example:443"},
		{"https://ui.example/", "https://ui.example"},
		{"http://127.0.0.1:46397", "http://127.0.0.1:46397"},
		{"http://[::1]:46397", "http://[::1]:46397"},
		{"http://[::1]", "http://[::1]"},
		{"http://ui.example:0080", "http://ui.example"},
		{"null", ""},
		{"https://", ""},
		{"https://u:p@ui.example", ""},
		{"https://ui.example?x=1", ""},
		{"https://ui.example:99999", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeOrigin(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted %q as %q", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestServerValidateNumbers: every number of the server settings is
// checked at load, naming its key (issue 23.7): the read timeouts, the
// body limit and the per-kind concurrency.
func TestServerValidateNumbers(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*Server)
		err  string
	}{
		{"tiny header timeout", func(s *Server) { s.HeaderTimeoutS = 1e-10 }, "header_timeout_s"},
		{"negative body timeout", func(s *Server) { s.BodyTimeoutS = -1 }, "body_timeout_s"},
		{"huge body timeout", func(s *Server) { s.BodyTimeoutS = 1e300 }, "body_timeout_s"},
		{"negative body limit", func(s *Server) { s.MaxBodyBytes = -1 }, "max_body_bytes"},
		{"negative concurrency", func(s *Server) { s.Concurrency = map[string]int{"bash": -3} }, "concurrency.bash"},
		{"negative snapshot file cap", func(s *Server) { s.Snapshots.MaxFileBytes = -1 }, "snapshots.max_file_bytes"},
		{"negative snapshot run cap", func(s *Server) { s.Snapshots.MaxRunBytes = -1 }, "snapshots.max_run_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Server{}
			c.set(&s)
			s.ApplyDefaults()
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err = %v, want one naming %s", err, c.err)
			}
		})
	}
	s := Server{HeaderTimeoutS: 0.5, BodyTimeoutS: 120, MaxBodyBytes: 1 << 30, Concurrency: map[string]int{"bash": 0, "python": 4}}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestReadTokenFile: a token file is read without its surrounding white
// space, only when no one but its owner may read or write it (README:
// "mode 0600"); refusals name the file and the fix, never the token.
func TestReadTokenFile(t *testing.T) {
	const token = "flock-configs-token-5b1e9c0d77a2"
	dir := t.TempDir()
	write := func(name string, mode os.FileMode, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		// Chmod, not WriteFile's mode, so the umask cannot hide a case.
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", 0o600, " "+token+"\n")
	if got, err := ReadTokenFile(good); err != nil || got != token {
		t.Fatalf("ReadTokenFile(0600) = %q, %v; want the token", got, err)
	}
	if got, err := ReadTokenFile(write("owner-read-only", 0o400, token)); err != nil || got != token {
		t.Fatalf("ReadTokenFile(0400) = %q, %v; want the token", got, err)
	}
	for name, tc := range map[string]struct {
		path string
		want string
	}{
		"world readable": {write("world", 0o644, token), "mode 0644): chmod 600 "},
		"group readable": {write("group", 0o640, token), "mode 0640): chmod 600 "},
		"group writable": {write("groupw", 0o620, token), "mode 0620): chmod 600 "},
		"empty":          {write("empty", 0o600, " \n"), "is empty"},
		"too large":      {write("large", 0o600, strings.Repeat("x", 65<<10)), "larger than 64 KiB"},
		"a directory":    {dir, "not a regular file"},
		"missing":        {filepath.Join(dir, "missing"), "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadTokenFile(tc.path)
			if err == nil {
				t.Fatalf("ReadTokenFile accepted %s: %q", tc.path, got)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("err = %v; want it to name %s and say %q", err, tc.path, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Fatalf("the error quotes the token: %v", err)
			}
		})
	}
}
