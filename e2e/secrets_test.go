package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/isolation"
)

// probeParams is what every probe below is told: flock's host PID, its
// data directory, files of other runs and sessions it must not read, and
// the server's address (where a stolen token would be used).
type probeParams struct {
	PID     int      `json:"pid"`
	Data    string   `json:"data"`
	Victims []string `json:"victims"`
	Base    string   `json:"base"`
	// TokenFile is the server's --auth-token-file ("" when its token
	// comes from its environment); the probes also look for it on the
	// server's command line.
	TokenFile string `json:"tokenfile"`
}

// shellProbe is the attack as a shell script (a run's bash op, a sandbox
// bash:run): read flock's environment (by its PID, by walking up the
// parents, and by scanning every /proc entry for the one holding this
// test's provider key, whose FLOCK_AUTH_TOKEN it takes), open
// its memory and its open files, read the token file (named or found on
// flock's command line), flock.db and other runs' and sessions' files, use
// a found token against GET /runs; then do ordinary work in the work
// directory. It prints one line: PROBE leaks=[...] stolen=[...] works=[...].
const shellProbe = `PID=%d; DATA=%q; BASE=%q; VICTIMS=%q; TOKENFILE=%q
leaks=""; tok=""
pids="$PID $(ls /proc | grep '^[0-9]')"
p=$$; while [ -n "$p" ] && [ "$p" -gt 1 ]; do pids="$pids $p"; p=$(awk '/^PPid:/{print $2}' /proc/$p/status 2>/dev/null); done
for q in $pids; do
  env=$(tr '\0' '\n' < /proc/$q/environ 2>/dev/null)
  if printf '%%s\n' "$env" | grep -q '^FLOCK_E2E_PROVIDER_KEY='; then
    leaks="$leaks environ:$q"; tok=$(printf '%%s\n' "$env" | sed -n 's/^FLOCK_AUTH_TOKEN=//p' | head -n 1)
  fi
done
(exec 3</proc/$PID/mem) 2>/dev/null && leaks="$leaks mem"
for f in /proc/$PID/fd/*; do readlink "$f" >/dev/null 2>&1 && { leaks="$leaks fd"; break; }; done
tfs="$TOKENFILE $(tr '\0' '\n' < /proc/$PID/cmdline 2>/dev/null | sed -n '/^--auth-token-file$/{n;p}')"
for f in $tfs; do
  if t=$(cat "$f" 2>/dev/null); then leaks="$leaks tokenfile"; [ -n "$tok" ] || tok=$(printf '%%s' "$t" | tr -d ' \n'); break; fi
done
head -c 16 "$DATA/flock.db" >/dev/null 2>&1 && leaks="$leaks db"
for v in $VICTIMS; do cat "$v" >/dev/null 2>&1 && leaks="$leaks victim:$v"; done
stolen=""
[ -n "$tok" ] && stolen=$(curl -s -o /dev/null -w '%%{http_code}' -H "Authorization: Bearer $tok" "$BASE/runs" || echo "found; curl failed")
works=""
echo mine > own.txt && [ "$(cat own.txt)" = mine ] && works=yes
echo "PROBE leaks=[$leaks] stolen=[$stolen] works=[$works]"
`

