package e2e

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testUID is the unprivileged user the tests run flock as when they run
// as root (CI): a number no account of a Debian machine uses, so that no
// other process shares it.
const testUID = 64123

// asUser returns the command prefix that runs a program as an
// unprivileged user, with that user's ids: nil and the test's own ids when
// the test does not run as root (it is that user already).
func asUser(t *testing.T) ([]string, int, int) {
	t.Helper()
	if os.Getuid() != 0 {
		return nil, os.Getuid(), os.Getgid()
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			t.Fatalf("setpriv is required (scripts/test.sh installs util-linux): %v", err)
		}
		t.Skipf("setpriv not found: %v", err)
	}
	id := strconv.Itoa(testUID)
	return []string{setpriv, "--reuid=" + id, "--regid=" + id, "--clear-groups", "--"}, testUID, testUID
}

// userDir is a fresh directory every user may enter, removed at the end
// of the test (t.TempDir's parent is the test user's alone).
func userDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "flock-e2e-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chownTree gives dir and everything in it to uid and gid.
func chownTree(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// linkBinary makes the flock binary available at dst (its build directory
// is the test user's alone).
func linkBinary(t *testing.T, dst string) {
	t.Helper()
	if os.Link(binary, dst) == nil {
		return
	}
	src, err := os.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// bwrapRunsAs reports whether bwrap can make flock's sandbox when run
// through as (nil: as the test's user). It needs that user's namespaces:
// where unprivileged user namespaces are off, it cannot.
func bwrapRunsAs(as []string) bool {
	argv := append(as[:len(as):len(as)], "bwrap", "--die-with-parent", "--unshare-all", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true")
	return exec.Command(argv[0], argv[1:]...).Run() == nil
}

// pathWithout returns the current PATH with the programs named left out:
// a directory of it that holds one of them is replaced by a directory
// inside dir of links to the rest of its programs.
func pathWithout(t *testing.T, dir string, names ...string) string {
	t.Helper()
	var path []string
	for i, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(d)
		if err != nil || !slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return slices.Contains(names, e.Name()) }) {
			path = append(path, d)
			continue
		}
		links := filepath.Join(dir, "path"+strconv.Itoa(i))
		if err := os.Mkdir(links, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !slices.Contains(names, e.Name()) {
				if err := os.Symlink(filepath.Join(d, e.Name()), filepath.Join(links, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		path = append(path, links)
	}
	return strings.Join(path, string(filepath.ListSeparator))
}

// TestSecretsOutOfReachAsUser is TestSecretsOutOfReach's attack on a
// `flock serve` run by an unprivileged user (how most people run it; CI
// runs as root, so the test switches to an unused uid with setpriv), its
// token in a file outside the data directory (--auth-token-file, 0600,
// the server user's) and a provider key in its environment. Every probe
// (an external agent, a run's bash and python ops, a sandbox bash:run)
// also tries process_vm_readv and flock's open files, and the token file
// it is told of and finds on flock's command line.
//
//   - auto: bwrap where it runs as that user (unprivileged user
//     namespaces on), and then nothing leaks; where it does not, auto
//     falls back to unisolated (the start-up warning says so), as in the
//     next case.
//   - auto without bwrap (none on the PATH: how auto falls back whatever
//     this host allows): the programs run as the server's user and can
//     read what it can, flock.db and the token file (and use the token);
//     flock's environment, memory and open files stay out of reach through
//     ProtectSelf alone (non-dumpable: a same-user process holds no
//     CAP_SYS_PTRACE).
//   - none: the same, by the operator's choice.
//   - root auto: the token file is hidden from bwrap'd programs as the
//     data directory is.
func TestSecretsOutOfReachAsUser(t *testing.T) {
	needPython3(t)
	as, uid, gid := asUser(t)
	t.Run("auto", func(t *testing.T) {
		isolated := bwrapRunsAs(as)
		t.Logf("bwrap runs as uid %d: %v", uid, isolated)
		secretsAttack(t, attack{mode: "auto", isolated: isolated, tokenFile: true, as: as, uid: uid, gid: gid})
	})
	t.Run("auto without bwrap", func(t *testing.T) {
		t.Setenv("PATH", pathWithout(t, userDir(t), "bwrap"))
		secretsAttack(t, attack{mode: "auto", tokenFile: true, as: as, uid: uid, gid: gid})
	})
	t.Run("none", func(t *testing.T) {
		secretsAttack(t, attack{mode: "none", tokenFile: true, as: as, uid: uid, gid: gid})
	})
	t.Run("root auto", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("not root")
		}
		if !bwrapRunsAs(nil) {
			t.Skip("bwrap does not run here")
		}
		secretsAttack(t, attack{mode: "auto", isolated: true, tokenFile: true})
	})
}
