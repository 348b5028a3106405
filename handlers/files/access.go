package files

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/flockrun/flock/record"
)

// AccessOptions configures an Access. Directories may be relative (to the
// process working directory); they are made absolute once, in NewAccess.
type AccessOptions struct {
	// DataDir is the server's data directory (flock.db, the runs). No run
	// reads or writes in it except beneath its own run tree, even through a
	// read root that contains it.
	DataDir string
	// RunsDir holds the runs' work directories. A run's tree is the work
	// directory of its top-level run: spawned children work in
	// subdirectories of their parent's, so a child reads and writes its
	// parent's files (they are one job) and a parent its children's.
	RunsDir string
	// ReadRoots are the operator's read_roots: directories every run may
	// read beneath. Each must exist.
	ReadRoots []string
	// WriteRoots are directories runs may also write beneath (and read).
	// Only the CLI sets them, for the output directories the person at the
	// terminal named; a server's runs write only in their work directory.
	WriteRoots []string
	// Grants, if set, returns the directories granted to one run tree, by
	// the id of its top-level run (the run's spec: what the person at
	// the terminal handed to a run started from the command line). They
	// are roots of that tree only, read and write as granted, and are
	// looked up only for a path no other root holds.
	Grants func(id string) *record.Grants
}

// Access confines the file accesses made on behalf of runs: read_file,
// write_file, the scripted provider's script. A path (relative paths are
// relative to the run's work directory) must resolve, symbolic links
// included, beneath the run's tree or a read root (reads) or beneath the
// run's tree or a write root (writes). Resolution goes through os.Root,
// so ".." and symbolic links cannot step out of the root the path was
// found in, whatever changes on disk meanwhile; symbolic links with an
// absolute target are refused by os.Root even when the target lies inside.
// Access is safe for concurrent use.
type Access struct {
	data, runs dir
	read       []dir
	write      []dir
	grants     func(id string) *record.Grants
}

// dir is a directory in two spellings: absolute, and with symbolic links
// evaluated (the same when the directory does not exist).
type dir struct{ abs, real string }

func newDir(p string) (dir, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return dir{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return dir{abs: abs, real: abs}, err
	}
	return dir{abs: abs, real: real}, nil
}

// rel returns p relative to d when p is lexically beneath d (or d itself)
// in either spelling.
func (d dir) rel(p string) (string, bool) {
	for _, base := range []string{d.abs, d.real} {
		if r, ok := beneath(base, p); ok {
			return r, true
		}
	}
	return "", false
}

