package pyinterp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/procgroup"
	"github.com/flockrun/flock/isolation"
)

// fallbackInterpreters are tried, in order, when python3 is not on PATH.
var fallbackInterpreters = []string{"/usr/bin/python3", "/usr/local/bin/python3"}

// resolveTimeout bounds asking a shim for its real executable.
const resolveTimeout = 30 * time.Second

// interpreter returns the python binary to run for a configured value
// ("" means: find python3). Results are cached per configured value, so a
// shim is asked at most once per process (unless asking fails).
func (p *Pool) interpreter(ctx context.Context, configured string) (string, error) {
	p.mu.Lock()
	path, ok := p.interps[configured]
	p.mu.Unlock()
	if ok {
		return path, nil
	}
	path, err := resolveInterpreter(ctx, configured)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.interps[configured] = path
	p.mu.Unlock()
	return path, nil
}

// resolveInterpreter finds a real interpreter binary. A configured value is
// looked up on PATH when it has no slash. Without one, python3 on PATH is
// used, else the first of fallbackInterpreters that exists. A path inside a
// "shims" directory (pyenv, asdf, ...) is a script that picks a version on
// every start and costs tens of milliseconds each time; it is replaced by
// the sys.executable it reports, as seen from the server's working
// directory (a .python-version in a run's work directory is not consulted).
func resolveInterpreter(ctx context.Context, configured string) (string, error) {
	var p string
	switch {
	case configured != "":
		lp, err := exec.LookPath(configured)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNoInterpreter, err)
		}
		p = lp
	default:
		if lp, err := exec.LookPath("python3"); err == nil {
			p = lp
			break
		}
		for _, c := range fallbackInterpreters {
			if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
				p = c
				break
			}
		}
		if p == "" {
			return "", ErrNoInterpreter
		}
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if !isShim(p) {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, "-c", "import sys; print(sys.executable)")
	cmd.Env = baseEnv(configs.Isolation{}, nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := procgroup.Run(cmd, time.Second); err != nil {
		return "", fmt.Errorf("%w: resolve shim %s: %v: %s", ErrNoInterpreter, p, err, strings.TrimSpace(stderr.String()))
	}
	real := strings.TrimSpace(stdout.String())
	if real == "" || !filepath.IsAbs(real) {
		return "", fmt.Errorf("%w: shim %s reported %q", ErrNoInterpreter, p, real)
	}
	return real, nil
}

// isShim reports whether p lies in a version manager's shims directory.
func isShim(p string) bool {
	return strings.Contains(filepath.ToSlash(p), "/shims/")
}

// baseEnv builds an interpreter's environment, isolated as iso says: the
// base set of the server's (isolation.Environ), PYTHONUNBUFFERED=1,
// PYTHONDONTWRITEBYTECODE=1 and PYTHONIOENCODING=utf-8, then extra
// ("KEY=value", later entries win).
func baseEnv(iso configs.Isolation, extra []string) []string {
	return isolation.Environ(iso, append([]string{"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8"}, extra...)...)
}
