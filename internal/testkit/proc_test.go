package testkit

import (
	"os"
	"os/exec"
	"testing"
)

// TestAlive: the test's own process is alive; a child that exited is not,
// a zombie before it is reaped and gone after.
func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("the test's own process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	WaitFor(t, "the exited child to be a zombie", func() bool { return !Alive(pid) })
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatal("a reaped child is alive")
	}
}