// pythonProbe is the same attack in Python (an external agent program, a
// run's python op). It writes the PROBE line to probe.txt in the work
// directory and prints it.
const pythonProbe = `import ctypes, errno, json, os, urllib.request, urllib.error
P = json.loads(%q)
leaks, tok = [], None
def read(path, n=-1):
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except Exception:
        return None
pids = [P["pid"]] + [int(d) for d in os.listdir("/proc") if d.isdigit()]
p = os.getpid()
while p > 1:
    pids.append(p)
    st = (read("/proc/%%d/status" %% p) or b"").decode()
    p = next((int(l.split()[1]) for l in st.splitlines() if l.startswith("PPid:")), 0)
for q in pids:
    env = (read("/proc/%%d/environ" %% q) or b"").split(b"\0")
    if any(kv.startswith(b"FLOCK_E2E_PROVIDER_KEY=") for kv in env):
        leaks.append("environ:%%d" %% q)
        tok = next((kv.split(b"=", 1)[1].decode() for kv in env if kv.startswith(b"FLOCK_AUTH_TOKEN=")), None)
try:
    os.close(os.open("/proc/%%d/mem" %% P["pid"], os.O_RDONLY))
    leaks.append("mem")
except OSError:
    pass
# process_vm_readv of flock's text (a Go binary's is at 0x400000): EPERM or
# ESRCH is a refusal; a read, or EFAULT (allowed, bad address), is not.
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
libc = ctypes.CDLL(None, use_errno=True)
n = libc.process_vm_readv(P["pid"], ctypes.byref(iovec(ctypes.addressof(buf), 8)), 1, ctypes.byref(iovec(0x400000, 8)), 1, 0)
if n >= 0 or ctypes.get_errno() == errno.EFAULT:
    leaks.append("vmread")
try:
    for fd in os.listdir("/proc/%%d/fd" %% P["pid"]):
        os.readlink("/proc/%%d/fd/%%s" %% (P["pid"], fd))
        leaks.append("fd")
        break
except OSError:
    pass
cmdline = (read("/proc/%%d/cmdline" %% P["pid"]) or b"").split(b"\0")
tokenfiles = [P["tokenfile"]] + [cmdline[i + 1].decode() for i, a in enumerate(cmdline[:-1]) if a == b"--auth-token-file"]
for f in tokenfiles:
    t = read(f) if f else None
    if t is not None:
        leaks.append("tokenfile")
        tok = tok or t.decode().strip()
        break
if read(P["data"] + "/flock.db", 16) is not None:
    leaks.append("db")
for v in P["victims"]:
    if read(v) is not None:
        leaks.append("victim:" + v)
stolen = ""
if tok:
    req = urllib.request.Request(P["base"] + "/runs", headers={"Authorization": "Bearer " + tok})
    try:
        stolen = str(urllib.request.urlopen(req, timeout=10).status)
    except urllib.error.HTTPError as e:
        stolen = str(e.code)
    except Exception as e:
        stolen = "error " + str(e)
with open("own.txt", "w") as f:
    f.write("mine")
works = "yes" if read("own.txt") == b"mine" else ""
line = "PROBE leaks=[%%s] stolen=[%%s] works=[%%s]" %% (" ".join(leaks), stolen, works)
with open("probe.txt", "w") as f:
    f.write(line + "\n")
print(line)
`

// probeWorkflow runs a bash op and a python op with the code its settings
// give.
const probeWorkflow = `name: secretprobe
required: [probe_bash, probe_python]
phases:
  - name: probe
    ops:
      - kind: bash
        params: {command: "${settings.probe_bash}", timeout_s: 60}
      - kind: python
        params: {code: "${settings.probe_python}", timeout_s: 60}
    transitions:
      - end: {reason: probed}
`

var probeLine = regexp.MustCompile(`PROBE leaks=\[([^\]]*)\] stolen=\[([^\]]*)\] works=\[([^\]]*)\]`)

// probeResult parses a probe's line out of text.
func probeResult(t *testing.T, where, text string) (leaks []string, stolen, works string) {
	t.Helper()
	m := probeLine.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no probe line in %q", where, text)
	}
	return strings.Fields(m[1]), m[2], m[3]
}

