package web

import (
	"io/fs"
	"os"
	"path/filepath"
)

func walkFiles(dir string, fn func([]byte)) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fn(b)
		return nil
	})
}
