package files

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// TestWritesSyncTheDirectory watches the system calls of real writes with
// strace: a whole-file write (a rollout's results_*.jsonl, written aside
// and renamed over the old file) syncs the directory after the rename, so
// that the new name survives a crash, not just the data; an append that
// creates its file syncs the directory once, and one to an existing file
// does not.
func TestWritesSyncTheDirectory(t *testing.T) {
	if work := os.Getenv("FLOCK_TEST_FILES_WORKDIR"); work != "" {
		h := New(nil)
		env := handlers.Env{WorkDir: work}
		for _, r := range []operations.Request{
			operations.NewWriteFile("out/results.jsonl", "{\"a\":1}\n", false),
			operations.NewWriteFile("out/episodes.jsonl", "{\"e\":1}\n", true),
			operations.NewWriteFile("out/episodes.jsonl", "{\"e\":2}\n", true),
		} {
			if res := h.Handle(context.Background(), env, r); res.Error != "" {
				t.Fatal(res.Error)
			}
		}
		return
	}
	// Under scripts/test.sh (which installs strace) a missing or
	// powerless strace fails the test; elsewhere it skips, saying why.
	unavailable := func(why string) {
		t.Helper()
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			t.Fatal(why + " (scripts/test.sh installs strace; this test watches the writes' fsyncs with it)")
		}
		t.Skip("skipped: " + why + "; install strace (scripts/test.sh does) to watch the writes' fsyncs")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		unavailable("strace is not installed")
	}
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "strace.log")
	cmd := exec.Command(strace, "-f", "-y", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2", "-o", log,
		os.Args[0], "-test.run=^TestWritesSyncTheDirectory$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FLOCK_TEST_FILES_WORKDIR="+work)
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "PTRACE_TRACEME") || strings.Contains(string(out), "ptrace") && strings.Contains(string(out), "Operation not permitted") {
			unavailable("strace cannot trace on this machine (ptrace is not permitted): " + strings.TrimSpace(string(out)))
		}
		t.Fatalf("traced writes: %v\n%s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := filepath.EvalSymlinks(filepath.Join(work, "out"))
	var renamed bool
	var dirSyncs, afterRename int
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, "rename") && strings.Contains(line, `"results.jsonl"`):
			renamed = true
		case strings.Contains(line, "sync(") && strings.Contains(line, "<"+out+">"):
			dirSyncs++
			if renamed {
				afterRename++
			}
		}
	}
	if !renamed || afterRename < 1 || dirSyncs != 2 {
		t.Fatalf("renamed %v, %d syncs of %s (%d after the rename), want 2: one after the rename, one after the append that created its file\n%s",
			renamed, dirSyncs, out, afterRename, b)
	}
}
