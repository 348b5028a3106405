package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
)

func TestRunSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, file, body, want, err string
	}{
		{name: "json", file: "a.json", body: `{"commands":["ls"]}`, want: `{"commands":["ls"]}`},
		{name: "yaml", file: "a.yaml", body: "commands:\n  - ls\nlimits:\n  tokens: 5\n", want: `"tokens":5`},
		{name: "bad yaml", file: "b.yml", body: "commands: [ls\n", err: "b.yml"},
		{name: "not an object", file: "c.json", body: `[1,2]`, err: "must be a JSON object"},
		{name: "broken json", file: "d.json", body: `{"a":}`, err: "d.json: malformed JSON"},
		{name: "invalid settings", file: "e.json", body: `{"limits":{"cost":-2}}`, err: "limits.cost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := RunSettings(write(tt.file, tt.body))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !strings.Contains(string(doc), tt.want) {
				t.Fatalf("doc = %s, %v", doc, err)
			}
		})
	}
	if _, err := RunSettings(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestServer(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FLOCK_TEST_TOKEN", "secret")
	tests := []struct {
		name, file, body, err string
		check                 func(configs.Server) bool
	}{
		{name: "yaml", file: "s.yaml", body: "addr: 0.0.0.0:9000\nplugin_dirs: [plugins]\nauth_token_env: FLOCK_TEST_TOKEN\nconcurrency: {bash: 2}\n",
			check: func(s configs.Server) bool {
				return s.Addr == "0.0.0.0:9000" && s.PluginDirs[0] == "plugins" && s.AuthToken == "secret" && s.Concurrency["bash"] == 2
			}},
		{name: "model limits", file: "l.yaml", body: "models:\n  gpt-4o-mini: {max_concurrency: 2, requests_per_minute: 500}\n",
			check: func(s configs.Server) bool {
				return s.Models["gpt-4o-mini"] == configs.ModelLimits{RequestsPerMinute: 500, MaxConcurrency: 2}
			}},
		{name: "unknown key", file: "u.json", body: `{"adress": "x"}`, err: `unknown field "adress"`},
		{name: "token itself refused", file: "t.json", body: `{"auth_token": "x"}`, err: `unknown field "auth_token"`},
		{name: "missing token env", file: "m.json", body: `{"auth_token_env": "FLOCK_TEST_NO_SUCH_VAR"}`, err: "FLOCK_TEST_NO_SUCH_VAR is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.file)
			if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Server(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !tt.check(s) {
				t.Fatalf("got %+v, %v", s, err)
			}
		})
	}
}