// TestSecretsOutOfReach attacks a `flock serve` holding FLOCK_AUTH_TOKEN
// and a provider key in its environment, with the sandbox service mounted,
// from every kind of program it starts: an external agent (Python), a
// run's bash op and python op, and a sandbox bash:run over the HTTP API.
// Each tries to read flock's environment (by its host PID, its parents and
// every /proc entry) and memory, flock.db, another run's work directory and
// another session's workspace, and to use a token it found on GET /runs.
//
// Under the default isolation (bwrap where it runs) every read fails and
// the programs still work in their own directories. Under --isolation none
// (the operator's opt-out) flock's environment and memory stay out of
// reach (flock is not dumpable and its children lack CAP_SYS_PTRACE), while
// the data directory is readable: the probe shows it, so it can see a leak.
func TestSecretsOutOfReach(t *testing.T) {
	needPython3(t)
	for _, mode := range []string{"auto", "none"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "auto" {
				if err := isolation.Available(); err != nil {
					if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
						t.Fatalf("bwrap is required (scripts/test.sh installs it): %v", err)
					}
					t.Skipf("bwrap unavailable: %v", err)
				}
			}
			secretsAttack(t, attack{mode: mode, isolated: mode == "auto"})
		})
	}
}

// attack is how secretsAttack starts the server it attacks.
type attack struct {
	// mode is --isolation; isolated says whether its programs are
	// expected to run under bwrap.
	mode     string
	isolated bool
	// tokenFile gives the token by --auth-token-file (a file outside
	// the data directory) instead of FLOCK_AUTH_TOKEN.
	tokenFile bool
	// as, when set, runs the server as another user: the command line
	// that runs a program as that user (setpriv ... --), and the user.
	as       []string
	uid, gid int
}

