package shell

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
)

// TestCancelAtAnyMoment cancels commands at moments where one SIGINT is not
// enough: while bash itself runs (a loop of builtins), and as soon as a
// child has done its work (the SIGINT may land as `touch` exits; bash then
// treats it as handled by the child and runs the next command). The
// command must end at once, not after the grace period, with its output
// kept exactly, and the session must work after.
//
// More SIGINTs may reach the shell while it answers the cancel: SIGINT is
// sent again when the shell is slow to answer, and the reaper forwards
// each one to the group and to the shell itself. One that lands while the
// shell prints the marker must not lose or split it: the marker must
// still come, whole, from a later copy of the marker line. The third case
// lands a SIGINT there every round, just before the stdout marker is
// written, through a DEBUG trap that the command sets and that removes
// itself; the fourth sends the shell a burst of SIGINTs at random moments
// of the first milliseconds after the cancel.
//
// The grace period is lengthened to a minute so that "at once" needs no
// tight timing: a lost marker would hold each round for the whole minute.
func TestCancelAtAnyMoment(t *testing.T) {
	defer func(g time.Duration) { interruptGrace = g }(interruptGrace)
	interruptGrace = time.Minute
	inMarker := fmt.Sprintf(`set -T; trap '[[ ${FUNCNAME[0]} == __flock_mark && $BASH_COMMAND == *">&%d"* ]] && { trap - DEBUG; kill -INT $$; }' DEBUG; `, fdOut)
	cases := []struct {
		name, command, stdout string
		burst                 bool // SIGINTs to the shell, whose PID is in started
	}{
		{"builtin loop", "echo partial; touch started; while :; do :; done", "partial\n", false},
		{"between commands", "printf partial; touch started; sleep 30.5; sleep 30.5", "partial", false},
		{"SIGINT in the marker", inMarker + "echo partial; touch started; sleep 30.5", "partial\n", false},
		{"SIGINT burst", "echo partial; echo $$ >started; while :; do :; done", "partial\n", true},
	}
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 10 {
				flag := filepath.Join(env.WorkDir, "started")
				_ = os.Remove(flag)
				ctx, cancel := context.WithCancel(context.Background())
				var res reply
				var wg sync.WaitGroup
				wg.Go(func() { res = handle(ctx, h, env, bashCmd(tc.command, 60, "")) })
				var shellProc *os.Process
				testkit.CheckFor(t, 10*time.Second, func() error {
					b, err := os.ReadFile(flag)
					if err != nil || !tc.burst {
						return err
					}
					pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
					if err != nil {
						return err
					}
					// A pidfd: a SIGINT sent after the shell is gone
					// reaches no other process.
					shellProc, err = os.FindProcess(pid)
					return err
				})
				start := time.Now()
				cancel()
				if shellProc != nil {
					for range 10 {
						time.Sleep(rand.N(time.Millisecond))
						_ = shellProc.Signal(os.Interrupt)
					}
					_ = shellProc.Release()
				}
				wg.Wait()
				// Far under the grace period: the marker came back, the
				// shell was not left to run until the kill.
				if elapsed := time.Since(start); elapsed > interruptGrace/3 {
					t.Errorf("round %d: cancel took %s", i, elapsed)
				}
				// The line break bash prints after a job that SIGINT killed
				// is dropped; when two SIGINTs were needed and bash was slow
				// to answer the first, one of its two may stay (shell.go,
				// interrupt), so only the text is compared exactly.
				if res.Error != "cancelled" || res.Data == nil || strings.TrimSuffix(res.Data.Stdout, "\n") != strings.TrimSuffix(tc.stdout, "\n") {
					t.Fatalf("round %d: error %q result %+v, want stdout %q", i, res.Error, res.Data, tc.stdout)
				}
				if got := run(t, h, env, "echo again"); got.Stdout != "again\n" {
					t.Fatalf("round %d: after cancel: %+v", i, got)
				}
			}
		})
	}
}
