package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/phases/settings"
	"github.com/flockrun/flock/sandbox"
)

// keeper is a test backend with sessions: it records every Cleanup with
// the session's workspace as it was when Cleanup ran.
type keeper struct{}

type cleanup struct {
	id        string
	wsExisted bool
	ws        string
	at        time.Time
}

var (
	cleanupMu sync.Mutex
	cleanups  []cleanup
)

func cleanedUp(id string) (cleanup, bool) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	for _, c := range cleanups {
		if c.id == id {
			return c, true
		}
	}
	return cleanup{}, false
}

func (keeper) Tools() []sandbox.Tool {
	return []sandbox.Tool{{Name: "keeper:touch", Run: func(_ context.Context, c *sandbox.Call) (any, error) {
		return map[string]any{"session": c.Session.ID}, nil
	}}}
}

func (keeper) Cleanup(_ context.Context, s *sandbox.Session) error {
	_, err := os.Stat(s.Workspace)
	cleanupMu.Lock()
	cleanups = append(cleanups, cleanup{id: s.ID, ws: s.Workspace, wsExisted: err == nil, at: time.Now()})
	cleanupMu.Unlock()
	return nil
}

// warmer is a test backend whose WarmUp waits for warmGate (or fails with
// warmFail set), so its progress can be watched.
type warmer struct{ fail bool }

var warmGate chan struct{} // set by TestWarmupStatus before the service starts

func (warmer) Tools() []sandbox.Tool { return nil }

func (w warmer) WarmUp(ctx context.Context) error {
	if w.fail {
		return errors.New("index missing")
	}
	select {
	case <-warmGate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// needy requires its config setting "endpoint".
type needy struct{}

// needyConfig is needy's section.
type needyConfig struct {
	Endpoint string `json:"endpoint"`
}

func (c needyConfig) Validate() error {
	if c.Endpoint == "" {
		return settings.Errorf("endpoint", "required setting missing")
	}
	return nil
}

func (needy) Tools() []sandbox.Tool { return nil }

func (needy) Provision(_ context.Context, env sandbox.Env) error {
	var c needyConfig
	return env.Decode(&c)
}

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "keeper", New: func() sandbox.Backend { return keeper{} }})
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "warmer", New: func() sandbox.Backend { return warmer{} }})
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "warmfail", New: func() sandbox.Backend { return warmer{fail: true} }})
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "needy", New: func() sandbox.Backend { return needy{} }})
}

// session returns the worker's keeper session from session/list (nil when
// there is none).
func (e *env) keeperSession(t *testing.T, worker string) map[string]any {
	t.Helper()
	a := e.do(t, "POST", "/api/v1/session/list", map[string]any{"worker_id": worker})
	for _, s := range a.data()["sessions"].([]any) {
		if m := s.(map[string]any); m["resource_type"] == "keeper" {
			return m
		}
	}
	return nil
}

func expiresAt(t *testing.T, v any) time.Time {
	t.Helper()
	ts, err := time.Parse("2006-01-02T15:04:05.000000", v.(string))
	if err != nil {
		t.Fatalf("expires_at %v: %v", v, err)
	}
	return ts
}

// TestSweeperExpiresSession: with session_ttl 0.4 s and cleanup_interval
// 0.05 s the sweeper destroys an idle session once its TTL has passed (not
// before), calling the backend's Cleanup and removing the workspace.
func TestSweeperExpiresSession(t *testing.T) {
	const ttl = 400 * time.Millisecond
	e := newEnv(t, "", `{"server":{"session_ttl":0.4,"cleanup_interval":0.05},"resources":{"keeper":{}}}`)
	created := time.Now()
	a := e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "sw", "resource_type": "keeper"})
	id, _ := a.data()["session_id"].(string)
	if a.code() != 0 || id == "" {
		t.Fatalf("create: %v", a.body)
	}
	testkit.WaitFor(t, "the sweeper to expire the session", func() bool { return e.keeperSession(t, "sw") == nil })
	c, ok := cleanedUp(id)
	if !ok {
		t.Fatal("session gone without the backend's Cleanup")
	}
	if d := c.at.Sub(created); d < ttl {
		t.Fatalf("expired after %v, before its TTL %v", d, ttl)
	}
	if !c.wsExisted {
		t.Fatal("workspace removed before Cleanup ran")
	}
	// The session leaves the table first, then Cleanup runs, then the
	// workspace goes: wait for the last step rather than race it.
	testkit.WaitFor(t, "the expired session's workspace to be removed", func() bool {
		_, err := os.Stat(c.ws)
		return os.IsNotExist(err)
	})
	// An expired session is gone for its tools too: the next stateful call
	// runs on a temporary session.
	a = e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "sw", "action": "keeper:touch"})
	if a.code() != 0 || a.data()["session"] == id || a.body["meta"].(map[string]any)["temporary_session"] != true {
		t.Fatalf("call after expiry: %v", a.body)
	}
}

