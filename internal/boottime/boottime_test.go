package boottime

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNowCountsAStoppedProcess stops a child process with SIGSTOP while
// it measures a pause with Now, and checks that the child's clock counted
// the time it was stopped: the child reads Now, says it is ready, is
// stopped for 300 ms, and reports how much Now advanced.
func TestNowCountsAStoppedProcess(t *testing.T) {
	if os.Getenv("BOOTTIME_CHILD") == "1" {
		before := Now()
		os.Stdout.WriteString("ready\n")
		// Wait for the parent's go-ahead (stdin closed) after the stop.
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf)
		os.Stdout.WriteString(strconv.FormatInt(int64(Now()-before), 10) + "\n")
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("SIGSTOP of a child is tested on Linux")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNowCountsAStoppedProcess$")
	cmd.Env = append(os.Environ(), "BOOTTIME_CHILD=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	if l, err := r.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("child: %q, %v", l, err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	const stopped = 300 * time.Millisecond
	began := time.Now()
	for time.Since(began) < stopped {
		time.Sleep(stopped - time.Since(began)) // the child is stopped: nothing to poll
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	in.Close()
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, rest)
	}
	line := strings.Fields(string(rest))
	if len(line) == 0 {
		t.Fatalf("child printed nothing")
	}
	ns, err := strconv.ParseInt(line[0], 10, 64)
	if err != nil {
		t.Fatalf("child printed %q", rest)
	}
	if d := time.Duration(ns); d < stopped {
		t.Fatalf("the child's clock advanced %v across a %v stop", d, stopped)
	}
}

// TestNowAdvances checks that Now never goes back and keeps pace with Go's
// monotonic clock.
func TestNowAdvances(t *testing.T) {
	a, ga := Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	b, gb := Now(), time.Now()
	if b < a {
		t.Fatalf("Now went back: %v then %v", a, b)
	}
	if d, gd := b-a, gb.Sub(ga); d < gd/2 {
		t.Fatalf("Now advanced %v while Go's clock advanced %v", d, gd)
	}
}
