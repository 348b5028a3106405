package workflows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/sparse"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
)

// snapRunner is a runner that only takes the work-dir snapshots of dir,
// as the executor does after each step with operations, into a store of
// its own; snapStep takes the next step's.
func snapRunner(tb testing.TB, dir string) *runner {
	tb.Helper()
	e := &Executor{cfg: Config{RunsDir: tb.TempDir(), SnapshotMaxFileBytes: DefaultSnapshotMaxFileBytes, SnapshotMaxRunBytes: 1 << 40},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now}
	return &runner{e: e, id: "run", snapLoaded: true, head: state.Run{WorkDir: dir}, ctx: context.Background()}
}

// snapStep takes the snapshot of the run's next step, which had
// operations, and fails on a warning.
func snapStep(tb testing.TB, r *runner) {
	tb.Helper()
	r.head.Step++
	r.head.NumOps = 1
	r.snapshot()
	if len(r.notes) > 0 {
		tb.Fatal(r.notes[0].Message)
	}
}

// snapJournal is the bytes and the disk the files of run r's manifests take.
func snapJournal(tb testing.TB, r *runner) (size, disk int64) {
	tb.Helper()
	err := filepath.WalkDir(r.e.snapRunDir(r.id), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size += info.Size()
		disk += sparse.DiskUsage(info)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return size, disk
}

// thousandFiles writes 1,000 files of 4 KiB into dir.
func thousandFiles(tb testing.TB, dir string) {
	tb.Helper()
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte(strconv.Itoa(i)+string(make([]byte, 4090))), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestSnapshotJournalPerStep: what a step persists of its work-dir snapshot
// is proportional to what the step changed, not to the work directory: a
// run whose work directory holds 1,000 files and whose steps each rewrite
// one of them writes well under a KiB of manifest per step (a whole
// manifest is about 135 KB), and the snapshot of every step restores the
// work directory of that step.
func TestSnapshotJournalPerStep(t *testing.T) {
	dir := t.TempDir()
	thousandFiles(t, dir)
	r := snapRunner(t, dir)
	snapStep(t, r)
	size0, _ := snapJournal(t, r)
	const steps = 100
	for i := range steps {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte("step "+strconv.Itoa(i+2)), 0o644); err != nil {
			t.Fatal(err)
		}
		snapStep(t, r)
	}
	size, _ := snapJournal(t, r)
	if per := (size - size0) / steps; per > 1024 {
		t.Errorf("%d bytes of manifest per step (a full manifest is %d bytes), want under 1 KiB", per, size0)
	}
	for _, step := range []uint64{1, 2, 50, 101} {
		m, _, _, err := r.e.loadManifest(r.id, step)
		if err != nil || m == nil {
			t.Fatalf("manifest of step %d: %v %v", step, m, err)
		}
		out := t.TempDir()
		if lost, err := r.e.restoreSnapshot(context.Background(), m, out); err != nil || len(lost) != 0 {
			t.Fatalf("restore step %d: %v %q", step, err, lost)
		}
		ents, err := os.ReadDir(out)
		if err != nil || len(ents) != 1000 {
			t.Fatalf("restore step %d: %d files, %v", step, len(ents), err)
		}
		for _, i := range []int{0, 48, 49, 99, 100, 999} {
			b, err := os.ReadFile(filepath.Join(out, "f"+strconv.Itoa(i)))
			want := strconv.Itoa(i) + string(make([]byte, 4090))
			if i+2 <= int(step) {
				want = "step " + strconv.Itoa(i+2)
			}
			if err != nil || string(b) != want {
				t.Errorf("restore step %d: f%d = %.12q %v, want %.12q", step, i, b, err, want)
			}
		}
	}
}

// BenchmarkSnapshotRestore is a fork's restore of step 100 of a run whose
// work directory holds 1,000 files of 4 KiB, one of them rewritten per
// step: the manifest read ("load") and, with it, the 1,000 files copied
// into a new directory ("restore").
//
//	go test -run XXX -bench SnapshotRestore ./workflows
func BenchmarkSnapshotRestore(b *testing.B) {
	dir := b.TempDir()
	thousandFiles(b, dir)
	r := snapRunner(b, dir)
	snapStep(b, r)
	for i := range 99 {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(i)), []byte(strconv.Itoa(i)), 0o644); err != nil {
			b.Fatal(err)
		}
		snapStep(b, r)
	}
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			if m, _, _, err := r.e.loadManifest(r.id, 100); err != nil || len(m.Files) != 1000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		outs := b.TempDir()
		for i := 0; b.Loop(); i++ {
			m, _, _, err := r.e.loadManifest(r.id, 100)
			if err != nil {
				b.Fatal(err)
			}
			out := filepath.Join(outs, strconv.Itoa(i))
			if err := os.Mkdir(out, 0o755); err != nil {
				b.Fatal(err)
			}
			if lost, err := r.e.restoreSnapshot(context.Background(), m, out); err != nil || len(lost) > 0 {
				b.Fatal(err, lost)
			}
		}
	})
}

