package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/reaper/reapertest"
)

// escapees returns a command that starts three processes that leave the
// shell's process group, and their markers: a setsid sleep, a
// double-forked daemon, and a double-forked setsid one that ignores SIGHUP
// and SIGTERM and has its stdio on /dev/null (a nohup-style daemon).
func escapees(t *testing.T) (command string, markers []string) {
	t.Helper()
	m := []string{reapertest.Marker(t, "setsid"), reapertest.Marker(t, "double"), reapertest.Marker(t, "daemon")}
	t.Cleanup(func() { reapertest.KillAll(m...) })
	command = fmt.Sprintf(`setsid bash -c 'exec -a %[1]s sleep 300' &
( ( exec -a %[2]s sleep 300 & ) & )
( setsid bash -c "trap '' HUP TERM; exec -a %[3]s sleep 300" </dev/null >/dev/null 2>&1 & ) &
true`, m[0], m[1], m[2])
	return command, m
}

// TestEscapeesDie starts processes that leave the shell's process group and
// session, and checks that each way a shell ends takes them along.
func TestEscapeesDie(t *testing.T) {
	tests := []struct {
		name    string
		end     func(t *testing.T, h *Pool, env owner)
		restart bool // the session goes on with a new shell
	}{
		{"timeout", func(t *testing.T, h *Pool, env owner) {
			res := handle(context.Background(), h, env, bashCmd("sleep 30", 0.3, ""))
			if res.Data == nil || !res.Data.TimedOut {
				t.Fatalf("want a timeout, got %q %+v", res.Error, res.Data)
			}
		}, true},
		{"shell exits", func(t *testing.T, h *Pool, env owner) {
			if res := run(t, h, env, "exit 3"); res.ExitCode != 3 {
				t.Fatalf("exit code %d, want 3", res.ExitCode)
			}
		}, true},
		{"CloseOwner", func(t *testing.T, h *Pool, env owner) { h.CloseOwner(env.Owner) }, false},
		{"Close", func(t *testing.T, h *Pool, env owner) { _ = h.Close() }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPool(t, Options{})
			env := newEnv(t, "escape")
			command, markers := escapees(t)
			run(t, h, env, command)
			reapertest.WaitAlive(t, 5*time.Second, markers...)
			tt.end(t, h, env)
			reapertest.WaitGone(t, 5*time.Second, markers...)
			if tt.restart {
				// The session restarts and works.
				if res := run(t, h, env, "echo again"); res.Stdout != "again\n" {
					t.Fatalf("after restart: %+v", res)
				}
			}
		})
	}
}

// TestEscapeesDieWithTimedOutCommand times out the command that started
// the escapees while it still runs.
func TestEscapeesDieWithTimedOutCommand(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "escape")
	command, markers := escapees(t)
	res := handle(context.Background(), h, env, bashCmd(command+"\nsleep 30", 1, ""))
	if res.Data == nil || !res.Data.TimedOut {
		t.Fatalf("want a timeout, got %q %+v", res.Error, res.Data)
	}
	reapertest.WaitGone(t, 5*time.Second, markers...)
}

// helperEnv, when set in the environment, makes TestKilledServerHelper act
// as a server that starts escapees and waits to be killed.
const helperEnv = "FLOCK_BASH_KILLED_SERVER_HELPER"

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
	command := fmt.Sprintf(`setsid bash -c "trap '' HUP TERM; exec -a %[1]s sleep 300" &
( ( trap '' HUP TERM; exec -a %[2]s sleep 300 & ) & )
sleep 300`, m[0], m[1])
	go handle(context.Background(), h, env, bashCmd(command, 600, ""))
	reapertest.WaitAlive(t, 10*time.Second, m...)
	fmt.Println("ready")
	select {} // until killed
}

// TestEscapeesDieWithKilledServer kills a server process with SIGKILL while
// its shell runs a command and daemons that ignore SIGHUP and SIGTERM; none
// of them may outlive it.
func TestEscapeesDieWithKilledServer(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	markers := []string{reapertest.Marker(t, "setsid"), reapertest.Marker(t, "double")}
	t.Cleanup(func() { reapertest.KillAll(markers...) })
	reapertest.KillServerHelper(t, "TestKilledServerHelper", helperEnv, markers...)
}