func beneath(base, p string) (string, bool) {
	if base == "" {
		return "", false
	}
	r, err := filepath.Rel(base, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return r, true
}

// NewAccess checks and resolves the directories of o. A read or write root
// that does not exist or is not a directory is an error naming it.
func NewAccess(o AccessOptions) (*Access, error) {
	a := &Access{grants: o.Grants}
	var err error
	if o.DataDir != "" {
		if a.data, err = newDir(o.DataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("data directory %s: %w", o.DataDir, err)
		}
	}
	if o.RunsDir != "" {
		if a.runs, err = newDir(o.RunsDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("runs directory %s: %w", o.RunsDir, err)
		}
	}
	roots := func(setting string, ps []string) ([]dir, error) {
		var out []dir
		for _, p := range ps {
			d, err := newDir(p)
			if err == nil {
				var fi os.FileInfo
				if fi, err = os.Stat(d.real); err == nil && !fi.IsDir() {
					err = errors.New("not a directory")
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", setting, p, err)
			}
			out = append(out, d)
		}
		return out, nil
	}
	if a.write, err = roots("write roots", o.WriteRoots); err != nil {
		return nil, err
	}
	if a.read, err = roots("read_roots", o.ReadRoots); err != nil {
		return nil, err
	}
	a.read = append(a.read, a.write...)
	return a, nil
}

// Path returns name as an absolute, cleaned path: relative names are
// relative to workDir. It does not check access.
func (a *Access) Path(workDir, name string) string {
	if filepath.IsAbs(name) || workDir == "" {
		if p, err := filepath.Abs(name); err == nil {
			return p
		}
		return filepath.Clean(name)
	}
	return filepath.Join(workDir, name)
}

// tree returns the directory of the run tree workDir belongs to: the work
// directory of its top-level run when workDir lies in the runs directory,
// else workDir itself.
func (a *Access) tree(workDir string) dir {
	t, _ := a.treeOf(workDir)
	return t
}

// treeOf is tree, plus the id of the top-level run (its directory's
// name) when workDir lies in the runs directory.
func (a *Access) treeOf(workDir string) (dir, string) {
	w, _ := newDir(workDir)
	for _, base := range []string{a.runs.abs, a.runs.real} {
		if r, ok := beneath(base, w.abs); ok && r != "." {
			id := strings.SplitN(r, string(filepath.Separator), 2)[0]
			top, _ := newDir(filepath.Join(a.runs.abs, id))
			return top, id
		}
	}
	return w, ""
}

// granted returns the roots granted to the run tree of workDir: its read
// roots (write roots included) or, with write, its write roots. Roots
// that no longer exist are left out.
func (a *Access) granted(workDir string, write bool) []dir {
	if a.grants == nil || workDir == "" {
		return nil
	}
	_, id := a.treeOf(workDir)
	if id == "" {
		return nil
	}
	g := a.grants(id)
	if g == nil {
		return nil
	}
	ps := g.WriteRoots
	if !write {
		ps = append(slices.Clone(g.ReadRoots), g.WriteRoots...)
	}
	var out []dir
	for _, p := range ps {
		if d, err := newDir(p); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// Open opens name for reading on behalf of the run working in workDir
// (empty for a check made before the run has one: read roots only). A
// file that does not exist beneath an allowed root is reported with an
// error wrapping fs.ErrNotExist; a path outside every root with one
// wrapping ErrOutsideRoots (or ErrDataDir). Errors name the path.
func (a *Access) Open(workDir, name string) (*os.File, error) {
	if name == "" {
		return nil, ErrNoPath
	}
	p := a.Path(workDir, name)
	var own *dir
	if workDir != "" {
		t := a.tree(workDir)
		own = &t
	}
	open := func(r *os.Root, rel string) (*os.File, error) { return r.Open(rel) }
	f, err := a.openIn(own, a.read, p, open)
	if errors.Is(err, errEscapes) {
		if g := a.granted(workDir, false); len(g) > 0 {
			f, err = a.openIn(nil, g, p, open)
		}
	}
	if errors.Is(err, errEscapes) {
		return nil, fmt.Errorf("%s %w", p, ErrOutsideRoots)
	}
	return f, err
}

// errEscapes reports internally that a path is in no allowed root.
var errEscapes = errors.New("escapes")

// openIn opens p with open in the first root it lies beneath lexically:
// own (the run's tree, trusted to hold only the run's files) first, then
// roots, where a file that resolves into the data directory but not into
// own is refused.
func (a *Access) openIn(own *dir, roots []dir, p string, open func(*os.Root, string) (*os.File, error)) (*os.File, error) {
	try := func(d dir, checkData bool) (*os.File, bool, error) {
		rel, ok := d.rel(p)
		if !ok {
			return nil, false, nil
		}
		r, err := os.OpenRoot(d.abs)
		if err != nil {
			return nil, true, err
		}
		defer r.Close()
		f, err := open(r, rel)
		if err != nil {
			if escaped(err) {
				return nil, true, errEscapes
			}
			return nil, true, err
		}
		if checkData && a.inData(f, own) {
			f.Close()
			return nil, true, fmt.Errorf("%s %w", p, ErrDataDir)
		}
		return f, true, nil
	}
	if own != nil {
		if f, ok, err := try(*own, false); ok {
			return f, err
		}
	}
	for _, d := range roots {
		if f, ok, err := try(d, true); ok {
			return f, err
		}
	}
	return nil, errEscapes
}

// escaped reports whether an os.Root error means the path left the root:
// os.Root reports that with an error that is not a system errno.
func escaped(err error) bool {
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	var errno syscall.Errno
	return !errors.As(err, &errno)
}

// inData reports whether the open file f lies in the data directory but
// not in own (the run's tree).
func (a *Access) inData(f *os.File, own *dir) bool {
	if a.data.abs == "" {
		return false
	}
	p := openPath(f)
	if _, ok := a.data.rel(p); !ok {
		return false
	}
	if own != nil {
		if _, ok := own.rel(p); ok {
			return false
		}
	}
	return true
}

// openPath is where the open file f is now, as the kernel names it, so
// that no symbolic link or rename since the open can fool the check; off
// Linux it falls back to evaluating f's name.
func openPath(f *os.File) string {
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil && filepath.IsAbs(p) {
		return p
	}
	if p, err := filepath.EvalSymlinks(f.Name()); err == nil {
		return p
	}
	return f.Name()
}

// WriteFile writes content to name on behalf of the run working in
// workDir: atomically (temporary file, fsync, rename) or, with app, as an
// fsynced append that is skipped when the content already ends the file
// (a retry after a crash). Missing parent directories are created. It
// returns the absolute path written.
func (a *Access) WriteFile(workDir, name string, content []byte, app bool) (string, error) {
	if name == "" {
		return "", ErrNoPath
	}
	if workDir == "" && len(a.write) == 0 {
		return "", fmt.Errorf("%s %w", name, ErrOutsideWorkDir)
	}
	p := a.Path(workDir, name)
	var own *dir
	if workDir != "" {
		t := a.tree(workDir)
		own = &t
	}
	parent := filepath.Dir(p)
	base := filepath.Base(p)
	// The parent is created and opened as a root of its own; the file is
	// then written by its base name, which cannot leave it.
	var d *os.Root
	openDir := func(r *os.Root, rel string) (*os.File, error) {
		if err := r.MkdirAll(rel, 0o755); err != nil {
			return nil, err
		}
		sub, err := r.OpenRoot(rel)
		if err != nil {
			return nil, err
		}
		dirf, err := sub.Open(".")
		if err != nil {
			sub.Close()
			return nil, err
		}
		d = sub
		return dirf, nil
	}
	f, err := a.openIn(own, a.write, parent, openDir)
	if errors.Is(err, errEscapes) {
		if g := a.granted(workDir, true); len(g) > 0 {
			f, err = a.openIn(nil, g, parent, openDir)
		}
	}
	if errors.Is(err, errEscapes) || errors.Is(err, ErrDataDir) {
		if d != nil {
			d.Close()
		}
		return "", fmt.Errorf("%s %w", p, ErrOutsideWorkDir)
	}
	if err != nil {
		if d != nil {
			d.Close()
		}
		return "", err
	}
	f.Close()
	defer d.Close()
	if app {
		err = appendIn(d, base, content)
	} else {
		err = writeAtomicIn(d, base, content)
	}
	if err != nil && escaped(err) {
		return "", fmt.Errorf("%s %w", p, ErrOutsideWorkDir)
	}
	return p, err
}

// writeAtomicIn writes content to base in d aside (a temporary file,
// synced), renames it over base and syncs d, so that once it returns the
// new content survives a crash: the file's data and the directory entry
// that names it (a rename is journaled with the directory, not the file).
// Every whole-file write of a run goes through it (a rollout's results,
// summary and episodes files, a trajectory, a synthesis's files).
func writeAtomicIn(d *os.Root, base string, content []byte) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmpName := "." + base + ".tmp-" + hex.EncodeToString(rnd[:])
	tmp, err := d.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer d.Remove(tmpName) //nolint:errcheck // gone after the rename
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := d.Rename(tmpName, base); err != nil {
		return err
	}
	return syncDir(d)
}

// syncDir syncs the directory d, making the names created or renamed in
// it durable.
func syncDir(d *os.Root) error {
	dir, err := d.Open(".")
	if err != nil {
		return err
	}
	err = dir.Sync()
	if cerr := dir.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendIn appends content to base in d and syncs it; when the append
// creates the file, d is synced too, so that the file's name survives a
// crash with its first line.
func appendIn(d *os.Root, base string, content []byte) error {
	_, err := d.Lstat(base)
	created := errors.Is(err, fs.ErrNotExist)
	f, err := d.OpenFile(base, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() >= int64(len(content)) && len(content) > 0 {
		tail := make([]byte, len(content))
		if _, err := f.ReadAt(tail, st.Size()-int64(len(content))); err == nil && bytes.Equal(tail, content) {
			return nil // the same append already landed (a retry after a crash)
		}
	}
	if _, err := f.Write(content); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if created {
		return syncDir(d)
	}
	return nil
}
