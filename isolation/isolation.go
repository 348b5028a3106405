package isolation

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/procgroup"
)

// Isolation kinds (settings isolation.kind).
const (
	KindNone  = "none"
	KindBwrap = "bwrap"
)

// Wrap returns the command line that runs argv isolated as s says, with
// workDir as its writable working directory.
//
// For kind "none" (or "") argv is returned unchanged. For "bwrap" the result
// runs argv under bubblewrap with the whole filesystem read-only, fresh /dev
// and /proc, a private /tmp (the host's, writable, with s.HostTmp), workDir
// bound writable at its own path and set
// as the current directory, every existing path in hidden covered by an
// empty tmpfs (files by /dev/null), all namespaces unshared (the network
// too unless s.Network), no capabilities and --die-with-parent. workDir must be an absolute
// path to an existing directory; symbolic links in it and in hidden are
// resolved. Wrap does not run bwrap; see Available.
func Wrap(s configs.Isolation, workDir string, hidden []string, argv []string) ([]string, error) {
	return WrapReadOnly(s, workDir, hidden, nil, argv)
}

// WrapReadOnly is Wrap with extra paths bound read-only at their own path
// inside the sandbox, on top of the private /tmp and the hidden paths (the
// bash handler uses it for its per-shell command directory).
func WrapReadOnly(s configs.Isolation, workDir string, hidden, readOnly []string, argv []string) ([]string, error) {
	switch s.Kind {
	case "", KindNone:
		return argv, nil
	case KindBwrap:
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, s.Kind)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: empty command", ErrBadPath)
	}
	if !filepath.IsAbs(workDir) {
		return nil, fmt.Errorf("%w: work directory %q is not absolute", ErrBadPath, workDir)
	}
	wd, err := filepath.EvalSymlinks(workDir)
	if err != nil {
		return nil, fmt.Errorf("%w: work directory: %v", ErrBadPath, err)
	}
	if fi, err := os.Stat(wd); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: work directory %q is not a directory", ErrBadPath, workDir)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}

	// --cap-drop ALL: bwrap run by root keeps every capability for the
	// sandbox unless told otherwise, and one of them (CAP_SYS_ADMIN,
	// CAP_DAC_READ_SEARCH) would undo the hiding below.
	out := []string{bwrap, "--die-with-parent", "--unshare-all", "--cap-drop", "ALL"}
	if s.Network {
		out = append(out, "--share-net")
	}
	out = append(out, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	if s.HostTmp {
		out = append(out, "--bind", "/tmp", "/tmp")
	} else {
		out = append(out, "--tmpfs", "/tmp")
	}

	// Mounts on top of the read-only root, parents before children so that
	// a work directory inside a hidden one is bound back on top of the
	// tmpfs, and a hidden directory inside the work directory stays hidden.
	type mount struct {
		path string
		args []string
	}
	mounts := []mount{{wd, []string{"--bind", wd, wd}}}
	for _, r := range readOnly {
		if p, err := filepath.EvalSymlinks(r); err == nil && filepath.IsAbs(p) {
			mounts = append(mounts, mount{p, []string{"--ro-bind", p, p}})
		}
	}
	for _, h := range hidden {
		if h == "" || !filepath.IsAbs(h) || filepath.Clean(h) == "/" {
			continue
		}
		p, err := filepath.EvalSymlinks(h)
		if err != nil {
			continue // missing: nothing to hide
		}
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			continue
		case fi.IsDir():
			mounts = append(mounts, mount{p, []string{"--tmpfs", p}})
		default:
			mounts = append(mounts, mount{p, []string{"--ro-bind", "/dev/null", p}})
		}
	}
	sort.SliceStable(mounts, func(i, j int) bool {
		di, dj := depth(mounts[i].path), depth(mounts[j].path)
		if di != dj {
			return di < dj
		}
		// Same path hidden and bound: hide first, then bind back.
		return mounts[i].args[0] == "--tmpfs" && mounts[j].args[0] != "--tmpfs"
	})
	for _, m := range mounts {
		out = append(out, m.args...)
	}
	out = append(out, "--chdir", wd, "--")
	return append(out, argv...), nil
}

// depth counts the components of a clean absolute path ("/" is 0).
func depth(p string) int {
	p = filepath.Clean(p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// probeTimeout bounds the bwrap probe run by Available.
const probeTimeout = 10 * time.Second

var probe struct {
	once sync.Once
	err  error
}

// Available reports whether bwrap is installed and can create the sandbox
// Wrap describes on this host, by running `true` in one. The probe runs
// once per process; the result, nil or an error wrapping ErrUnavailable
// with bwrap's message, is cached.
func Available() error {
	probe.once.Do(func() { probe.err = runProbe() })
	return probe.err
}

func runProbe() error {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// bwrap finds its sandbox's namespaces through /proc by the PID clone
	// returned: where /proc belongs to another PID namespace (a container
	// or sandbox that unshared PIDs without mounting its own /proc) that
	// PID names another process or none, and bwrap fails, or not, by
	// chance.
	if self, err := os.Readlink("/proc/self"); err == nil && self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("%w: /proc is not this process's PID namespace's (/proc/self is %s, the PID is %d): bwrap cannot find its sandbox there", ErrUnavailable, self, os.Getpid())
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, "--die-with-parent", "--unshare-all", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// bwrap's first child waits for its parent before it can die with it:
	// a bwrap that fails early (where /proc is not its PID namespace's)
	// leaves it blocked, holding stderr open. procgroup.Run stops waiting
	// for stderr shortly after bwrap exits, kills whatever is left of its
	// group, and kills the whole group at the deadline.
	if err := procgroup.Run(cmd, time.Second); err != nil {
		return fmt.Errorf("%w: %s: %v: %s", ErrUnavailable, bwrap, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
