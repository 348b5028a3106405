package reapertest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KillServerHelper runs this test binary's test named helper as a stand-in
// server, with env set to the markers joined by commas; the helper starts
// the processes that carry them and prints "ready" on stdout. Once they are
// alive the stand-in is killed with SIGKILL, and every marked process must
// be gone within 5 s: none may outlive a killed server.
func KillServerHelper(tb testing.TB, helper, env string, markers ...string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+strings.Join(markers, ","))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- nil
				return
			}
		}
		ready <- fmt.Errorf("helper ended without ready: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			tb.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		tb.Fatal("helper not ready after 30s")
	}
	WaitAlive(tb, time.Second, markers...)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	_ = cmd.Wait()
	WaitGone(tb, 5*time.Second, markers...)
}
