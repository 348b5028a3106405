package workflows

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/flockrun/flock/internal/sparse"
	"github.com/flockrun/flock/state"
)

// Work-dir snapshots. After the operations of a step have all returned,
// the executor records what the run's work directory holds: a manifest
// (path → content hash, mode) written beside the runs' work directories,
// only when something changed since the run's previous manifest. File
// contents go to a content-addressed object store shared by every run,
// each distinct content once, and only files whose size or modification
// time changed since the previous manifest are read again. A fork copies
// the snapshot of the newest manifest at or before its step into its own
// work directory.
//
//	RUNS_DIR/.snapshots/objects/ab/abcdef...    file contents by SHA-256
//	RUNS_DIR/.snapshots/runs/RUN/00000000000000000007.json  full manifest of step 7
//	RUNS_DIR/.snapshots/runs/RUN/00000000000000000007.log   the manifests of later steps, as deltas
//
// What a step writes is proportional to what it changed: a manifest is
// written whole only as the first of a run (or of a resumed run whose
// manifests cannot be read); the next ones are deltas (the files added or
// changed, those removed) appended, one JSON line each, to the delta log of
// the last whole manifest, until that log would outgrow the whole manifest
// (or one 4 KiB block, for a small one): then the step's manifest is
// written whole and starts a new log. So the manifests of a run take at
// most about twice what its changes take, and reading the manifest of any
// step (a fork, a resume) reads one whole manifest and at most about as
// much again of deltas. Journals written before the deltas (whole
// manifests only) read the same way: a whole manifest without a log.
//
// A whole manifest is written to a temporary file and renamed; a delta is
// one write at the end of the log's last whole line. A crash (kill -9)
// that cuts a delta short leaves a last line without its newline, which
// readers ignore and the next append cuts off; a complete line that does
// not decode is damage, an error like a damaged whole manifest.
//
// Sparse files stay sparse (package internal/sparse): only their data
// extents are read, hashed and stored, with the layout of their holes, so
// a terabyte of holes costs nothing. Two budgets bound the store: a file
// holding more data than Config.SnapshotMaxFileBytes is recorded as not
// snapshotted ("too large"), and a run adds at most
// Config.SnapshotMaxRunBytes to the store (new objects' data and its
// manifests, counted in the 4 KiB blocks they take); once that is spent,
// changed files are recorded as not snapshotted, and when a manifest no
// longer fits, one last small manifest says the run's snapshots stopped
// there. A snapshot never fails the run: what it cannot store (a full
// disk) is recorded as not snapshotted, a manifest it cannot write is
// reported in a "warning" event, and a fork restoring either says what it
// could not restore.
//
// Children's work directories (children/ beneath the run's) are left out:
// they are the children's own.
const snapshotsDir = ".snapshots"

// Snapshot budgets' defaults (Config.SnapshotMaxFileBytes and
// SnapshotMaxRunBytes; the server settings' snapshots.max_file_bytes and
// snapshots.max_run_bytes).
const (
	DefaultSnapshotMaxFileBytes = 64 << 20
	DefaultSnapshotMaxRunBytes  = 1 << 30
)

// Why a file's content is not in a manifest: fileSnap.Skipped starts with
// one of these. A file skipped as too large or for the run's budget is
// not read again while its size, mode and modification time stay the
// same; a failed one is tried again at the next snapshot.
const (
	skipTooLarge = "too large"
	skipBudget   = "the run's snapshot budget is spent"
	skipFailed   = "failed"
)

// manifest is a work directory as of the end of a step.
type manifest struct {
	Step  uint64              `json:"step"`
	Files map[string]fileSnap `json:"files"`
	// Stored is what the run had added to the snapshot store when this
	// manifest was written, this manifest aside: the data of the objects
	// it stored first and its earlier manifests. It counts against
	// Config.SnapshotMaxRunBytes across restarts.
	Stored int64 `json:"stored_bytes,omitempty"`
	// Incomplete says which parts of the work directory could not be
	// read (a directory without permission); they are not in Files.
	Incomplete string `json:"incomplete,omitempty"`
	// Stopped says why the run's snapshots stopped at this step (its
	// budget spent). Such a manifest holds no files; a fork at this step
	// or later restores the manifest before it and says so.
	Stopped string `json:"stopped,omitempty"`
}

