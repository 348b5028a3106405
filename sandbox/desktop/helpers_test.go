package desktop

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// needDesktop skips the test when Xvfb or python3-tk is missing, or fails
// it when scripts/test.sh ran (it installs them and sets
// FLOCK_TEST_REQUIRE_BINARIES).
func needDesktop(tb testing.TB, tk bool) {
	tb.Helper()
	var missing []string
	if _, err := FindXvfb(); err != nil {
		missing = append(missing, "xvfb")
	}
	if tk {
		if err := exec.Command("python3", "-c", "import tkinter").Run(); err != nil {
			missing = append(missing, "python3-tk")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "the desktop tests need " + strings.Join(missing, " and ") + " (apt-get install " + strings.Join(missing, " ") + ")"
	if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// liveProcesses returns the pids of live (not zombie) processes for which
// match is true of their command line (NUL-separated) and working
// directory.
func liveProcesses(match func(cmdline []byte, cwd string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if !match(cmd, cwd) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// workspaceProcesses returns the live processes of a session: those whose
// command line names a path inside ws or that run inside it.
func workspaceProcesses(ws string) []int {
	return liveProcesses(func(cmd []byte, cwd string) bool {
		return bytes.Contains(cmd, []byte(ws+"/")) || cwd == ws || strings.HasPrefix(cwd, ws+"/")
	})
}
