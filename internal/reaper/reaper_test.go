//go:build linux

package reaper

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/reaper/reapertest"
)

// start runs bash -c script under a reaper, with env added to its
// environment (markers go there: the reaper's own command line holds the
// script).
func start(t *testing.T, script string, env ...string) *Process {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	p, err := Start(Spec{Path: bash, Args: []string{"bash", "-c", script}, Env: append([]string{"PATH=" + os.Getenv("PATH")}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExitStatusIsTheChilds checks that the reaper ends the way its child
// did: same exit code, or the same signal.
func TestExitStatusIsTheChilds(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{"success", "exit 0", "exit status 0"},
		{"exit code", "exit 7", "exit status 7"},
		{"signal", "kill -SEGV $$", "signal: segmentation fault"},
		{"killed", "kill -KILL $$", "signal: killed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := start(t, tt.script).Wait()
			if st.String() != tt.want {
				t.Fatalf("state %q, want %q", st, tt.want)
			}
		})
	}
}

// TestKillEndsEscapees kills a reaper whose child left daemons in other
// sessions that ignore SIGHUP and SIGTERM.
func TestKillEndsEscapees(t *testing.T) {
	m := []string{reapertest.Marker(t, "a"), reapertest.Marker(t, "b")}
	t.Cleanup(func() { reapertest.KillAll(m...) })
	p := start(t, `trap '' HUP TERM
setsid bash -c 'exec -a "$M0" sleep 300' &
( ( setsid bash -c 'exec -a "$M1" sleep 300' & ) & )
exec sleep 300`, "M0="+m[0], "M1="+m[1])
	reapertest.WaitAlive(t, 5*time.Second, m...)
	p.Kill()
	if st, _ := p.Wait(); st.String() != "signal: killed" {
		t.Fatalf("after Kill: %q", st)
	}
	// Wait returns after the sweep: nothing may be left at all.
	if pids := append(reapertest.Alive(m[0]), reapertest.Alive(m[1])...); len(pids) > 0 {
		t.Fatalf("alive after Wait: %v", pids)
	}
}

// TestKillDescendantsSparesKeep kills everything under the reaper but the
// named process and its ancestors.
func TestKillDescendantsSparesKeep(t *testing.T) {
	m := reapertest.Marker(t, "victim")
	t.Cleanup(func() { reapertest.KillAll(m) })
	dir := t.TempDir()
	p := start(t, `echo $$ > "$DIR/pid"; ( setsid bash -c 'exec -a "$M" sleep 300' & ); exec sleep 300`, "M="+m, "DIR="+dir)
	t.Cleanup(func() { p.Kill(); _, _ = p.Wait() })
	reapertest.WaitAlive(t, 5*time.Second, m)
	var child int
	if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil { // written before the marker starts
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if err := p.KillDescendants(child); err != nil {
		t.Fatal(err)
	}
	reapertest.WaitGone(t, time.Second, m)
	if err := syscall.Kill(child, 0); err != nil {
		t.Fatalf("the spared child is gone: %v", err)
	}
	if err := p.KillDescendants(1 << 30); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown keep: %v, want ErrNotFound", err)
	}
	p.Kill()
	if st, _ := p.Wait(); st.String() != "signal: killed" {
		t.Fatalf("after Kill: %q", st)
	}
}