func secretsAttack(t *testing.T, a attack) {
	const token = "flock-e2e-canary-token-7d0c1b9a55e2"
	const key = "sk-e2e-canary-provider-key-3a9f"
	t.Setenv("FLOCK_E2E_PROVIDER_KEY", key)
	dir, flock := t.TempDir(), []string{binary}
	if a.as != nil {
		dir = userDir(t)
		flock = append(a.as[:len(a.as):len(a.as)], filepath.Join(dir, "flock"))
		linkBinary(t, flock[len(flock)-1])
		t.Setenv("HOME", filepath.Join(dir, "home"))
	}
	data := filepath.Join(dir, "data")
	sbCfg := filepath.Join(dir, "sandbox.json")
	wfDir := filepath.Join(dir, "workflows")
	agentDir := filepath.Join(dir, "agent")
	for _, d := range []string{wfDir, agentDir, filepath.Join(dir, "home"), filepath.Join(dir, "secret")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(sbCfg, `{"resources": {"bash": {"enabled": true}}}`)
	writeFile(filepath.Join(wfDir, "secretprobe.yaml"), probeWorkflow)
	flags := []string{"--sandbox-config", sbCfg, "--workflows", wfDir, "--mode", "simulated", "--isolation", a.mode}
	tokenFile := ""
	if a.tokenFile {
		tokenFile = filepath.Join(dir, "secret", "token")
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "--auth-token-file", tokenFile)
	} else {
		t.Setenv("FLOCK_AUTH_TOKEN", token)
	}
	agent := filepath.Join(agentDir, "probe.py")
	if a.as != nil {
		chownTree(t, dir, a.uid, a.gid)
	}
	p := startServerVia(t, flock, data, freePort(t), flags...)
	// The start-up warning of auto says whether programs run isolated.
	if unisolated := strings.Contains(p.out.String(), "run unisolated"); a.mode == "auto" && unisolated == a.isolated {
		t.Fatalf("isolation auto: want isolated %v; server log:\n%s", a.isolated, p.out.String())
	}
	c, err := client.New(p.base, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	p.c = c
	api := func(path string, body any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, p.base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return out
	}
	bashRun := func(worker, command string) string {
		t.Helper()
		env := api("/api/v1/execute", map[string]any{"worker_id": worker, "action": "bash:run", "params": map[string]any{"command": command, "timeout": 60}})
		d, _ := env["data"].(map[string]any)
		out, _ := d["stdout"].(string)
		if code, _ := env["code"].(float64); code != 0 || out == "" {
			t.Fatalf("bash:run for %s: %v", worker, env)
		}
		return out
	}

	// The token works, so a stolen one would: the control.
	tokenGuardsRuns(t, p.base, token)

	// Victims: a finished run's file and another sandbox session's.
	victimRun := p.start("script", map[string]any{"commands": []string{"echo victim-secret > victim.txt"}})
	if end := waitEnded(t, p, victimRun, 60*time.Second); end.Status != "succeeded" {
		t.Fatalf("victim run: %s %s\n%s", end.Status, end.Error, p.out.String())
	}
	if env := api("/api/v1/session/create", map[string]any{"worker_id": "victim", "resource_type": "bash"}); env["code"] != float64(0) {
		t.Fatalf("create the victim session: %v", env)
	}
	victimWS := strings.TrimSpace(bashRun("victim", "echo victim-secret > v.txt; pwd"))
	params := probeParams{PID: p.cmd.Process.Pid, Data: data, Base: p.base, TokenFile: tokenFile,
		Victims: []string{filepath.Join(data, "runs", victimRun, "victim.txt"), filepath.Join(victimWS, "v.txt")}}
	for _, v := range params.Victims {
		if b, err := os.ReadFile(v); err != nil || strings.TrimSpace(string(b)) != "victim-secret" {
			t.Fatalf("victim file %s: %q %v", v, b, err)
		}
	}
	// The sandbox config is the operator's (it may hold an MCP server's
	// credentials): hidden under bwrap as the token file is.
	params.Victims = append(params.Victims, sbCfg)
	pj, _ := json.Marshal(params)
	shell := fmt.Sprintf(shellProbe, params.PID, params.Data, params.Base, strings.Join(params.Victims, " "), params.TokenFile)
	py := fmt.Sprintf(pythonProbe, string(pj))

	type outcome struct{ where, text string }
	var outcomes []outcome

	// An external agent program (Python).
	writeFile(agent, py)
	ext := p.start("external", map[string]any{"command": []string{"python3", agent}})
	if end := waitEnded(t, p, ext, 60*time.Second); end.Status != "succeeded" {
		t.Fatalf("external probe: %s %s\n%s", end.Status, end.Error, p.out.String())
	}
	b, err := os.ReadFile(filepath.Join(data, "runs", ext, "probe.txt"))
	if err != nil {
		t.Fatalf("the external probe left no report: %v", err)
	}
	outcomes = append(outcomes, outcome{"external agent", string(b)})

	// A run's bash op and python op.
	run := p.start("secretprobe", map[string]any{"probe_bash": shell, "probe_python": py})
	if end := waitEnded(t, p, run, 60*time.Second); end.Status != "succeeded" {
		t.Fatalf("probe run: %s %s\n%s", end.Status, end.Error, p.out.String())
	}
	ops := p.ops(run)
	if len(ops) != 2 || ops[0].Result == nil || ops[1].Result == nil {
		t.Fatalf("probe run ops: %+v", ops)
	}
	for i, op := range ops {
		var r struct {
			Stdout, Output, Error string
		}
		_ = json.Unmarshal(op.Result.Data, &r)
		outcomes = append(outcomes, outcome{[]string{"bash op", "python op"}[i], r.Stdout + r.Output + r.Error + op.Result.Error})
	}

	// A sandbox session's bash:run over the HTTP API.
	outcomes = append(outcomes, outcome{"sandbox bash:run", bashRun("attacker", shell)})

	for _, o := range outcomes {
		leaks, stolen, works := probeResult(t, o.where, o.text)
		t.Logf("%s (isolation %s, isolated %v): leaks %v, stolen %q, works %q", o.where, a.mode, a.isolated, leaks, stolen, works)
		if works != "yes" {
			t.Errorf("%s: the program could not work in its own directory", o.where)
		}
		var want []string
		wantStolen := ""
		if !a.isolated {
			// Unisolated (opted out, or auto without a working bwrap):
			// the program runs as the server's user and reads what that
			// user can, the data directory and the token file too (the
			// probe can tell, and uses the token); flock's process stays
			// out of reach.
			want = []string{"db"}
			if a.tokenFile {
				want, wantStolen = append(want, "tokenfile"), "200"
			}
		}
		if stolen != wantStolen {
			t.Errorf("%s: GET /runs with a token it found: %q, want %q", o.where, stolen, wantStolen)
		}
		var got []string
		for _, l := range leaks {
			if !strings.HasPrefix(l, "victim:") {
				got = append(got, l)
			}
		}
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: read %v, want %v", o.where, got, want)
		}
		if a.isolated && len(leaks) != 0 {
			t.Errorf("%s: read %v", o.where, leaks)
		}
	}

	// Neither the token nor the key reached a run's journal.
	for _, id := range []string{ext, run} {
		for _, op := range p.ops(id) {
			j, _ := json.Marshal(op)
			if bytes.Contains(j, []byte(token)) || bytes.Contains(j, []byte(key)) {
				t.Errorf("run %s's journal holds a secret", id)
			}
		}
	}
}