// TestHeartbeatAndRefreshExtendTTL: heartbeat, refresh (one type and all)
// and an action each move expires_at forward, and a session kept alive by
// heartbeats outlives several TTLs, then expires once they stop.
func TestHeartbeatAndRefreshExtendTTL(t *testing.T) {
	const ttl = time.Second
	e := newEnv(t, "", `{"server":{"session_ttl":1,"cleanup_interval":0.05},"resources":{"keeper":{}}}`)
	e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "hb", "resource_type": "keeper"})
	s := e.keeperSession(t, "hb")
	id := s["session_id"]
	last := expiresAt(t, s["expires_at"])
	w := map[string]any{"worker_id": "hb"}
	steps := []struct {
		name string
		do   func() answer
	}{
		{"heartbeat", func() answer { return e.do(t, "POST", "/api/v1/lifecycle/heartbeat", w) }},
		{"refresh one", func() answer {
			return e.do(t, "POST", "/api/v1/session/refresh", map[string]any{"worker_id": "hb", "resource_type": "keeper"})
		}},
		{"refresh all", func() answer { return e.do(t, "POST", "/api/v1/session/refresh", w) }},
		{"action", func() answer {
			return e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "hb", "action": "keeper:touch"})
		}},
	}
	for _, st := range steps {
		before := time.Now()
		testkit.WaitFor(t, "the clock to move", func() bool { return time.Since(before) > 5*time.Millisecond })
		if a := st.do(); a.code() != 0 {
			t.Fatalf("%s: %v", st.name, a.body)
		}
		s := e.keeperSession(t, "hb")
		if s == nil || s["session_id"] != id {
			t.Fatalf("%s: session lost: %v", st.name, s)
		}
		got := expiresAt(t, s["expires_at"])
		if !got.After(last) {
			t.Fatalf("%s: expires_at %v not after %v", st.name, got, last)
		}
		last = got
	}
	// Heartbeats alone keep it for 3 TTLs.
	start := time.Now()
	testkit.WaitFor(t, "three TTLs of heartbeats", func() bool {
		if a := e.do(t, "POST", "/api/v1/lifecycle/heartbeat", w); len(a.data()["active_sessions"].([]any)) != 1 {
			t.Fatalf("session expired after %v despite heartbeats", time.Since(start))
		}
		return time.Since(start) > 3*ttl
	})
	if s := e.keeperSession(t, "hb"); s == nil || s["session_id"] != id {
		t.Fatalf("session replaced: %v", s)
	}
	testkit.WaitFor(t, "expiry once heartbeats stop", func() bool { return e.keeperSession(t, "hb") == nil })
	if _, ok := cleanedUp(id.(string)); !ok {
		t.Fatal("no Cleanup on expiry")
	}
}