// manifestDelta is a step's manifest as its change from the run's
// manifest before it: one line of a delta log (see snapChain). Changed
// holds the files added or changed, whole; Removed the paths gone.
type manifestDelta struct {
	Step    uint64              `json:"step"`
	Changed map[string]fileSnap `json:"changed,omitempty"`
	Removed []string            `json:"removed,omitempty"`
	// Stored and Incomplete are the manifest's (see manifest).
	Stored     int64  `json:"stored_bytes,omitempty"`
	Incomplete string `json:"incomplete,omitempty"`
}

// diffManifest is m as its change from prev.
func diffManifest(prev, m *manifest) *manifestDelta {
	d := &manifestDelta{Step: m.Step, Stored: m.Stored, Incomplete: m.Incomplete, Changed: map[string]fileSnap{}}
	for p, f := range m.Files {
		if g, ok := prev.Files[p]; !ok || g != f {
			d.Changed[p] = f
		}
	}
	for p := range prev.Files {
		if _, ok := m.Files[p]; !ok {
			d.Removed = append(d.Removed, p)
		}
	}
	sort.Strings(d.Removed)
	return d
}

// apply makes m the manifest d describes.
func (m *manifest) apply(d *manifestDelta) {
	for p, f := range d.Changed {
		m.Files[p] = f
	}
	for _, p := range d.Removed {
		delete(m.Files, p)
	}
	m.Step, m.Stored, m.Incomplete = d.Step, d.Stored, d.Incomplete
}

// snapChain is where a run's next delta goes: the delta log of its whole
// manifest of step base (full bytes), whose first log bytes are whole
// lines (what follows them, a delta a crash cut short, is cut off before
// the next append). ok is false when there is no whole manifest on disk
// that the run's manifest in memory follows from: the next manifest is
// written whole.
type snapChain struct {
	base      uint64
	full, log int64
	ok        bool
}

// minDeltaLog is how long a delta log may grow even when its whole
// manifest is smaller: one disk block.
const minDeltaLog = 4096

