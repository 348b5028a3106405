package testkit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeNPM writes an executable shell script standing in for npm.
func fakeNPM(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "npm")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// bounded runs npmInstall, failing the test if it does not return within
// DefaultTimeout (the hang these tests guard against).
func bounded(t *testing.T, ctx context.Context, npm string) ([]byte, error) {
	t.Helper()
	type res struct {
		out []byte
		err error
	}
	done := make(chan res, 1)
	go func() {
		out, err := npmInstall(ctx, npm, t.TempDir(), []string{"pkg"})
		done <- res{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(DefaultTimeout):
		t.Fatalf("npmInstall did not return within %v", DefaultTimeout)
		return nil, nil
	}
}

// TestNPMInstallStalledKillsGroup: an npm that stalls past its deadline
// with a child holding its output open is killed with the child, and the
// error says it did not finish in time.
func TestNPMInstallStalledKillsGroup(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	npm := fakeNPM(t, "echo fetching\nsleep 1000 &\ntouch "+started+"\nexec sleep 1000\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancelled once npm runs (a ctx already done never starts it).
		for {
			if _, err := os.Stat(started); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	out, err := bounded(t, ctx, npm)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "did not finish in time") {
		t.Fatalf("err = %v, output %q", err, out)
	}
}

// TestNPMInstallOrphanHoldingOutput: an npm that exits leaving a process
// outside its group with the output pipe open returns an error naming it
// instead of waiting for that process.
func TestNPMInstallOrphanHoldingOutput(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	npm := fakeNPM(t, "setsid sh -c 'echo $$ > "+pidFile+"; exec sleep 1000' &\n"+
		"while [ ! -s "+pidFile+" ]; do sleep 0.01; done\nexit 0\n")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	out, err := bounded(t, context.Background(), npm)
	if err == nil || !strings.Contains(err.Error(), "kept its output open") {
		t.Fatalf("err = %v, output %q", err, out)
	}
}

// TestNPMInstallFailureOutput: npm's own failure comes back with its
// output.
func TestNPMInstallFailureOutput(t *testing.T) {
	npm := fakeNPM(t, "echo 'E404 no such package' >&2\nexit 1\n")
	out, err := bounded(t, context.Background(), npm)
	if err == nil || !strings.Contains(string(out), "E404") {
		t.Fatalf("err = %v, output %q", err, out)
	}
}