// TestAuthTokenFile: flock serve reads its token from a file
// (--auth-token-file, FLOCK_AUTH_TOKEN_FILE, auth_token_file in --config),
// so that it is in neither its command line nor its environment; a token
// on the command line is warned about; two sources at once, or an empty
// file, are refused without quoting anything.
func TestAuthTokenFile(t *testing.T) {
	const token = "flock-e2e-file-token-6c2d8e0b14f7"
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(cfg, []byte("auth_token_file: token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, p *proc) {
		t.Helper()
		tokenGuardsRuns(t, p.base, token)
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.cmd.Process.Pid, f))
			if err != nil {
				t.Logf("reading the server's %s: %v", f, err)
				continue
			}
			if bytes.Contains(b, []byte(token)) {
				t.Errorf("the token is in the server's %s", f)
			}
		}
	}
	t.Run("flag", func(t *testing.T) {
		p := startServer(t, filepath.Join(dir, "d1"), freePort(t), "--auth-token-file", file)
		check(t, p)
		// The client commands read the token from a file too.
		for _, args := range [][]string{{"runs", "list"}, {"workflows"}} {
			cmd := exec.Command(binary, append(args, "--server", p.base, "--token-file", file)...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("flock %s --token-file: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("FLOCK_AUTH_TOKEN_FILE", file)
		check(t, startServer(t, filepath.Join(dir, "d2"), freePort(t)))
	})
	t.Run("config file", func(t *testing.T) {
		check(t, startServer(t, filepath.Join(dir, "d3"), freePort(t), "--config", cfg))
	})
	t.Run("command line warned", func(t *testing.T) {
		p := startServer(t, filepath.Join(dir, "d4"), freePort(t), "--auth-token", token)
		if !strings.Contains(p.out.String(), "--auth-token-file") {
			t.Errorf("no warning about a token on the command line:\n%s", p.out.String())
		}
	})
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"both":  {"--auth-token", token, "--auth-token-file", file},
		"empty": {"--auth-token-file", empty},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"serve", "--addr", freePort(t), "--data", filepath.Join(dir, "d-"+name)}, args...)...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the server started:\n%s", out)
			}
			if !strings.Contains(string(out), "token") || strings.Contains(strings.ReplaceAll(string(out), "--auth-token "+token, ""), token) {
				t.Fatalf("refusal %q: want one naming the token source and quoting nothing", out)
			}
		})
	}
}

// tokenGuardsRuns fails unless GET /runs of the server at base answers
// 401 without a token and 200 with token.
func tokenGuardsRuns(t *testing.T, base, token string) {
	t.Helper()
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer " + token, 200}} {
		req, _ := http.NewRequest(http.MethodGet, base+"/runs", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("GET /runs with %q = %d, want %d", c.auth, resp.StatusCode, c.want)
		}
	}
}