// restoreAt restores run r's snapshot of step into a new directory and
// returns what it holds.
func restoreAt(tb testing.TB, e *Executor, id string, step uint64) map[string]string {
	tb.Helper()
	m, _, _, err := e.loadManifest(id, step)
	if err != nil {
		tb.Fatalf("manifest of step %d: %v", step, err)
	}
	out := tb.TempDir()
	if m != nil {
		if lost, err := e.restoreSnapshot(context.Background(), m, out); err != nil || len(lost) > 0 {
			tb.Fatalf("restore step %d: %v %q", step, err, lost)
		}
	}
	return testkit.Tree(tb, out)
}

// changeWorkDir makes step i's change to dir, one of many kinds chosen by
// rnd: a file written, grown, made sparse, removed, its mode changed, a
// symbolic link made or pointed elsewhere, a file in a subdirectory, or
// nothing.
func changeWorkDir(tb testing.TB, dir string, i int, rnd *rand.Rand) {
	tb.Helper()
	name := filepath.Join(dir, fmt.Sprintf("f%d", rnd.IntN(12)))
	var err error
	switch rnd.IntN(8) {
	case 0, 1:
		err = os.WriteFile(name, bytes.Repeat([]byte{byte(i)}, rnd.IntN(10000)), 0o644)
	case 2:
		err = os.Chmod(name, fs.FileMode(0o600+rnd.IntN(0o200)))
	case 3:
		err = os.Remove(name)
	case 4:
		link := filepath.Join(dir, fmt.Sprintf("l%d", rnd.IntN(3)))
		os.Remove(link)
		err = os.Symlink(fmt.Sprintf("f%d", rnd.IntN(12)), link)
	case 5:
		err = os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o755)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "sub", "deep", fmt.Sprintf("g%d", rnd.IntN(3))), []byte(strconv.Itoa(i)), 0o755)
		}
	case 6:
		var f *os.File
		if f, err = os.OpenFile(filepath.Join(dir, "sparse.img"), os.O_WRONLY|os.O_CREATE, 0o640); err == nil {
			if err = f.Truncate(int64(1+rnd.IntN(2)) << 20); err == nil {
				_, err = f.WriteAt([]byte("step "+strconv.Itoa(i)), int64(rnd.IntN(8))<<17)
			}
			f.Close()
		}
	case 7: // nothing changes
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		tb.Fatal(err)
	}
}

// TestSnapshotDeltaRestoreExact: manifests written as deltas restore the
// work directory of every step exactly (files, modes, holes, symbolic
// links, removals), across logs that grew long enough to be followed by a
// whole manifest; and a run resumed at any step (its manifest read back
// from disk) goes on writing deltas that restore exactly too.
func TestSnapshotDeltaRestoreExact(t *testing.T) {
	dir := t.TempDir()
	r := snapRunner(t, dir)
	rnd := rand.New(rand.NewPCG(1, 2))
	want := map[uint64]map[string]string{}
	for i := range 120 {
		changeWorkDir(t, dir, i, rnd)
		if i%25 == 24 {
			// A resume: the manifest is read back from disk.
			r = &runner{e: r.e, id: r.id, head: r.head, ctx: r.ctx}
		}
		snapStep(t, r)
		want[r.head.Step] = testkit.Tree(t, dir)
	}
	for step := uint64(1); step <= r.head.Step; step++ {
		if got := restoreAt(t, r.e, r.id, step); !maps.Equal(got, want[step]) {
			t.Errorf("step %d restores\n%v\nwant\n%v", step, got, want[step])
		}
	}
	fulls, _ := filepath.Glob(filepath.Join(r.e.snapRunDir(r.id), "*.json"))
	logs, _ := filepath.Glob(filepath.Join(r.e.snapRunDir(r.id), "*.log"))
	if len(fulls) < 3 || len(logs) < 3 {
		t.Errorf("%d whole manifests, %d delta logs: want logs that grew long and were followed by whole manifests", len(fulls), len(logs))
	}
	t.Logf("%d whole manifests, %d delta logs", len(fulls), len(logs))
	for _, l := range logs {
		info, err := os.Stat(l)
		full, _ := os.Stat(strings.TrimSuffix(l, ".log") + ".json")
		if err != nil || full == nil || info.Size() > max(full.Size(), minDeltaLog) {
			t.Errorf("delta log %s: %v %v, longer than its whole manifest", l, info.Size(), err)
		}
	}
}

