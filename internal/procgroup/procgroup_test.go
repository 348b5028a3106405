package procgroup_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/procgroup"
	"github.com/flockrun/flock/internal/testkit"
)

// bounded runs Run in a goroutine, failing the test if it does not return
// within testkit.DefaultTimeout (the hang Run exists to prevent).
func bounded(t *testing.T, cmd *exec.Cmd, waitDelay time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- procgroup.Run(cmd, waitDelay) }()
	select {
	case err := <-done:
		return err
	case <-time.After(testkit.DefaultTimeout):
		t.Fatalf("Run did not return within %v", testkit.DefaultTimeout)
		return nil
	}
}

// readPID reads a PID a script wrote.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestRunCancelKillsGroup: a program that stalls with a child holding its
// output is killed with the child when its context ends; without the
// group kill, Run waits for the child.
func TestRunCancelKillsGroup(t *testing.T) {
	dir := t.TempDir()
	started, child := filepath.Join(dir, "started"), filepath.Join(dir, "child")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c",
		"sleep 1000 & echo $! > "+child+"; touch "+started+"; exec sleep 1000")
	var out bytes.Buffer
	cmd.Stdout = &out
	go func() {
		// Cancelled once the program runs (a context already done
		// never starts it).
		for ctx.Err() == nil {
			if _, err := os.Stat(started); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// A WaitDelay longer than the test's deadline: only the group kill
	// can end the wait in time.
	err := bounded(t, cmd, time.Hour)
	if err == nil || ctx.Err() == nil {
		t.Fatalf("err = %v, ctx %v", err, ctx.Err())
	}
	pid := readPID(t, child)
	testkit.WaitFor(t, "the child to be gone", func() bool { return !testkit.Alive(pid) })
}

// TestRunOrphanHoldingOutput: a program that exits leaving a process
// outside its group with the output open returns ErrWaitDelay instead of
// waiting for that process.
func TestRunOrphanHoldingOutput(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.CommandContext(context.Background(), "/bin/sh", "-c",
		"setsid sh -c 'echo $$ > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+"; exec sleep 1000' &\n"+
			"while [ ! -s "+pidFile+" ]; do sleep 0.01; done")
	var out bytes.Buffer
	cmd.Stdout = &out
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if err := bounded(t, cmd, 100*time.Millisecond); !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("err = %v, want exec.ErrWaitDelay", err)
	}
}

// TestRunLeftoverKilled: a program that exits normally leaves nothing of
// its group behind.
func TestRunLeftoverKilled(t *testing.T) {
	child := filepath.Join(t.TempDir(), "child")
	cmd := exec.CommandContext(context.Background(), "/bin/sh", "-c",
		"sleep 1000 >/dev/null 2>&1 & echo $! > "+child)
	if err := bounded(t, cmd, time.Second); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, child)
	testkit.WaitFor(t, "the leftover to be gone", func() bool { return !testkit.Alive(pid) })
}