// fileSnap is one file of a manifest: a regular file's content hash, or a
// symbolic link's target; or, for a regular file whose content was not
// stored, why (Skipped).
type fileSnap struct {
	Hash    string      `json:"hash,omitempty"`
	Link    string      `json:"link,omitempty"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	MTime   int64       `json:"mtime_ns"`
	Skipped string      `json:"not_snapshotted,omitempty"`
}

// same reports whether two manifests describe the same files.
func (m *manifest) same(o *manifest) bool {
	if m == nil || o == nil || len(m.Files) != len(o.Files) || m.Incomplete != o.Incomplete {
		return false
	}
	for p, f := range m.Files {
		g, ok := o.Files[p]
		if !ok || f.Hash != g.Hash || f.Link != g.Link || f.Mode != g.Mode || f.Skipped != g.Skipped {
			return false
		}
	}
	return true
}

func (m *manifest) lookup(rel string) (fileSnap, bool) {
	if m == nil {
		return fileSnap{}, false
	}
	f, ok := m.Files[rel]
	return f, ok
}

func (e *Executor) snapRoot() string { return filepath.Join(e.cfg.RunsDir, snapshotsDir) }
func (e *Executor) snapRunDir(id string) string {
	return filepath.Join(e.snapRoot(), "runs", filepath.FromSlash(id))
}
func (e *Executor) objectPath(hash string) string {
	return filepath.Join(e.snapRoot(), "objects", hash[:2], hash)
}

// sparseSuffix ends the name of an object stored with its holes: its
// hash is of its extents' layout and data, not of its bytes, so it must
// never be taken for a dense object whose bytes happen to hash the same.
const sparseSuffix = ".sparse"

// validHash reports whether h names an object (hex SHA-256, maybe with
// sparseSuffix): a manifest's hashes become paths.
func validHash(h string) bool {
	h = strings.TrimSuffix(h, sparseSuffix)
	if len(h) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// snapshotNote is the data of a run's "warning" event about its
// work-dir snapshot of a step.
type snapshotNote struct {
	Step uint64 `json:"snapshot_step"`
	// Failed says the step's manifest could not be written: a fork at
	// the step (or later, until the next manifest) restores an older work
	// directory, and says so.
	Failed bool `json:"failed,omitempty"`
	// Stopped says the run's snapshots stopped at the step.
	Stopped bool `json:"stopped,omitempty"`
	// NotSnapshotted lists files this step's manifest holds without their
	// content, for the first time (at most maxListed).
	NotSnapshotted []string `json:"not_snapshotted,omitempty"`
}

// maxListed caps the paths a warning lists.
const maxListed = 20

// listed joins items, at most maxListed of them.
func listed(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:maxListed], "; ") + fmt.Sprintf("; and %d more", len(items)-maxListed)
}

// snapshot records the work directory as of the end of the current step
// when the step had operations (only they change files) or is the run's
// first. It never fails the run: what goes wrong is logged and told in a
// "warning" event of the run's next commit, and a missing or partial
// snapshot only makes a fork of this step restore less, saying so.
func (r *runner) snapshot() {
	if r.e.cfg.NoSnapshots || r.snapStopped || (r.head.NumOps == 0 && r.head.Step > 0) {
		return
	}
	if !r.snapLoaded {
		r.snapLoaded = true
		m, chain, stored, err := r.e.loadManifest(r.id, r.head.Step)
		if err != nil {
			r.e.log.Warn("read the last work-dir snapshot; taking a full one", "run", r.id, "err", err)
		}
		if m != nil {
			r.snapStored = stored
			if m.Stopped != "" {
				r.snapStopped = true
				return
			}
		}
		r.snap, r.snapChain = m, chain
	}
	step := r.head.Step
	b := &snapBudget{file: r.e.cfg.SnapshotMaxFileBytes, left: r.e.cfg.SnapshotMaxRunBytes - r.snapStored}
	m, err := r.e.takeSnapshot(r.ctx, r.head.WorkDir, step, r.snap, b)
	r.snapStored += b.added
	r.e.log.Debug("work-dir snapshot", "run", r.id, "step", step, "files_read", b.read, "bytes_added", b.added)
	if err != nil {
		if r.ctx.Err() != nil {
			return // the run is stopping; its next snapshot is taken after the resume
		}
		r.snapFailed(step, err)
		return
	}
	if r.snap != nil && m.same(r.snap) {
		// Nothing to write, but the files' stat data is kept: a file
		// touched without a change is then not read again at every
		// later step. (The manifest on disk keeps the older times: after
		// a restart such a file is read once more.)
		r.snap.Files = m.Files
		return
	}
	if r.snap == nil && len(m.Files) == 0 && m.Incomplete == "" {
		// Nothing to restore: an empty directory needs no manifest (most
		// runs never write a file).
		r.snap = m
		return
	}
	m.Stored = r.snapStored
	if err := r.persist(m); err != nil {
		if errors.Is(err, errSnapBudget) {
			r.snapStop(step)
		} else {
			r.snapFailed(step, err)
		}
		return
	}
	var fresh []string
	for p, f := range m.Files {
		if g, ok := r.snap.lookup(p); f.Skipped != "" && (!ok || g.Skipped == "") {
			fresh = append(fresh, p+" ("+f.Skipped+")")
		}
	}
	sort.Strings(fresh)
	r.snap = m
	if len(fresh) > 0 || m.Incomplete != "" {
		msg := fmt.Sprintf("the work-dir snapshot of step %d does not hold %d file(s), which a fork of this step cannot restore: %s",
			step, len(fresh), listed(fresh))
		if m.Incomplete != "" {
			msg = fmt.Sprintf("the work-dir snapshot of step %d is incomplete: %s", step, m.Incomplete)
			if len(fresh) > 0 {
				msg += fmt.Sprintf("; it does not hold %d file(s): %s", len(fresh), listed(fresh))
			}
		}
		if len(fresh) > maxListed {
			fresh = fresh[:maxListed]
		}
		r.snapNote(msg, snapshotNote{Step: step, NotSnapshotted: fresh})
	}
}

// errSnapBudget says a manifest does not fit the run's snapshot budget.
var errSnapBudget = errors.New("over the run's snapshot budget")

// persist writes m, the run's manifest of its current step, which differs
// from r.snap: as a delta appended to the log of r.snapChain while the log
// stays within the size of its whole manifest (or minDeltaLog), else whole
// (starting a new log). It fails with errSnapBudget, writing nothing, when
// the run's budget cannot take it.
func (r *runner) persist(m *manifest) error {
	if ch := r.snapChain; ch.ok && r.snap != nil {
		line, err := json.Marshal(diffManifest(r.snap, m))
		if err != nil {
			return err
		}
		line = append(line, '\n')
		if end := ch.log + int64(len(line)); end <= max(ch.full, minDeltaLog) {
			cost := diskBlocks(end) - diskBlocks(ch.log)
			if r.snapStored+cost > r.e.cfg.SnapshotMaxRunBytes {
				return errSnapBudget
			}
			if err := r.e.appendDelta(r.id, ch, line); err != nil {
				// The log may now end in a part of line (the cut did not
				// take): the next manifest is written whole.
				r.snapChain.ok = false
				return err
			}
			r.snapChain.log = end
			r.snapStored += cost
			return nil
		}
	}
	doc, err := json.Marshal(m)
	if err != nil {
		return err
	}
	cost := diskCost(int64(len(doc)))
	if r.snapStored+cost > r.e.cfg.SnapshotMaxRunBytes {
		return errSnapBudget
	}
	// A failure may leave a whole manifest of this step without the log
	// it had: nothing may be chained on it until one is written again.
	r.snapChain.ok = false
	if err := r.e.writeManifest(r.id, m.Step, doc); err != nil {
		return err
	}
	r.snapChain = snapChain{base: m.Step, full: int64(len(doc)), ok: true}
	r.snapStored += cost
	return nil
}

// snapFailed reports a snapshot whose manifest could not be taken or
// written; the next snapshot tries again against the last manifest
// written.
func (r *runner) snapFailed(step uint64, err error) {
	r.snapNote(fmt.Sprintf("the work-dir snapshot of step %d failed (%v): a fork of this step restores an older work directory", step, err),
		snapshotNote{Step: step, Failed: true})
}

// snapStop writes the small manifest that says the run's snapshots stop at
// step (its budget spent) and takes no more.
func (r *runner) snapStop(step uint64) {
	why := fmt.Sprintf("the run's snapshots reached snapshots.max_run_bytes (%d bytes)", r.e.cfg.SnapshotMaxRunBytes)
	doc, err := json.Marshal(&manifest{Step: step, Files: map[string]fileSnap{}, Stored: r.snapStored, Stopped: why})
	if err == nil {
		err = r.e.writeManifest(r.id, step, doc)
	}
	if err != nil {
		r.snapFailed(step, err)
		return
	}
	r.snapStopped, r.snapChain.ok = true, false
	r.snapStored += diskCost(int64(len(doc)))
	r.snapNote(fmt.Sprintf("work-dir snapshots stop at step %d: %s; a fork of this step or a later one restores the work directory of an earlier step", step, why),
		snapshotNote{Step: step, Stopped: true})
}

// snapNote logs msg and queues it as a "warning" event for the run's next
// commit.
func (r *runner) snapNote(msg string, note snapshotNote) {
	r.e.log.Warn(msg, "run", r.id)
	data, _ := json.Marshal(note)
	r.notes = append(r.notes, state.Event{Time: r.e.now().UTC(), Type: state.EventRun, Status: state.EventWarning, Step: note.Step,
		Message: msg, Data: data})
}

// snapBudget is what one snapshot may add to the store: file caps each
// file's data, left the run's remaining budget; added is what it did add,
// and read the files it read to hash them (new or changed since the last
// snapshot by size, mode or modification time).
type snapBudget struct {
	file, left, added int64
	read              int
}

// takeSnapshot walks dir and stores the contents of the files that
// changed since prev (by size, mode and modification time), within b. It
// fails only when dir cannot be read at all or ctx ends; a part of the
// tree it cannot read is named in the manifest's Incomplete, a file it
// cannot store is recorded as not snapshotted.
func (e *Executor) takeSnapshot(ctx context.Context, dir string, step uint64, prev *manifest, b *snapBudget) (*manifest, error) {
	m := &manifest{Step: step, Files: map[string]fileSnap{}}
	// Everything is read through a root at dir: a run that swaps a file
	// or a directory for a symbolic link while the walk goes on cannot
	// make the snapshot read anything outside its work directory.
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var unread []string
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && rel != "." {
				return nil // removed meanwhile
			}
			if rel == "." {
				return err
			}
			unread = append(unread, rel+": "+errText(err))
			return nil
		}
		if d.IsDir() {
			if rel == "children" {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			unread = append(unread, rel+": "+errText(err))
			return nil
		}
		f := fileSnap{Size: info.Size(), Mode: info.Mode(), MTime: info.ModTime().UnixNano()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if f.Link, err = root.Readlink(rel); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					unread = append(unread, rel+": "+errText(err))
				}
				return nil
			}
		case info.Mode().IsRegular():
			if p, ok := prev.lookup(rel); ok && p.Size == f.Size && p.MTime == f.MTime && p.Mode == f.Mode &&
				(p.Hash != "" || p.Skipped != "" && !strings.HasPrefix(p.Skipped, skipFailed)) {
				f.Hash, f.Skipped = p.Hash, p.Skipped
				break
			}
			b.read++
			f.Hash, f.Skipped = e.storeObject(ctx, root, rel, b)
			if f.Hash == "" && f.Skipped == "" {
				return nil // no longer a regular file
			}
		default:
			return nil // sockets, devices, pipes
		}
		m.Files[rel] = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(unread) > 0 {
		sort.Strings(unread)
		m.Incomplete = fmt.Sprintf("%d part(s) of the work directory could not be read: %s", len(unread), listed(unread))
	}
	return m, nil
}

// errText is err's message without the path the walk already names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// storeObject stores the content of the regular file rel of root in the
// object store (once per content) and returns its hash; or, when it does
// not, why (skipped). Both are empty when rel is no longer a regular file.
// Only the file's data extents are read and written: a sparse object
// keeps its holes and its hash covers the extents' layout
// (sparseSuffix). The data stored counts against b; a file whose content
// the store already holds costs nothing.
func (e *Executor) storeObject(ctx context.Context, root *os.Root, rel string, b *snapBudget) (hash, skipped string) {
	// O_NONBLOCK: a file swapped for a FIFO after the walk saw it must
	// not block the open (it is then passed over: not a regular file).
	src, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ""
	}
	if err != nil {
		return "", skipFailed + ": open: " + errText(err)
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return "", skipFailed + ": " + errText(err)
	}
	if !info.Mode().IsRegular() {
		return "", ""
	}
	size, disk := info.Size(), sparse.DiskUsage(info)
	tooLarge := func(data int64) string {
		return fmt.Sprintf("%s: %d bytes of data or more, over snapshots.max_file_bytes (%d)", skipTooLarge, data, b.file)
	}
	switch {
	case disk > b.file:
		return "", tooLarge(disk)
	case diskCost(disk) > b.left:
		return "", skipBudget
	}
	dir := filepath.Join(e.snapRoot(), "objects")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", skipFailed + ": store: " + errText(err)
	}
	tmp, err := os.CreateTemp(dir, "tmp-*")
	if err != nil {
		return "", skipFailed + ": store: " + errText(err)
	}
	defer os.Remove(tmp.Name())
	hash, data, err := copyHashed(ctx, src, tmp, size, min(b.file, b.left))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, sparse.ErrOverBudget) && b.file <= b.left:
		return "", tooLarge(data)
	case errors.Is(err, sparse.ErrOverBudget):
		return "", skipBudget
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "", skipFailed + ": the file shrank while it was read"
	case err != nil:
		return "", skipFailed + ": store: " + errText(err)
	}
	dst := e.objectPath(hash)
	if _, err := os.Stat(dst); err == nil {
		return hash, "" // stored already: it costs nothing
	}
	if diskCost(data) > b.left {
		return "", skipBudget
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", skipFailed + ": store: " + errText(err)
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return "", skipFailed + ": store: " + errText(err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", skipFailed + ": store: " + errText(err)
	}
	b.charge(data)
	return hash, ""
}

// charge counts a file of n bytes written to the store against b.
func (b *snapBudget) charge(n int64) {
	c := diskCost(n)
	b.added += c
	b.left -= c
}

// diskBlocks is the disk a file of n bytes takes, in whole 4 KiB blocks.
func diskBlocks(n int64) int64 { return (n + 4095) &^ 4095 }

// diskCost is what a file of n bytes written to the store counts for
// against a run's budget: the disk it takes, in whole 4 KiB blocks and one
// at least (its inode and first block), so that many tiny files cost what
// they take.
func diskCost(n int64) int64 { return max(diskBlocks(n), 4096) }

// sparseHeader opens the hashed form of a sparse object: the header, then
// per data extent its offset, length and data (8-byte big-endian
// numbers), then math.MaxUint64 and the file's size. A dense file (one
// extent covering it, or empty) hashes as its bytes.
const sparseHeader = "flock sparse file v1\n"

// copyHashed copies the size bytes of src into out, which is empty, data
// extents only, and returns the object name of what it copied (see
// sparseHeader) and the bytes of data written. Past budget bytes of data
// it stops with sparse.ErrOverBudget, and the bytes of data it found.
func copyHashed(ctx context.Context, src, out *os.File, size, budget int64) (string, int64, error) {
	h := sha256.New()
	var written int64
	holes, first := false, true
	for ext, err := range sparse.Extents(src, size) {
		if err != nil {
			return "", written, err
		}
		if err := ctx.Err(); err != nil {
			return "", written, err
		}
		if first {
			first = false
			if holes = ext.Off != 0 || ext.Len != size; holes {
				io.WriteString(h, sparseHeader)
			}
		}
		if written+ext.Len > budget {
			return "", written + ext.Len, sparse.ErrOverBudget
		}
		if holes {
			writeUint64s(h, uint64(ext.Off), uint64(ext.Len))
		}
		n, err := io.CopyN(io.MultiWriter(h, io.NewOffsetWriter(out, ext.Off)), io.NewSectionReader(src, ext.Off, ext.Len), ext.Len)
		written += n
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return "", written, err
		}
	}
	if first && size > 0 {
		holes = true // all of it is a hole
		io.WriteString(h, sparseHeader)
	}
	name := ""
	if holes {
		writeUint64s(h, math.MaxUint64, uint64(size))
		if err := out.Truncate(size); err != nil {
			return "", written, err
		}
		name = sparseSuffix
	}
	return hex.EncodeToString(h.Sum(nil)) + name, written, nil
}

func writeUint64s(h hash.Hash, vs ...uint64) {
	var b [8]byte
	for _, v := range vs {
		binary.BigEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
}

func manifestName(step uint64) string { return fmt.Sprintf("%020d.json", step) }
func deltaLogName(step uint64) string { return fmt.Sprintf("%020d.log", step) }

// writeManifest writes the whole manifest doc of step atomically
// (temporary file, rename). A delta log of an earlier whole manifest of
// the same step (a run resumed at the step) is removed first: its deltas
// do not follow from doc. A crash between the two leaves the earlier
// manifest of the step, which a fork then restores, as when a write
// fails.
func (e *Executor) writeManifest(id string, step uint64, doc []byte) error {
	dir := e.snapRunDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(doc); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, deltaLogName(step))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, manifestName(step)))
}

// appendDelta writes line, a delta, to the delta log of ch (creating it)
// after its ch.log bytes of whole lines, cutting off what follows them.
// On failure it cuts the log back to them; only when that fails too may
// the log end in a part of line.
func (e *Executor) appendDelta(id string, ch snapChain, line []byte) error {
	f, err := os.OpenFile(filepath.Join(e.snapRunDir(id), deltaLogName(ch.base)), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err == nil && info.Size() != ch.log {
		err = f.Truncate(ch.log)
	}
	if err == nil {
		_, err = f.WriteAt(line, ch.log)
		if err != nil {
			f.Truncate(ch.log)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// loadManifest returns run id's manifest of step (the newest at or before
// it: the newest whole manifest and the deltas of its log up to step), or
// nil when it has none; with the chain the run's next delta goes to, and
// what the run had added to the snapshot store once it was written.
func (e *Executor) loadManifest(id string, step uint64) (*manifest, snapChain, int64, error) {
	var chain snapChain
	names, err := os.ReadDir(e.snapRunDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, chain, 0, nil
	}
	if err != nil {
		return nil, chain, 0, err
	}
	best, bestStep := "", uint64(0)
	for _, n := range names {
		s, ok := strings.CutSuffix(n.Name(), ".json")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v > step {
			continue
		}
		if best == "" || v >= bestStep {
			best, bestStep = n.Name(), v
		}
	}
	if best == "" {
		return nil, chain, 0, nil
	}
	b, err := os.ReadFile(filepath.Join(e.snapRunDir(id), best))
	if err != nil {
		return nil, chain, 0, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, chain, 0, fmt.Errorf("snapshot %s: %w", best, err)
	}
	if m.Files == nil {
		m.Files = map[string]fileSnap{}
	}
	chain = snapChain{base: bestStep, full: int64(len(b)), ok: true}
	stored := m.Stored + diskCost(chain.full)
	log, err := os.ReadFile(filepath.Join(e.snapRunDir(id), deltaLogName(bestStep)))
	if errors.Is(err, fs.ErrNotExist) {
		return &m, chain, stored, nil
	}
	if err != nil {
		return nil, chain, 0, err
	}
	for {
		n := bytes.IndexByte(log[chain.log:], '\n')
		if n < 0 {
			break // the end, or a delta a crash cut short
		}
		var d manifestDelta
		if err := json.Unmarshal(log[chain.log:chain.log+int64(n)], &d); err != nil {
			return nil, chain, 0, fmt.Errorf("snapshot %s at byte %d: %w", deltaLogName(bestStep), chain.log, err)
		}
		if d.Step < m.Step {
			return nil, chain, 0, fmt.Errorf("snapshot %s at byte %d: step %d after step %d", deltaLogName(bestStep), chain.log, d.Step, m.Step)
		}
		if d.Step > step {
			break
		}
		m.apply(&d)
		end := chain.log + int64(n) + 1
		stored = d.Stored + diskBlocks(end) - diskBlocks(chain.log)
		chain.log = end
	}
	return &m, chain, stored, nil
}

// restoreSnapshot copies the files of m into dir (copies, not links: the
// fork may change them in place; sparse files keep their holes) and
// returns what it could not restore: the files m holds without their
// content, and those whose stored content is missing or damaged. An error
// is a failure to write dir.
func (e *Executor) restoreSnapshot(ctx context.Context, m *manifest, dir string) ([]string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	paths := make([]string, 0, len(m.Files))
	for p := range m.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var skipped, lost []string
	for _, p := range paths {
		f := m.Files[p]
		switch {
		case !fs.ValidPath(p) || p == ".":
			lost = append(lost, fmt.Sprintf("%q (not a path within the work directory)", p))
			continue
		case f.Skipped != "":
			skipped = append(skipped, p+" ("+f.Skipped+")")
			continue
		case f.Link == "" && !validHash(f.Hash):
			lost = append(lost, p+" (no valid content hash)")
			continue
		}
		if err := root.MkdirAll(path.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("restore %s: %w", p, err)
		}
		if f.Link != "" {
			if err := root.Symlink(f.Link, p); err != nil {
				return nil, fmt.Errorf("restore %s: %w", p, err)
			}
			continue
		}
		why, err := e.restoreFile(ctx, root, p, f)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w", p, err)
		}
		if why != "" {
			lost = append(lost, p+" ("+why+")")
		}
	}
	var warns []string
	if len(skipped) > 0 {
		warns = append(warns, fmt.Sprintf("%d file(s) of the work directory at step %d were not snapshotted and are missing from the fork: %s",
			len(skipped), m.Step, listed(skipped)))
	}
	if len(lost) > 0 {
		warns = append(warns, fmt.Sprintf("%d file(s) of the work-dir snapshot of step %d could not be restored: %s", len(lost), m.Step, listed(lost)))
	}
	if m.Incomplete != "" {
		warns = append(warns, fmt.Sprintf("the work-dir snapshot of step %d is incomplete: %s", m.Step, m.Incomplete))
	}
	return warns, nil
}

// restoreFile copies the object of f into the new file p of root; why
// says why it did not (the object is missing or damaged), err is a failure
// to write p.
func (e *Executor) restoreFile(ctx context.Context, root *os.Root, p string, f fileSnap) (why string, err error) {
	in, err := os.Open(e.objectPath(f.Hash))
	if err != nil {
		return "its stored content is missing: " + errText(err), nil
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return "its stored content cannot be read: " + errText(err), nil
	}
	if info.Size() != f.Size {
		return fmt.Sprintf("its stored content has %d bytes, the snapshot says %d", info.Size(), f.Size), nil
	}
	perm := f.Mode.Perm()
	out, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o200)
	if err != nil {
		return "", err
	}
	// The copy writes no more data than the object takes (and a little
	// for the extents' rounding): holes stay holes, or it stops.
	_, err = sparse.Copy(ctx, in, out, f.Size, sparse.DiskUsage(info)+1<<20)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, sparse.ErrOverBudget) {
		return "its stored content reads as more data than it takes on disk", root.Remove(p)
	}
	if err != nil {
		return "", err
	}
	return "", root.Chmod(p, perm)
}