// TestSnapshotOldJournal: a journal written before delta manifests (a
// whole manifest per changed step, testdata/snapshots-v1, written by the
// snapshots of 0f6e534) restores every step as it did, and a run resumed
// on it writes its next manifest as a delta of the old whole one.
func TestSnapshotOldJournal(t *testing.T) {
	e := snapRunner(t, t.TempDir()).e
	if err := os.CopyFS(e.snapRoot(), os.DirFS("testdata/snapshots-v1")); err != nil {
		t.Fatal(err)
	}
	const id = "20261127-old"
	type file struct {
		name, content string
		mode          fs.FileMode
	}
	build := func(files ...file) map[string]string {
		dir := t.TempDir()
		for _, f := range files {
			p := filepath.Join(dir, f.name)
			var err error
			if target, ok := strings.CutPrefix(f.content, "-> "); ok {
				err = os.Symlink(target, p)
			} else if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				if err = os.WriteFile(p, []byte(f.content), f.mode); err == nil {
					err = os.Chmod(p, f.mode)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return testkit.Tree(t, dir)
	}
	b := file{"sub/b.sh", "#!/bin/sh\necho b\n", 0o755}
	c := file{"c.txt", "see\n", 0o640}
	want := map[uint64]map[string]string{
		0: {},
		1: build(file{"a.txt", "one\n", 0o644}, file{"link", "-> a.txt", 0}, b),
		2: build(file{"a.txt", "two\n", 0o644}, file{"link", "-> a.txt", 0}, b, c),
		3: build(file{"a.txt", "two\n", 0o644}, file{"link", "-> a.txt", 0}, b, c),
		4: build(file{"a.txt", "two\n", 0o600}, file{"link", "-> c.txt", 0}, c),
	}
	for step := range uint64(5) {
		if got := restoreAt(t, e, id, step); !maps.Equal(got, want[step]) {
			t.Errorf("step %d restores\n%v\nwant\n%v", step, got, want[step])
		}
	}

	// The run resumes at step 4 in its work directory and changes it.
	dir := t.TempDir()
	m, _, _, err := e.loadManifest(id, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.restoreSnapshot(context.Background(), m, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "c.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d.txt"), []byte("dee\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &runner{e: e, id: id, head: state.Run{WorkDir: dir, Step: 4}, ctx: context.Background()}
	snapStep(t, r)
	want[5] = testkit.Tree(t, dir)
	for step := range uint64(6) {
		if got := restoreAt(t, e, id, step); !maps.Equal(got, want[step]) {
			t.Errorf("after the resume, step %d restores\n%v\nwant\n%v", step, got, want[step])
		}
	}
	if steps, err := e.ManifestSteps(id); steps != "1,2,4,5" || err != nil {
		t.Errorf("manifests of steps %q %v, want 1,2,4,5", steps, err)
	}
	if _, err := os.Stat(filepath.Join(e.snapRunDir(id), deltaLogName(4))); err != nil {
		t.Errorf("step 5's manifest is not a delta of step 4's: %v", err)
	}
}

// TestSnapshotDeltaCrash: a kill -9 at any point of a snapshot loses no
// manifest that was written and damages none. Killed after the changed
// files' contents were stored and before the delta was written, the
// resumed run writes it (the contents stored cost nothing again); killed
// in the middle of the delta's write, readers take the log without the
// cut-short line (a fork gets the step before), and the resumed run cuts
// it off before it appends. A log line that is whole but does not decode
// is damage: reading it is an error naming the log.
func TestSnapshotDeltaCrash(t *testing.T) {
	dir := t.TempDir()
	r := snapRunner(t, dir)
	want := map[uint64]map[string]string{}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resume := func() {
		r = &runner{e: r.e, id: r.id, head: r.head, ctx: r.ctx}
	}
	for i := range 3 {
		write(fmt.Sprintf("f%d", i), strings.Repeat("x", i+1))
		snapStep(t, r)
		want[r.head.Step] = testkit.Tree(t, dir)
	}
	logPath := filepath.Join(r.e.snapRunDir(r.id), deltaLogName(1))

	// Killed between storing step 4's file and writing its delta.
	write("f0", "four")
	r.head.Step++
	if _, err := r.e.takeSnapshot(r.ctx, dir, r.head.Step, r.snap, &snapBudget{file: 1 << 20, left: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	resume()
	r.head.Step--
	snapStep(t, r)
	want[r.head.Step] = testkit.Tree(t, dir)

	// Killed in the middle of step 5's delta; the step's operation, run
	// again after the resume, does not write the long-named file.
	write("f1", "five")
	long := strings.Repeat("long", 50)
	write(long, "")
	snapStep(t, r)
	whole, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logPath, int64(len(whole)-7)); err != nil {
		t.Fatal(err)
	}
	if got := restoreAt(t, r.e, r.id, 5); !maps.Equal(got, want[4]) {
		t.Errorf("with step 5's delta cut short, step 5 restores\n%v\nwant step 4's\n%v", got, want[4])
	}
	if err := os.Remove(filepath.Join(dir, long)); err != nil {
		t.Fatal(err)
	}
	resume()
	r.head.Step--
	snapStep(t, r)
	want[r.head.Step] = testkit.Tree(t, dir)
	write("f2", "six")
	snapStep(t, r)
	want[r.head.Step] = testkit.Tree(t, dir)
	for step := uint64(1); step <= r.head.Step; step++ {
		if got := restoreAt(t, r.e, r.id, step); !maps.Equal(got, want[step]) {
			t.Errorf("step %d restores\n%v\nwant\n%v", step, got, want[step])
		}
	}
	if steps, err := r.e.ManifestSteps(r.id); steps != "1,2,3,4,5,6" || err != nil {
		t.Errorf("manifests of steps %q %v, want 1,...,6, every log line whole", steps, err)
	}

	// Damage.
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, append([]byte("{\"step\": 2, \"chan\n"), log...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.e.loadManifest(r.id, 6); err == nil || !strings.Contains(err.Error(), deltaLogName(1)) {
		t.Errorf("a damaged log reads as %v, want an error naming it", err)
	}
}

// TestSnapshotTouchedFileReadOnce: a file touched without a change (its
// modification time new, its content the same) is read and hashed by the
// next snapshot only, not by every later one: the stat data the snapshot
// compares against is kept in memory though the manifest, the same, is not
// written. The snapshot's debug log says how many files it read.
func TestSnapshotTouchedFileReadOnce(t *testing.T) {
	dir := t.TempDir()
	thousandFiles(t, dir)
	r := snapRunner(t, dir)
	var logs testkit.Buffer
	r.e.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	read := func() string {
		t.Helper()
		snapStep(t, r)
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		last := lines[len(lines)-1]
		if !strings.Contains(last, "work-dir snapshot") {
			t.Fatalf("no snapshot debug line: %q", last)
		}
		_, n, _ := strings.Cut(last, "files_read=")
		n, _, _ = strings.Cut(n, " ")
		return n
	}
	if n := read(); n != "1000" {
		t.Fatalf("first snapshot read %s files, want 1000", n)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "f7"), later, later); err != nil {
		t.Fatal(err)
	}
	if n := read(); n != "1" {
		t.Fatalf("the snapshot after the touch read %s files, want 1", n)
	}
	for step := range 3 {
		if n := read(); n != "0" {
			t.Fatalf("snapshot %d after the touch read %s files, want 0", step+2, n)
		}
	}
}
