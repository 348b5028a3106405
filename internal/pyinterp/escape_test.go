package pyinterp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/reaper/reapertest"
)

// escapeesCode is a cell that starts processes that leave the
// interpreter's process group and session: a Popen with
// start_new_session, and an os.fork daemon (double fork, setsid, SIGHUP and
// SIGTERM ignored). Their argv[0] are the markers.
func escapeesCode(markers []string) string {
	return fmt.Sprintf(`import os, shutil, signal, subprocess
sl = shutil.which('sleep')
subprocess.Popen([%q, '300'], executable=sl, start_new_session=True)
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.execv(sl, [%q, '300'])
    os._exit(0)
os.waitpid(pid, 0)
`, markers[0], markers[1])
}

func escapeeMarkers(t *testing.T) []string {
	t.Helper()
	m := []string{reapertest.Marker(t, "popen"), reapertest.Marker(t, "fork")}
	t.Cleanup(func() { reapertest.KillAll(m...) })
	return m
}

// TestEscapeesDie starts processes that leave the interpreter's process
// group and session, and checks that each way a cell or an interpreter
// ends takes them along.
func TestEscapeesDie(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, h *Pool, env owner)
	}{
		{"timeout keeps the interpreter", func(t *testing.T, h *Pool, env owner) {
			run(t, h, env, "x = 42", 0)
			res := run(t, h, env, "import time\ntime.sleep(30)", 0.3)
			if !res.TimedOut {
				t.Fatalf("want a timeout: %+v", res)
			}
			if res := run(t, h, env, "print(x)", 0); res.Output != "42\n" {
				t.Fatalf("interpreter not kept: %+v", res)
			}
		}},
		{"timeout restarts the interpreter", func(t *testing.T, h *Pool, env owner) {
			res := run(t, h, env, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", 0.3)
			if !res.TimedOut || !strings.Contains(res.Error, "killed") {
				t.Fatalf("want a kill: %+v", res)
			}
		}},
		{"interpreter exits", func(t *testing.T, h *Pool, env owner) {
			run(t, h, env, "import os\nos._exit(3)", 0)
		}},
		{"CloseOwner", func(t *testing.T, h *Pool, env owner) { h.CloseOwner(env.Owner) }},
		{"Close", func(t *testing.T, h *Pool, env owner) { _ = h.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPool(t, Options{InterruptGrace: 200 * time.Millisecond})
			env := newEnv(t, "escape")
			markers := escapeeMarkers(t)
			if res := run(t, h, env, escapeesCode(markers), 0); res.Error != "" {
				t.Fatalf("start escapees: %+v", res)
			}
			reapertest.WaitAlive(t, 5*time.Second, markers...)
			tt.end(t, h, env)
			reapertest.WaitGone(t, 5*time.Second, markers...)
		})
	}
}

// helperEnv, when set in the environment, makes TestKilledServerHelper act
// as a server whose interpreter starts escapees and waits to be killed.
const helperEnv = "FLOCK_PYTHON_KILLED_SERVER_HELPER"

// TestKilledServerHelper is not a test: it is the server process of
// TestEscapeesDieWithKilledServer (the test binary re-executed).
func TestKilledServerHelper(t *testing.T) {
	markers := os.Getenv(helperEnv)
	if markers == "" {
		t.Skip("helper process only")
	}
	m := strings.Split(markers, ",")
	h := NewPool(Options{})
	env := newEnv(t, "killed")
	go handle(context.Background(), h, env, pyCell(escapeesCode(m)+"\nimport time\ntime.sleep(300)", 600))
	reapertest.WaitAlive(t, 10*time.Second, m...)
	fmt.Println("ready")
	select {} // until killed
}

// TestEscapeesDieWithKilledServer kills a server process with SIGKILL while
// its interpreter runs a cell and daemons that ignore SIGHUP and SIGTERM;
// none of them may outlive it.
func TestEscapeesDieWithKilledServer(t *testing.T) {
	if _, err := resolveInterpreter(context.Background(), ""); err != nil {
		t.Skip("no python3 interpreter: ", err)
	}
	markers := escapeeMarkers(t)
	reapertest.KillServerHelper(t, "TestKilledServerHelper", helperEnv, markers...)
}
