package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Work-dir snapshots. After the operations of a step have all returned,
// the executor records what the run's work directory holds: a manifest
// (path → content hash, mode) written as a file beside the runs' work
// directories, only when something changed since the run's previous
// manifest. File contents go to a content-addressed object store shared
// by every run, each distinct content once, and only files whose size or
// modification time changed since the previous manifest are read again.
// A fork copies the snapshot of the newest manifest at or before its
// step into its own work directory.
//
//	RUNS_DIR/.snapshots/objects/ab/abcdef...    file contents by SHA-256
//	RUNS_DIR/.snapshots/runs/RUN/00000000000000000007.json  manifest of step 7
//
// Children's work directories (children/ beneath the run's) are left out:
// they are the children's own.
const snapshotsDir = ".snapshots"

// manifest is a work directory as of the end of a step.
type manifest struct {
	Step  uint64              `json:"step"`
	Files map[string]fileSnap `json:"files"`
}

// fileSnap is one file of a manifest: a regular file's content hash, or a
// symbolic link's target.
type fileSnap struct {
	Hash  string      `json:"hash,omitempty"`
	Link  string      `json:"link,omitempty"`
	Size  int64       `json:"size"`
	Mode  fs.FileMode `json:"mode"`
	MTime int64       `json:"mtime_ns"`
}

// same reports whether two manifests describe the same files.
func (m *manifest) same(o *manifest) bool {
	if m == nil || o == nil || len(m.Files) != len(o.Files) {
		return false
	}
	for p, f := range m.Files {
		g, ok := o.Files[p]
		if !ok || f.Hash != g.Hash || f.Link != g.Link || f.Mode != g.Mode {
			return false
		}
	}
	return true
}

func (e *Executor) snapRoot() string { return filepath.Join(e.cfg.RunsDir, snapshotsDir) }
func (e *Executor) snapRunDir(id string) string {
	return filepath.Join(e.snapRoot(), "runs", filepath.FromSlash(id))
}
func (e *Executor) objectPath(hash string) string {
	return filepath.Join(e.snapRoot(), "objects", hash[:2], hash)
}

// snapshot records the work directory as of the end of the current step
// when the step had operations (only they change files) or is the run's
// first. Failures are logged: a missing snapshot only makes forks of this
// step take an older one.
func (r *runner) snapshot() {
	if r.e.cfg.NoSnapshots || (r.head.NumOps == 0 && r.head.Step > 0) {
		return
	}
	if !r.snapLoaded {
		r.snapLoaded = true
		m, err := r.e.loadManifest(r.id, r.head.Step)
		if err != nil {
			r.e.log.Warn("read the last work-dir snapshot; taking a full one", "run", r.id, "err", err)
		}
		r.snap = m
	}
	m, err := r.e.takeSnapshot(r.head.WorkDir, r.head.Step, r.snap)
	if err != nil {
		r.e.log.Warn("work-dir snapshot failed; forks of this step take an older one", "run", r.id, "step", r.head.Step, "err", err)
		return
	}
	if r.snap != nil && m.same(r.snap) {
		return
	}
	if r.snap == nil && len(m.Files) == 0 {
		// Nothing to restore: an empty directory needs no manifest (most
		// runs never write a file).
		r.snap = m
		return
	}
	if err := r.e.writeManifest(r.id, m); err != nil {
		r.e.log.Warn("write work-dir snapshot", "run", r.id, "step", r.head.Step, "err", err)
		return
	}
	r.snap = m
}

// takeSnapshot walks dir and stores the contents of the files that
// changed since prev (by size, mode and modification time).
func (e *Executor) takeSnapshot(dir string, step uint64, prev *manifest) (*manifest, error) {
	m := &manifest{Step: step, Files: map[string]fileSnap{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "children" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := fileSnap{Size: info.Size(), Mode: info.Mode(), MTime: info.ModTime().UnixNano()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if f.Link, err = os.Readlink(path); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if p, ok := prev.lookup(rel); ok && p.Hash != "" && p.Size == f.Size && p.MTime == f.MTime && p.Mode == f.Mode {
				f.Hash = p.Hash
				break
			}
			if f.Hash, err = e.storeObject(path); err != nil {
				return err
			}
		default:
			return nil // sockets, devices, pipes
		}
		m.Files[rel] = f
		return nil
	})
	return m, err
}

func (m *manifest) lookup(rel string) (fileSnap, bool) {
	if m == nil {
		return fileSnap{}, false
	}
	f, ok := m.Files[rel]
	return f, ok
}

// storeObject copies a file into the object store under its hash (once
// per content) and returns the hash.
func (e *Executor) storeObject(path string) (string, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dir := filepath.Join(e.snapRoot(), "objects")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "tmp-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), src); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	hash := hex.EncodeToString(h.Sum(nil))
	dst := e.objectPath(hash)
	if _, err := os.Stat(dst); err == nil {
		return hash, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", err
	}
	return hash, nil
}

func manifestName(step uint64) string { return fmt.Sprintf("%020d.json", step) }

// writeManifest writes m atomically (temp file, rename).
func (e *Executor) writeManifest(id string, m *manifest) error {
	dir := e.snapRunDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, manifestName(m.Step)))
}

// loadManifest returns run id's newest manifest at or before step, or nil
// when it has none.
func (e *Executor) loadManifest(id string, step uint64) (*manifest, error) {
	names, err := os.ReadDir(e.snapRunDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
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
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(e.snapRunDir(id), best))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", best, err)
	}
	return &m, nil
}

// restoreSnapshot copies the files of m into dir (copies, not links: the
// fork may change them in place).
func (e *Executor) restoreSnapshot(m *manifest, dir string) error {
	paths := make([]string, 0, len(m.Files))
	for p := range m.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		f := m.Files[p]
		if strings.HasPrefix(p, "../") || filepath.IsAbs(p) {
			return fmt.Errorf("snapshot path %q escapes the work directory", p)
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if f.Link != "" {
			if err := os.Symlink(f.Link, dst); err != nil {
				return err
			}
			continue
		}
		if err := copyFile(e.objectPath(f.Hash), dst, f.Mode.Perm()); err != nil {
			return fmt.Errorf("restore %s: %w", p, err)
		}
	}
	return nil
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}