// TestWarmupStatus: with warmup.enabled the service warms its backends in
// the background; /api/v1/warmup/status shows warmer warming until its
// WarmUp returns, then ready; a failed warm-up shows its error; a backend
// without WarmUp is ready from the start.
func TestWarmupStatus(t *testing.T) {
	warmGate = make(chan struct{})
	e := newEnv(t, "", `{"server":{"session_ttl":300},"resources":{"keeper":{},"warmer":{},"warmfail":{}},"warmup":{"enabled":true}}`)
	type status struct {
		Backends map[string]sandbox.BackendStatus `json:"backends"`
		Summary  sandbox.WarmUpSummary            `json:"summary"`
	}
	get := func() status {
		a := e.do(t, "GET", "/api/v1/warmup/status", nil)
		var st status
		b, _ := json.Marshal(a.body)
		if err := json.Unmarshal(b, &st); err != nil || a.status != 200 {
			t.Fatalf("status %d %v: %v", a.status, a.body, err)
		}
		return st
	}
	// Backends warm one after the other in name order: keeper (no WarmUp)
	// is ready, warmer is warming, warmfail waits behind it.
	var st status
	testkit.WaitFor(t, "warmer warming", func() bool { st = get(); return st.Backends["warmer"].State == "warming" })
	if st.Backends["warmer"].WarmedUp || !st.Backends["keeper"].WarmedUp || st.Backends["keeper"].State != "ready" ||
		st.Backends["warmfail"].State != "pending" || st.Summary != (sandbox.WarmUpSummary{Total: 3, WarmedUp: 1, Pending: 2}) {
		t.Fatalf("while warming: %+v", st)
	}
	close(warmGate)
	testkit.WaitFor(t, "warmer ready and warmfail failed", func() bool {
		st = get()
		return st.Backends["warmer"].State == "ready" && st.Backends["warmfail"].State == "error"
	})
	if !st.Backends["warmer"].WarmedUp || st.Summary != (sandbox.WarmUpSummary{Total: 3, WarmedUp: 2, Pending: 1}) {
		t.Fatalf("after warm-up: %+v", st)
	}
	if f := st.Backends["warmfail"]; f.WarmedUp || !strings.Contains(f.Error, "index missing") {
		t.Fatalf("failed warm-up: %+v", f)
	}
	// POST /warmup retries the failed one and reports it.
	a := e.do(t, "POST", "/api/v1/warmup", map[string]any{"backends": []string{"warmer", "warmfail"}})
	if a.body["status"] != "partial_error" || a.body["results"].(map[string]any)["warmer"] != true ||
		!strings.Contains(a.body["errors"].(map[string]any)["warmfail"].(string), "index missing") {
		t.Fatalf("warmup: %v", a.body)
	}
}

