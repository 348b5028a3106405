package e2e

// The programs flock starts, seen as untrusted: what they can reach when
// flock runs as an unprivileged user, and whether one can hold an
// operation past its bounds by leaving processes or model calls behind.

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
)

// testUID is the unprivileged user the tests run flock as when they run
// as root (CI): a number no account of a Debian machine uses, so that no
// other process shares it.
const testUID = 64123

// asUser returns the command prefix that runs a program as an
// unprivileged user, with that user's ids: nil and the test's own ids when
// the test does not run as root (it is that user already).
func asUser(t *testing.T) ([]string, int, int) {
	t.Helper()
	if os.Getuid() != 0 {
		return nil, os.Getuid(), os.Getgid()
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			t.Fatalf("setpriv is required (scripts/test.sh installs util-linux): %v", err)
		}
		t.Skipf("setpriv not found: %v", err)
	}
	id := strconv.Itoa(testUID)
	return []string{setpriv, "--reuid=" + id, "--regid=" + id, "--clear-groups", "--"}, testUID, testUID
}

// userDir is a fresh directory every user may enter, removed at the end
// of the test (t.TempDir's parent is the test user's alone).
func userDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "flock-e2e-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chownTree gives dir and everything in it to uid and gid.
func chownTree(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// linkBinary makes the flock binary available at dst (its build directory
// is the test user's alone).
func linkBinary(t *testing.T, dst string) {
	t.Helper()
	if os.Link(binary, dst) == nil {
		return
	}
	src, err := os.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// bwrapRunsAs reports whether bwrap can make flock's sandbox when run
// through as (nil: as the test's user). It needs that user's namespaces:
// where unprivileged user namespaces are off, it cannot.
func bwrapRunsAs(as []string) bool {
	argv := append(as[:len(as):len(as)], "bwrap", "--die-with-parent", "--unshare-all", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true")
	return exec.Command(argv[0], argv[1:]...).Run() == nil
}

// pathWithout returns the current PATH with the programs named left out:
// a directory of it that holds one of them is replaced by a directory
// inside dir of links to the rest of its programs.
func pathWithout(t *testing.T, dir string, names ...string) string {
	t.Helper()
	var path []string
	for i, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil || !slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return slices.Contains(names, e.Name()) }) {
			path = append(path, d)
			continue
		}
		links := filepath.Join(dir, "path"+strconv.Itoa(i))
		if err := os.Mkdir(links, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !slices.Contains(names, e.Name()) {
				if err := os.Symlink(filepath.Join(d, e.Name()), filepath.Join(links, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		path = append(path, links)
	}
	return strings.Join(path, string(filepath.ListSeparator))
}

// TestSecretsOutOfReachAsUser is TestSecretsOutOfReach's attack on a
// `flock serve` run by an unprivileged user (how most people run it; CI
// runs as root, so the test switches to an unused uid with setpriv), its
// token in a file outside the data directory (--auth-token-file, 0600,
// the server user's) and a provider key in its environment. Every probe
// (an external agent, a run's bash and python ops, a sandbox bash:run)
// also tries process_vm_readv and flock's open files, and the token file
// it is told of and finds on flock's command line.
//
//   - auto: bwrap where it runs as that user (unprivileged user
//     namespaces on), and then nothing leaks; where it does not, auto
//     falls back to unisolated (the start-up warning says so), as in the
//     next case.
//   - auto without bwrap (none on the PATH: how auto falls back whatever
//     this host allows): the programs run as the server's user and can
//     read what it can, flock.db and the token file (and use the token);
//     flock's environment, memory and open files stay out of reach through
//     ProtectSelf alone (non-dumpable: a same-user process holds no
//     CAP_SYS_PTRACE).
//   - none: the same, by the operator's choice.
//   - root auto: the token file is hidden from bwrap'd programs as the
//     data directory is.
func TestSecretsOutOfReachAsUser(t *testing.T) {
	needPython3(t)
	as, uid, gid := asUser(t)
	t.Run("auto", func(t *testing.T) {
		isolated := bwrapRunsAs(as)
		t.Logf("bwrap runs as uid %d: %v", uid, isolated)
		secretsAttack(t, attack{mode: "auto", isolated: isolated, tokenFile: true, as: as, uid: uid, gid: gid})
	})
	t.Run("auto without bwrap", func(t *testing.T) {
		t.Setenv("PATH", pathWithout(t, userDir(t), "bwrap"))
		secretsAttack(t, attack{mode: "auto", tokenFile: true, as: as, uid: uid, gid: gid})
	})
	t.Run("none", func(t *testing.T) {
		secretsAttack(t, attack{mode: "none", tokenFile: true, as: as, uid: uid, gid: gid})
	})
	t.Run("root auto", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("not root")
		}
		if !bwrapRunsAs(nil) {
			t.Skip("bwrap does not run here")
		}
		secretsAttack(t, attack{mode: "auto", isolated: true, tokenFile: true})
	})
}

// processesWith lists the PIDs of the live processes whose command line
// holds arg as one of its words.
func processesWith(t *testing.T, arg string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg) {
			out = append(out, e.Name())
		}
	}
	return out
}

