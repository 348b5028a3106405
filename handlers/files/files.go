package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// DefaultMaxRead caps read_file when the request gives no max_bytes.
const DefaultMaxRead = 64 << 20

// Handler serves read_file and write_file.
type Handler struct{}

// New returns a Handler.
func New() *Handler { return &Handler{} }

// Handle implements handlers.Handler.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	switch req.Kind {
	case operations.KindReadFile:
		r, err := read(resolve(env.WorkDir, req.ReadFile.Path), req.ReadFile.MaxBytes)
		if err != nil {
			return operations.Failed(req, "read_file: %v", err)
		}
		return operations.Result{Kind: req.Kind, Meta: req.Meta, ReadFile: r}
	case operations.KindWriteFile:
		w := req.WriteFile
		if w.Path == "" {
			return operations.Failed(req, "write_file: path is required")
		}
		path := resolve(env.WorkDir, w.Path)
		var err error
		if w.Append {
			err = appendFile(path, []byte(w.Content))
		} else {
			err = writeAtomic(path, []byte(w.Content))
		}
		if err != nil {
			return operations.Failed(req, "write_file: %v", err)
		}
		return operations.Result{Kind: req.Kind, Meta: req.Meta,
			WriteFile: &operations.WriteFileResult{Path: path, Bytes: int64(len(w.Content))}}
	}
	return operations.Failed(req, "files handler cannot run %q", req.Kind)
}

func resolve(workDir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(workDir, p)
}

func read(path string, limit int64) (*operations.ReadFileResult, error) {
	if path == "" {
		return nil, errors.New("path is required")
	}
	if limit <= 0 {
		limit = DefaultMaxRead
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &operations.ReadFileResult{Exists: false}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return &operations.ReadFileResult{Exists: true, Content: string(b), Bytes: int64(len(b))}, nil
}

func writeAtomic(path string, content []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
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
	return os.Rename(tmp.Name(), path)
}

func appendFile(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
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
	return f.Sync()
}

var _ handlers.Handler = (*Handler)(nil)
