package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/bash"
	"github.com/flockrun/flock/internal/tmpfs"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// bashScribe is an env whose scribe workflow (see scribe) runs each of its
// task's commands in the real bash handler, with the executor's Config
// edited by configure.
func bashScribe(t *testing.T, configure func(*workflows.Config)) *env {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	wf, _ := scribe()
	reg := phases.NewRegistry()
	reg.MustRegister(wf)
	return newEnvWith(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: bash.New(bash.Options{})}, configure)
}

// needFree skips the test unless the temporary directory's file system
// has n bytes free: the attacks below make sparse files whose holes a
// regression would write out (the budgets stop it well before, but those
// could regress too).
func needFree(t *testing.T, n uint64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	if free := st.Bavail * uint64(st.Bsize); free < n {
		t.Skipf("%d bytes free in %s, want %d", free, os.TempDir(), n)
	}
}

// manifestAt reads run id's manifest of step (whole, as a fork reads it)
// as JSON.
func (e *env) manifestAt(id string, step int) map[string]any {
	e.t.Helper()
	b, err := e.ex.ManifestJSON(id, uint64(step))
	if err != nil {
		e.t.Fatalf("manifest of step %d: %v", step, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// manifestSteps lists the steps run id wrote a manifest of.
func (e *env) manifestSteps(id string) string {
	e.t.Helper()
	steps, err := e.ex.ManifestSteps(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return steps
}

// storeDisk is the disk the regular files of the snapshot store take.
func (e *env) storeDisk() int64 {
	e.t.Helper()
	var total int64
	err := filepath.WalkDir(filepath.Join(e.dir, "runs", ".snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return total
}

// warnings returns the messages of run id's "warning" events.
func (e *env) warnings(id string) []string {
	e.t.Helper()
	evs, err := e.store.Events(context.Background(), id, 0, 10000)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Type == state.EventRun && ev.Status == state.EventWarning {
			out = append(out, ev.Message)
		}
	}
	return out
}

// forkAt forks run id at step, told to stop there, waits for it and
// returns its head and warnings; the fork's first event carries them too.
func (e *env) forkAt(id string, step int) (state.Run, []string) {
	e.t.Helper()
	f, warns, err := e.ex.ForkWithWarnings(context.Background(), id, workflows.ForkRequest{Step: uint64(step),
		Vars: map[string]json.RawMessage{"stop": json.RawMessage(fmt.Sprint(step))}})
	if err != nil {
		e.t.Fatalf("fork at %d: %v", step, err)
	}
	end := e.wait(f.ID)
	if end.Status != state.StatusSucceeded {
		e.t.Fatalf("fork at %d: %s %s", step, end.Status, end.Error)
	}
	evs, err := e.store.Events(context.Background(), f.ID, 0, 1)
	if err != nil || len(evs) != 1 {
		e.t.Fatalf("fork's events: %v", err)
	}
	var created struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(evs[0].Data, &created); err != nil || strings.Join(created.Warnings, "|") != strings.Join(warns, "|") {
		e.t.Errorf("fork's created event: %s (%v), want its warnings %q", evs[0].Data, err, warns)
	}
	return end, warns
}

// fileNames lists the names in dir, sorted, comma-separated.
func fileNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return strings.Join(out, ",")
}

func hasAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestSnapshotSparseAndTooLarge is the attack: `truncate -s 1T` in a run's
// bash made the snapshot write the apparent size into the object store,
// and any huge file was stored whole. Here a 16 GB sparse file holding 5
// bytes is snapshotted with its holes (the store takes a few KiB) and
// forks back as a 16 GB sparse file with its data; a file over
// max_file_bytes is recorded as "not snapshotted: too large", the source
// run gets a warning event naming it, and a fork of that step says it
// could not restore it.
func TestSnapshotSparseAndTooLarge(t *testing.T) {
	needFree(t, 2<<30)
	e := bashScribe(t, func(c *workflows.Config) { c.SnapshotMaxFileBytes, c.SnapshotMaxRunBytes = 1<<20, 32<<20 })
	src := e.start("scribe", "", "truncate -s 16G big.img && printf hello | dd of=big.img bs=1 seek=5000000000 conv=notrunc status=none; "+
		"head -c 2000000 /dev/urandom > blob.bin; echo done > small.txt")
	if end := e.wait(src.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("source %s %s", end.Status, end.Error)
	}
	if used := e.storeDisk(); used > 1<<20 {
		t.Fatalf("the snapshot store takes %d bytes of disk; want the holes kept and blob.bin left out", used)
	}
	big := e.manifestAt(src.ID, 1)["files"].(map[string]any)["big.img"].(map[string]any)
	if h, _ := big["hash"].(string); !strings.HasSuffix(h, ".sparse") || big["size"] != float64(16<<30) {
		t.Fatalf("big.img in the manifest: %v", big)
	}
	blob := e.manifestAt(src.ID, 2)["files"].(map[string]any)["blob.bin"].(map[string]any)
	if why, _ := blob["not_snapshotted"].(string); !hasAll(why, "too large", "max_file_bytes") || blob["hash"] != nil {
		t.Fatalf("blob.bin in the manifest: %v", blob)
	}
	if w := strings.Join(e.warnings(src.ID), "\n"); !hasAll(w, "step 2", "blob.bin", "too large") {
		t.Errorf("source warnings: %q", w)
	}

	f, warns := e.forkAt(src.ID, 3)
	if w := strings.Join(warns, "\n"); len(warns) != 1 || !hasAll(w, "not snapshotted", "blob.bin", "too large") {
		t.Errorf("fork at 3 warnings: %q", warns)
	}
	st, err := os.Stat(filepath.Join(f.WorkDir, "big.img"))
	if err != nil {
		t.Fatal(err)
	}
	if disk := st.Sys().(*syscall.Stat_t).Blocks * 512; st.Size() != 16<<30 || disk > 1<<20 {
		t.Fatalf("restored big.img: %d bytes, %d on disk; want 16 GiB and the holes kept", st.Size(), disk)
	}
	img, err := os.Open(filepath.Join(f.WorkDir, "big.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	got := make([]byte, 5)
	if _, err := img.ReadAt(got, 5000000000); err != nil || string(got) != "hello" {
		t.Fatalf("restored data %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(f.WorkDir, "blob.bin")); !os.IsNotExist(err) {
		t.Errorf("fork at 3 has a blob.bin: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(f.WorkDir, "small.txt")); err != nil || string(b) != "done\n" {
		t.Errorf("fork at 3: small.txt %q %v", b, err)
	}
	if _, warns := e.forkAt(src.ID, 1); len(warns) != 0 {
		t.Errorf("fork at 1 warnings: %q", warns)
	}
}

// TestSnapshotRunBudget: a run adds at most max_run_bytes to the store.
// Once its budget cannot take a file, the file is recorded as not
// snapshotted; once it cannot take a manifest, one last small manifest
// says the snapshots stopped, and no more are taken. Forks say what they
// could not restore: the file, and for a step after the stop, that the
// work directory is the last snapshotted one's.
func TestSnapshotRunBudget(t *testing.T) {
	// Counted in 4 KiB blocks: a: 4 KiB and the whole manifest 4 KiB (8);
	// b: 20 KiB and the block of the delta log (32); c (12 KiB) no longer
	// fits, its delta does (in the log's block); rm a, a delta; of the 40
	// files n*, two fit (40: the whole budget), and the delta of 40 files
	// outgrows the log's block: the whole manifest it then takes does not
	// fit: stop at 5; g is not looked at.
	e := bashScribe(t, func(c *workflows.Config) { c.SnapshotMaxFileBytes, c.SnapshotMaxRunBytes = 1<<20, 40<<10 })
	src := e.start("scribe", "", "head -c 1000 /dev/urandom > a; head -c 20000 /dev/urandom > b; head -c 12000 /dev/urandom > c; "+
		"rm a; seq 40 | xargs -I{} sh -c 'echo {} > n{}'; echo z > g")
	if end := e.wait(src.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("source %s %s", end.Status, end.Error)
	}
	if got := e.manifestSteps(src.ID); got != "1,2,3,4,5" {
		t.Fatalf("manifests at steps %q, want 1,2,3,4,5", got)
	}
	c := e.manifestAt(src.ID, 3)["files"].(map[string]any)["c"].(map[string]any)
	if why, _ := c["not_snapshotted"].(string); !strings.Contains(why, "budget") {
		t.Fatalf("c in the manifest of step 3: %v", c)
	}
	if m := e.manifestAt(src.ID, 5); !hasAll(fmt.Sprint(m["stopped"]), "max_run_bytes") || len(m["files"].(map[string]any)) != 0 {
		t.Fatalf("manifest of step 5: %v", m)
	}
	if used := e.storeDisk(); used > 40<<10+4<<10 {
		t.Fatalf("the store takes %d bytes for a run with a budget of %d", used, 40<<10)
	}
	if w := strings.Join(e.warnings(src.ID), "\n"); !hasAll(w, "c (the run's snapshot budget is spent)", "stop at step 5") {
		t.Errorf("source warnings: %q", w)
	}

	f, warns := e.forkAt(src.ID, 3)
	if w := strings.Join(warns, "\n"); !hasAll(w, "not snapshotted", "c (the run's snapshot budget is spent)") {
		t.Errorf("fork at 3 warnings: %q", warns)
	}
	if got := fileNames(t, f.WorkDir); got != "a,b" {
		t.Errorf("fork at 3: work dir %q, want a,b", got)
	}
	f, warns = e.forkAt(src.ID, 6)
	if w := strings.Join(warns, "\n"); !hasAll(w, "stopped at step 5", "work directory of step 4", "c (the run's snapshot budget is spent)") {
		t.Errorf("fork at 6 warnings: %q", warns)
	}
	if got := fileNames(t, f.WorkDir); got != "b" {
		t.Errorf("fork at 6: work dir %q, want b (step 4's)", got)
	}
}

// TestSnapshotDiskFull: a full disk while snapshotting never fails or
// stalls the run. The store (a 64 KiB tmpfs) cannot take a 200 KB file:
// the manifest records it as not snapshotted with the error and a fork
// says so. Once the store is full, the manifest itself cannot be written:
// the run goes on, a warning event says the snapshot failed, and a fork of
// that step says it gets an older (here empty) work directory.
func TestSnapshotDiskFull(t *testing.T) {
	e := bashScribe(t, nil)
	mnt := tmpfs.Mount(t, 64<<10)
	if err := os.MkdirAll(filepath.Join(e.dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mnt, filepath.Join(e.dir, "runs", ".snapshots")); err != nil {
		t.Fatal(err)
	}
	src := e.start("scribe", "", "head -c 200000 /dev/urandom > big.bin && echo hi > small.txt; echo more >> small.txt")
	if end := e.wait(src.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("source %s %s", end.Status, end.Error)
	}
	big := e.manifestAt(src.ID, 1)["files"].(map[string]any)["big.bin"].(map[string]any)
	if why, _ := big["not_snapshotted"].(string); !hasAll(why, "failed", "no space left on device") {
		t.Fatalf("big.bin in the manifest: %v", big)
	}
	f, warns := e.forkAt(src.ID, 1)
	if w := strings.Join(warns, "\n"); !hasAll(w, "big.bin", "no space left on device") {
		t.Errorf("fork at 1 warnings: %q", warns)
	}
	if got := dirFiles(t, f.WorkDir); got != "small.txt=hi\n" {
		t.Errorf("fork at 1: work dir %q", got)
	}

	tmpfs.Fill(t, mnt)
	full := e.start("scribe", "", "echo a > x; echo b > y")
	if end := e.wait(full.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("run on a full store: %s %s", end.Status, end.Error)
	}
	if w := strings.Join(e.warnings(full.ID), "\n"); !hasAll(w, "snapshot of step 1 failed", "no space left on device") {
		t.Errorf("warnings of the run on a full store: %q", w)
	}
	f, warns = e.forkAt(full.ID, 1)
	if w := strings.Join(warns, "\n"); !hasAll(w, "empty work directory", "snapshot of step 1 failed") {
		t.Errorf("fork at 1 of the run on a full store: %q", warns)
	}
	if got := dirFiles(t, f.WorkDir); got != "" {
		t.Errorf("fork at 1 of the run on a full store: work dir %q", got)
	}
}