// TestConfigWarnsUnknownKeys: a key flock does not read, in the file or
// in a backend's section, starts the service with a warning naming its
// full path and the closest known key; AgentFlow's keys flock ignores
// (backend_class, description, security, server.url/port/title), keys
// starting with "_" (comments) and a disabled backend's section give none.
func TestConfigWarnsUnknownKeys(t *testing.T) {
	doc := `{
	  "server": {"url": "http://127.0.0.1", "port": 18890, "title": "t", "sesion_ttl": 60},
	  "resources": {"bash": {"enabled": true, "backend_class": "x.Bash", "description": "d", "confg": {}, "config": {"timout": 5}}},
	  "apis": {"needy": {"_comment": "AgentFlow drops it", "endpoint": "e", "endpint": "e"}, "keeper": {"enabled": false, "colour": 1}},
	  "_note": "a comment",
	  "security": {"auth": {"enabled": false}},
	  "warmpu": {"enabled": true},
	  "zzz": 1
	}`
	cfg, err := sandbox.ParseConfig([]byte(doc), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	want := []string{
		`unknown key "resources.bash.confg" (did you mean "resources.bash.config"?)`,
		`unknown key "server.sesion_ttl" (did you mean "server.session_ttl"?)`,
		`unknown key "warmpu" (did you mean "warmup"?)`,
		`unknown key "zzz"`,
		`unknown key "resources.bash.config.timout" (did you mean "resources.bash.config.timeout"?)`,
		`unknown key "apis.needy.endpint" (did you mean "apis.needy.endpoint"?)`,
	}
	if got := svc.Warnings(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestConfigErrorsNamePath: start-up fails with the JSON path named for an
// unknown backend, a missing required setting, an unset ${VAR} and a
// malformed ${...} reference; ${VAR:-default} takes its default when VAR is
// unset or empty.
func TestConfigErrorsNamePath(t *testing.T) {
	envv := map[string]string{"SET": "https://x", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := envv[k]; return v, ok }
	start := func(cfg string) error {
		c, err := sandbox.ParseConfig([]byte(cfg), lookup)
		if err != nil {
			return err
		}
		svc, err := sandbox.New(context.Background(), c, sandbox.Options{DataDir: t.TempDir()})
		if err == nil {
			svc.Close(context.Background())
		}
		return err
	}
	bad := []struct{ name, cfg, want string }{
		{"unknown resource", `{"resources":{"nosuch":{"enabled":true}}}`, "resources.nosuch: unknown backend"},
		{"unknown api", `{"apis":{"nosuch":{}}}`, "apis.nosuch: unknown backend"},
		{"missing setting", `{"resources":{"needy":{"config":{}}}}`, "resources.needy.config.endpoint: required setting missing"},
		{"missing setting api", `{"apis":{"needy":{"other":1}}}`, "apis.needy.endpoint: required setting missing"},
		{"bad setting", `{"resources":{"bash":{"config":{"timeout":"soon"}}}}`, "resources.bash.config.timeout:"},
		{"unset var", `{"apis":{"needy":{"endpoint":"${UNSET}"}}}`, "apis.needy.endpoint: environment variable UNSET is not set"},
		{"unset var in list", `{"warmup":{"resources":["${UNSET}"]}}`, "warmup.resources[0]: environment variable UNSET"},
		{"empty default", `{"apis":{"needy":{"endpoint":"${EMPTY:-}"}}}`, "apis.needy.endpoint: required setting missing"},
		{"dash without colon", `{"apis":{"needy":{"endpoint":"${UNSET-http://d}"}}}`, "apis.needy.endpoint: malformed"},
		{"unclosed", `{"apis":{"needy":{"endpoint":"${UNSET:-http://d"}}}`, "apis.needy.endpoint: malformed"},
		{"empty name", `{"server":{"data_dir":"${}"}}`, "server.data_dir: malformed"},
		{"bad name", `{"apis":{"needy":{"endpoint":"x${1A}"}}}`, "apis.needy.endpoint: malformed"},
		{"bad server value", `{"server":{"session_ttl":"${SET}"}}`, "server.session_ttl:"},
		{"server not an object", `{"server":[1]}`, "server: want an object, got JSON array"},
		{"zero ttl", `{"server":{"session_ttl":0}}`, "server.session_ttl: want a number of seconds from 0.001 to 1e+07, got 0"},
		{"fraction", `{"server":{"max_batch_parallel":2.5}}`, "server.max_batch_parallel: want a whole number from 1 to 1024, got 2.5"},
		{"data dir", `{"server":{"data_dir":7}}`, "server.data_dir: want a string, got JSON number"},
		{"enabled not a bool", `{"resources":{"bash":{"enabled":"yes"}}}`, "resources.bash.enabled: want true or false, got JSON string"},
		{"config not an object", `{"resources":{"bash":{"config":[]}}}`, "resources.bash.config: want an object, got JSON array"},
		{"api not an object", `{"apis":{"needy":"x"}}`, "apis.needy: want an object, got JSON string"},
		{"twice", `{"resources":{"needy":{"config":{"endpoint":"e"}}},"apis":{"needy":{"endpoint":"e"}}}`, "apis.needy: also configured under resources.needy"},
		{"warm disabled", `{"resources":{"bash":{"enabled":false}},"warmup":{"resources":["bash"]}}`, "warmup.resources[0]: bash is not an enabled backend"},
		{"warm not a list", `{"warmup":{"resources":"bash"}}`, "warmup.resources: want a list, got JSON string"},
		{"isolation", `{"resources":{"bash":{"config":{"isolation":"docker"}}}}`, `resources.bash.config.isolation: "docker" is not one of none, bwrap`},
		{"isolation type", `{"resources":{"bash":{"config":{"isolation":3}}}}`, "resources.bash.config.isolation: want a string, got JSON number"},
	}
	for _, b := range bad {
		err := start(b.cfg)
		if err == nil || !strings.Contains(err.Error(), b.want) || !errors.Is(err, sandbox.ErrConfig) {
			t.Errorf("%s: %v, want %q", b.name, err, b.want)
		}
		if err != nil && strings.Contains(err.Error(), "https://x") {
			t.Errorf("%s: error echoes a variable's value: %v", b.name, err)
		}
	}
	good := []string{
		`{"apis":{"needy":{"endpoint":"${SET}"}}}`,
		`{"server":{"session_ttl":null},"resources":{"bash":{"config":null}},"apis":{"needy":{"endpoint":"e","enabled":true}}}`,
		`{"apis":{"needy":{"endpoint":"${UNSET:-http://default}"}}}`,
		`{"apis":{"needy":{"endpoint":"${EMPTY:-http://default}"}}}`,
		`{"apis":{"needy":{"endpoint":"$HOME and $$ are literal"}}}`,
	}
	for _, g := range good {
		if err := start(g); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
}