// externalOp returns the result of the external op of run id.
func externalOp(t *testing.T, p *proc, id string) operations.ExternalResult {
	t.Helper()
	for _, op := range p.ops(id) {
		if op.Request.Type == "external" && op.Result != nil {
			var r operations.ExternalResult
			if err := json.Unmarshal(op.Result.Data, &r); err != nil {
				t.Fatalf("external result of %s: %v", id, err)
			}
			return r
		}
	}
	t.Fatalf("run %s has no external result: %+v", id, p.ops(id))
	return operations.ExternalResult{}
}

// TestExternalAgentLeavesAGrandchild: an agent program that exits while a
// grandchild it started (in a session of its own) holds its stdout and
// stderr open and sleeps for an hour. The external op must not wait for
// the grandchild: the run ends with the agent's answer, and the
// grandchild is gone by then (the reaper under the program ends its
// whole tree; under bwrap its PID namespace goes too). Under the default
// isolation and under none.
func TestExternalAgentLeavesAGrandchild(t *testing.T) {
	for _, mode := range []string{"auto", "none"} {
		t.Run(mode, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			p := startServer(t, data, freePort(t), "--mode", "simulated", "--isolation", mode)
			// A sleep of a length no other process uses names the grandchild.
			marker := fmt.Sprintf("3600.%09d", time.Now().UnixNano()%1e9)
			// The agent exits once the grandchild runs.
			id := p.start("external", map[string]any{
				"command": fmt.Sprintf(`setsid sh -c 'touch child.started; exec sleep %s' & `+
					`while [ ! -e child.started ]; do sleep 0.01; done; echo started >&2; echo '{"answer": "left a child"}'`, marker)})
			end := waitEnded(t, p, id, 60*time.Second)
			if end.Status != "succeeded" {
				t.Fatalf("run %s: %s %s\n%s", id, end.Status, end.Error, p.out.String())
			}
			if r := externalOp(t, p, id); r.Answer != "left a child" || r.ExitCode != 0 || r.Stderr != "started" {
				t.Fatalf("external result %+v", r)
			}
			if _, err := os.Stat(filepath.Join(data, "runs", id, "child.started")); err != nil {
				t.Fatalf("the grandchild never ran: %v", err)
			}
			if pids := processesWith(t, marker); len(pids) != 0 {
				t.Fatalf("the grandchild outlived its run: pids %v", pids)
			}
		})
	}
}

// inFlightModel is an OpenAI-compatible endpoint that holds every
// request: it first creates the file "go" in the directory the last
// message names (the agent's work directory, where the agent waits for
// it), then answers once release is closed, or never ("hang" in the
// message) until flock gives up on the request.
type inFlightModel struct {
	release chan struct{}
	mu      sync.Mutex
	calls   int
	gaveUp  int // requests whose client went away before an answer
}

func (m *inFlightModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := countChat(w, r, &m.mu, &m.calls)
	if !ok {
		return
	}
	dir, mode, _ := strings.Cut(req.Messages[len(req.Messages)-1].Content, " ")
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	release := m.release
	if mode == "hang" {
		release = nil
	}
	select {
	case <-release:
	case <-r.Context().Done():
		m.mu.Lock()
		m.gaveUp++
		m.mu.Unlock()
		return
	}
	writeChatReply(w, "late", req.Model, "stop", map[string]any{"role": "assistant", "content": "too late"})
}

