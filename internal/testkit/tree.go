package testkit

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/internal/sparse"
)

// Tree describes the files beneath dir (not its directories) as a copy of
// it must give them back: per slash-separated path, a symbolic link's
// target, or a regular file's mode, size and content (itself when short,
// else its SHA-256) and whether it has holes (takes less than half its
// size on disk).
func Tree(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		content := fmt.Sprintf("%q", b)
		if len(b) > 64 {
			content = fmt.Sprintf("sha256 %x", sha256.Sum256(b))
		}
		out[rel] = fmt.Sprintf("%v %d bytes %s holes=%v", info.Mode(), info.Size(), content, sparse.DiskUsage(info) < info.Size()/2)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
