// Package reapertest finds processes by a marker in their command line, for
// tests that check that processes started by a shell or an interpreter are
// gone.
package reapertest

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Marker returns a string unique to this test process and name, usable as
// a process's argv[0] (exec -a) or argument.
func Marker(tb testing.TB, name string) string {
	tb.Helper()
	clean := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(tb.Name()+"-"+name, "-")
	return fmt.Sprintf("flock-escapee-%d-%s", os.Getpid(), clean)
}

// Alive returns the PIDs of live (not zombie) processes whose command line
// contains marker.
func Alive(marker string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cl, []byte(marker)) {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(st, ')'); i >= 0 {
			if f := strings.Fields(string(st[i+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// WaitAlive waits up to total until every marker has a live process.
func WaitAlive(tb testing.TB, total time.Duration, markers ...string) {
	tb.Helper()
	poll(tb, total, func() error {
		for _, m := range markers {
			if len(Alive(m)) == 0 {
				return fmt.Errorf("no live process with %q", m)
			}
		}
		return nil
	})
}

// WaitGone waits up to total until no marker has a live process, and
// kills the survivors (so that a failing test leaves nothing behind)
// before failing.
func WaitGone(tb testing.TB, total time.Duration, markers ...string) {
	tb.Helper()
	err := pollErr(total, func() error {
		for _, m := range markers {
			if pids := Alive(m); len(pids) > 0 {
				return fmt.Errorf("%q still alive: pids %v", m, pids)
			}
		}
		return nil
	})
	if err != nil {
		KillAll(markers...)
		tb.Fatal(err)
	}
}

// KillAll sends SIGKILL to every live process with one of markers; tests
// register it with t.Cleanup.
func KillAll(markers ...string) {
	for _, m := range markers {
		for _, pid := range Alive(m) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
}

func poll(tb testing.TB, total time.Duration, fn func() error) {
	tb.Helper()
	if err := pollErr(total, fn); err != nil {
		tb.Fatal(err)
	}
}

func pollErr(total time.Duration, fn func() error) error {
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("after %s: %w", total, err)
			}
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}