// inFlightAgent sends one chat call (its work directory and the mode as
// the message) on a thread, waits until the model has it (the file
// "go"), prints its answer and exits with the call in flight. Its one
// argument names it among the processes.
const inFlightAgent = `import json, os, sys, threading, time, urllib.request
mode = os.environ["MODE"]
def call():
    body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": [{"role": "user", "content": os.getcwd() + " " + mode}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=3600)
    except Exception:
        pass
threading.Thread(target=call, daemon=True).start()
while not os.path.exists("go"):
    time.sleep(0.01)
print(json.dumps({"answer": "gone before the answer"}))
sys.stdout.flush()
os._exit(0)
`

// TestExternalAgentExitsWithACallInFlight: an agent program exits while
// its model call is in flight in flock's gateway (the generate of the
// session run's gateway_wait op is waiting for the model). The external
// op then waits only as long as that generate's own bounds allow:
//
//   - the model answers once the agent is gone: the run ends, the late
//     answer journaled and paid once (its tokens in the op's usage);
//   - the model never answers: the generate gives up at the model's
//     timeout_s (max_retries 0), and the run ends all the same.
func TestExternalAgentExitsWithACallInFlight(t *testing.T) {
	py := needPython3(t)
	t.Setenv("FLOCK_FAKE_MODEL_KEY", "sk-fake-key-for-tests")
	model := &inFlightModel{release: make(chan struct{})}
	fake := httptest.NewServer(model)
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.py")
	if err := os.WriteFile(agent, []byte(inFlightAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServer(t, filepath.Join(dir, "data"), freePort(t))
	start := func(mode, marker string) string {
		t.Helper()
		return p.start("external", map[string]any{
			"command": []string{py, agent, marker}, "model": "fake", "env": map[string]string{"MODE": mode},
			"models": map[string]any{"fake": map[string]any{"base_url": fake.URL + "/v1", "api_key_env": "FLOCK_FAKE_MODEL_KEY",
				"max_retries": 0, "timeout_s": 2}}})
	}

	t.Run("answered after the agent is gone", func(t *testing.T) {
		marker := fmt.Sprintf("agent-late-%d", time.Now().UnixNano())
		id := start("late", marker)
		// The model holds the call until the agent has exited.
		testkit.WaitWithin(t, 60*time.Second, "the agent to call the model and exit", func() bool {
			_, err := os.Stat(filepath.Join(dir, "data", "runs", id, "go"))
			return err == nil && len(processesWith(t, marker)) == 0
		})
		close(model.release)
		end := waitEnded(t, p, id, 60*time.Second)
		if end.Status != "succeeded" {
			t.Fatalf("run %s: %s %s\n%s", id, end.Status, end.Error, p.out.String())
		}
		r := externalOp(t, p, id)
		if r.Answer != "gone before the answer" || r.Usage.Tokens != 25 || len(r.SessionRuns) != 1 {
			t.Fatalf("external result %+v", r)
		}
		// The late answer is journaled in the session run (paid once).
		answered := 0
		for _, op := range p.ops(r.SessionRuns[0]) {
			var w operations.GatewayWaitResult
			if op.Request.Type == "gateway_wait" && op.Result != nil && json.Unmarshal(op.Result.Data, &w) == nil {
				for _, c := range w.Calls {
					if c.Result != nil && len(c.Result.Outputs) == 1 && c.Result.Outputs[0].Content == "too late" {
						answered++
					}
				}
			}
		}
		if answered != 1 {
			t.Fatalf("the session run journaled %d late answers, want 1", answered)
		}
	})

	t.Run("never answered", func(t *testing.T) {
		id := start("hang", fmt.Sprintf("agent-hang-%d", time.Now().UnixNano()))
		end := waitEnded(t, p, id, 60*time.Second)
		if end.Status != "succeeded" {
			t.Fatalf("run %s: %s %s\n%s", id, end.Status, end.Error, p.out.String())
		}
		if r := externalOp(t, p, id); r.Answer != "gone before the answer" || r.Usage.Tokens != 0 {
			t.Fatalf("external result %+v", r)
		}
		// flock gave up on the request (the model sees the connection
		// close a moment after flock's generate returns).
		testkit.WaitWithin(t, 10*time.Second, "the model to see flock give up on its call", func() bool {
			model.mu.Lock()
			defer model.mu.Unlock()
			return model.gaveUp == 1
		})
		model.mu.Lock()
		defer model.mu.Unlock()
		if model.calls != 2 {
			t.Fatalf("the model saw %d calls, want 2 (one each, no retry)", model.calls)
		}
	})
}
