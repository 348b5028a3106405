package isolation

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// protectHelper marks the test binary re-executed as a process that calls
// ProtectSelf and then starts a child trying to read it (TestMain).
const protectHelper = "FLOCK_TEST_PROTECT_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(protectHelper) != "" {
		os.Exit(protectMain())
	}
	os.Exit(m.Run())
}

// protectMain protects the process, then runs a shell that prints its own
// capability sets and tries to read the process's environment and memory
// map, as a program flock starts would.
func protectMain() int {
	if err := ProtectSelf(); err != nil {
		fmt.Println("protect:", err)
		return 1
	}
	fmt.Println("dumpable:", dumpable())
	pid := strconv.Itoa(os.Getpid())
	// A file only this process has open (as flock has flock.db open).
	f, err := os.CreateTemp("", "protect-*")
	if err != nil {
		fmt.Println("temp:", err)
		return 1
	}
	defer f.Close()
	os.Remove(f.Name())
	fmt.Fprint(f, "held-file-canary")
	fd := strconv.Itoa(int(f.Fd()))
	cmd := exec.Command("sh", "-c", `grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status
cat /proc/`+pid+`/environ && echo READ-ENVIRON
head -c 64 /proc/`+pid+`/maps >/dev/null && echo READ-MAPS
readlink /proc/`+pid+`/fd/1 >/dev/null && echo READ-FDS
cat /proc/`+pid+`/fd/`+fd+`
true`)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := cmd.Run(); err != nil {
		fmt.Println("child:", err)
		return 1
	}
	return 0
}

// TestProtectSelf: after ProtectSelf the process is not dumpable, and a
// program it starts (root or not) holds no CAP_SYS_PTRACE or CAP_SYS_ADMIN
// and cannot read its environment, memory map, file descriptors or the
// files it holds open.
func TestProtectSelf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), protectHelper+"=1", "FLOCK_TEST_PROTECT_SECRET=canary-4f1b9e")
	out, err := cmd.CombinedOutput()
	text := string(out)
	t.Logf("helper:\n%s", text)
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	if !strings.Contains(text, "dumpable: false") {
		t.Errorf("the protected process is dumpable")
	}
	for _, leak := range []string{"canary-4f1b9e", "READ-ENVIRON", "READ-MAPS", "READ-FDS", "held-file-canary"} {
		if strings.Contains(text, leak) {
			t.Errorf("the child read the protected process: %s", leak)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(k, "Cap") {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		for _, c := range childCaps {
			if caps&(1<<c) != 0 {
				t.Errorf("%s holds capability %d", k, c)
			}
		}
	}
}
