package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
)

// rawEvents reads a run's event stream as text until the server ends it.
func rawEvents(t *testing.T, base, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("open events: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || ctx.Err() != nil {
		t.Fatalf("the event stream of %s did not end: %v", id, err)
	}
	return string(b)
}

// TestSandboxURLWithToken: a run on one flock server calls the sandbox
// that a second flock server, started with --auth-token, hosts over HTTP.
// The run names the variable holding the token (sandbox_token_env), the
// calls carry it as a bearer token and succeed; the token is nowhere in
// the first server's bbolt file, ops, events or log. A run with the wrong
// token, or none, fails its op naming the refusal and sandbox_token_env
// (without quoting any token); a variable that is not set refuses the run
// at start, naming it.
func TestSandboxURLWithToken(t *testing.T) {
	const canary = "canary-sandbox-token-5f1e9c2a7b"
	const wrong = "wrong-sandbox-token-0d3b8e6f41"
	db, err := filepath.Abs("../configs/sandbox/data/concert.sqlite")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sandbox.json")
	doc := fmt.Sprintf(`{"resources": {"bash": {"enabled": true}}, "apis": {"text2sql": {"databases": {"concert": %q}}}}`, db)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	sbAddr := freePort(t)
	startServer(t, filepath.Join(dir, "sandbox-data"), sbAddr, "--sandbox-config", cfg, "--auth-token", canary)

	// The first server reads the token from its environment only, and
	// its operator lets runs name the sandbox on 127.0.0.1 and these two
	// variables.
	t.Setenv("FLOCK_E2E_SANDBOX_TOKEN", canary)
	t.Setenv("FLOCK_E2E_WRONG_TOKEN", wrong)
	wfDir, err := filepath.Abs("../handlers/sandboxop/testdata")
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	srvCfg := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(srvCfg, []byte("sandbox_url_allow_hosts: [127.0.0.1]\nsandbox_token_envs: [FLOCK_E2E_SANDBOX_TOKEN, FLOCK_E2E_WRONG_TOKEN, FLOCK_E2E_NO_SUCH_TOKEN]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServer(t, data, freePort(t), "--workflows", wfDir, "--mode", "simulated", "--log-level", "debug", "--config", srvCfg)
	url := "http://" + sbAddr

	id := p.start("sandboxcalls", map[string]any{"sandbox_url": url, "sandbox_token_env": "FLOCK_E2E_SANDBOX_TOKEN"})
	end := waitEnded(t, p, id, 60*time.Second)
	if end.Status != "succeeded" {
		t.Fatalf("run ended %s: %s\n%s", end.Status, end.Error, p.out.String())
	}
	ops := p.ops(id)
	if len(ops) != 4 {
		t.Fatalf("%d ops, want 4", len(ops))
	}
	res := make([]struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}, len(ops))
	for i, op := range ops {
		if op.Result == nil || json.Unmarshal(op.Result.Data, &res[i]) != nil {
			t.Fatalf("op %d has no sandbox result: %+v", i, op.Result)
		}
	}
	if r := res[0]; r.Code != 0 || !strings.Contains(string(r.Data), "rows") {
		t.Fatalf("text2sql:execute = %d %s %s, want rows", r.Code, r.Message, r.Data)
	}
	if r := res[2]; r.Code != 0 || !strings.Contains(string(r.Data), "kept") {
		t.Fatalf("second bash:run = %d %s %s, want the session's file", r.Code, r.Message, r.Data)
	}
	events := rawEvents(t, p.base, id)
	opsJSON, _ := json.Marshal(ops)

	// The wrong token and no token: the op fails, naming the refusal.
	for _, settings := range []map[string]any{
		{"sandbox_url": url, "sandbox_token_env": "FLOCK_E2E_WRONG_TOKEN"},
		{"sandbox_url": url},
	} {
		bad := p.start("sandboxcalls", settings)
		waitEnded(t, p, bad, 60*time.Second)
		bops := p.ops(bad)
		if len(bops) == 0 || bops[0].Result == nil {
			t.Fatalf("%v: ops = %+v", settings, bops)
		}
		msg := bops[0].Result.Error
		t.Logf("%v: %s", settings, msg)
		if !strings.Contains(msg, "401") || !strings.Contains(msg, "sandbox_token_env") {
			t.Fatalf("%v: op error = %q, want the 401 named with sandbox_token_env", settings, msg)
		}
		b, _ := json.Marshal(bops)
		opsJSON = append(opsJSON, b...)
		events += rawEvents(t, p.base, bad)
	}

	// A variable that is not set refuses the run at start, naming it.
	b, _ := json.Marshal(map[string]any{"sandbox_url": url, "sandbox_token_env": "FLOCK_E2E_NO_SUCH_TOKEN"})
	_, err = p.c.Start(context.Background(), api.StartRequest{Workflow: "sandboxcalls", Settings: b})
	if err == nil || !strings.Contains(err.Error(), "FLOCK_E2E_NO_SUCH_TOKEN") || !strings.Contains(err.Error(), "sandbox_token_env") {
		t.Fatalf("start with an unset variable = %v, want a refusal naming sandbox_token_env and the variable", err)
	}

	p.kill()
	store, err := os.ReadFile(filepath.Join(data, "flock.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{canary, wrong} {
		for name, text := range map[string]string{"bbolt file": string(store), "ops": string(opsJSON), "events": events, "log": p.out.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s holds the token %q", name, secret)
			}
		}
	}
	// The log did record the calls (it is not just silent).
	if !strings.Contains(p.out.String(), id) {
		t.Errorf("the debug log never names the run %s: the search above proves nothing", id)
	}
}

// TestSandboxURLAttacks: a client of a flock server tries to make it send
// a secret of its environment, as a sandbox bearer token, to a host of the
// client's choosing, and to learn which variables the server has. Over
// HTTP, against the real binary holding FLOCK_AUTH_TOKEN:
//
//   - sandbox_url on loopback (flock's own host; also as 127.1, 0x7f000001
//     and [::ffff:127.0.0.1]) or a private or metadata address is refused
//     at start, as the web tools refuse them, unless the operator allows
//     the host;
//   - sandbox_token_env naming FLOCK_AUTH_TOKEN, or any variable the
//     operator does not list, is refused at start even where the URL is
//     allowed, with the same answer whether the variable is set or not;
//   - the listener the client points at never receives a request.
func TestSandboxURLAttacks(t *testing.T) {
	const token = "flock-e2e-own-token-91c3f0aa42d7"
	t.Setenv("FLOCK_AUTH_TOKEN", token)
	t.Setenv("FLOCK_E2E_LISTED_TOKEN", "listed-sandbox-token-5b2e")
	var mu sync.Mutex
	var got []string
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "trap", 500)
	}))
	t.Cleanup(trap.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(trap.URL, "http://"))

	dir := t.TempDir()
	wfDir, err := filepath.Abs("../handlers/sandboxop/testdata")
	if err != nil {
		t.Fatal(err)
	}
	start := func(p *proc, settings map[string]any) error {
		b, _ := json.Marshal(settings)
		_, err := p.c.Start(context.Background(), api.StartRequest{Workflow: "sandboxcalls", Settings: b})
		return err
	}
	open := func(name, config string) *proc {
		args := []string{"--workflows", wfDir, "--mode", "simulated"}
		if config != "" {
			cfg := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", cfg)
		}
		p := startServer(t, filepath.Join(dir, name), freePort(t), args...)
		c, err := client.New(p.base, client.WithToken(token))
		if err != nil {
			t.Fatal(err)
		}
		p.c = c
		return p
	}

	// A server with the default settings: no address but public ones.
	def := open("default", "")
	for _, u := range []string{trap.URL, "http://127.1:" + port, "http://0x7f000001:" + port, "http://[::ffff:127.0.0.1]:" + port,
		"http://localhost:" + port, "http://10.0.0.7:" + port, "http://169.254.169.254/latest"} {
		err := start(def, map[string]any{"sandbox_url": u, "sandbox_token_env": "FLOCK_AUTH_TOKEN"})
		if err == nil || !strings.Contains(err.Error(), "sandbox_url_allow_hosts") || !strings.Contains(err.Error(), "not a public address") {
			t.Errorf("sandbox_url %s: start = %v, want a refusal naming sandbox_url_allow_hosts", u, err)
		}
	}
	// The URL is public (nothing is dialled at start), the variables are
	// not listed: one answer, set or not.
	var answers []string
	for _, name := range []string{"FLOCK_AUTH_TOKEN", "FLOCK_E2E_LISTED_TOKEN", "FLOCK_E2E_NOT_SET_ANYWHERE"} {
		err := start(def, map[string]any{"sandbox_url": "http://93.184.215.14:9", "sandbox_token_env": name})
		if err == nil || !strings.Contains(err.Error(), "sandbox_token_envs") {
			t.Fatalf("sandbox_token_env %s: start = %v, want a refusal naming sandbox_token_envs", name, err)
		}
		answers = append(answers, strings.ReplaceAll(err.Error(), name, "NAME"))
	}
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Errorf("the refusals tell the variables apart:\n%s", strings.Join(answers, "\n"))
	}

	// A server whose operator allows 127.0.0.1 and lists one variable:
	// the server's own token still cannot be named.
	allowed := open("allowed", "sandbox_url_allow_hosts: [127.0.0.1]\nsandbox_token_envs: [FLOCK_E2E_LISTED_TOKEN]\n")
	err = start(allowed, map[string]any{"sandbox_url": trap.URL, "sandbox_token_env": "FLOCK_AUTH_TOKEN"})
	if err == nil || !strings.Contains(err.Error(), "sandbox_token_envs") {
		t.Fatalf("FLOCK_AUTH_TOKEN on an allowed host: start = %v, want a refusal naming sandbox_token_envs", err)
	}
	err = start(allowed, map[string]any{"sandbox_url": "http://10.0.0.7:" + port})
	if err == nil || !strings.Contains(err.Error(), "sandbox_url_allow_hosts") {
		t.Fatalf("a private host the operator did not list: start = %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Fatalf("the client's listener was called: %q", got)
	}
	for _, p := range []*proc{def, allowed} {
		if strings.Contains(p.out.String(), token) {
			t.Errorf("the server's log holds its token")
		}
	}
}
