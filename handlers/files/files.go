package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/tables"
	"github.com/flockrun/flock/operations"
)

// DefaultMaxRead caps read_file when the request gives no max_bytes.
const DefaultMaxRead = 64 << 20

// Handler serves read_file and write_file.
type Handler struct{ access *Access }

// New returns a Handler whose file accesses a confines. A nil a confines
// them to the run's work directory.
func New(a *Access) *Handler {
	if a == nil {
		a = &Access{}
	}
	return &Handler{access: a}
}

// Handle implements handlers.Handler.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	switch req.Kind {
	case operations.KindReadFile:
		p := operations.ReadFile.Params(req)
		r, err := h.read(env.WorkDir, p.Path, p.MaxBytes)
		if err == nil && r.Exists {
			if err = convert(r, p.As); err != nil {
				err = fmt.Errorf("%s: %w", p.Path, err)
			}
		}
		if err != nil {
			return operations.Failed(req, "read_file: %v", err)
		}
		return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: r}
	case operations.KindWriteFile:
		w := operations.WriteFile.Params(req)
		path, err := h.access.WriteFile(env.WorkDir, w.Path, []byte(w.Content), w.Append)
		if err != nil {
			return operations.Failed(req, "write_file: %v", err)
		}
		return operations.Result{Kind: req.Kind, Meta: req.Meta,
			Data: &operations.WriteFileResult{Path: path, Bytes: int64(len(w.Content))}}
	}
	return operations.Failed(req, "files handler cannot run %q", req.Kind)
}

func (h *Handler) read(workDir, name string, limit int64) (*operations.ReadFileResult, error) {
	if limit <= 0 {
		limit = DefaultMaxRead
	}
	f, err := h.access.Open(workDir, name)
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
		return nil, fmt.Errorf("%s is larger than %d bytes", h.access.Path(workDir, name), limit)
	}
	return &operations.ReadFileResult{Exists: true, Content: string(b), Bytes: int64(len(b))}, nil
}

// convert applies ReadFileRequest.As to what was read.
func convert(r *operations.ReadFileResult, as string) error {
	switch as {
	case "":
		return nil
	case operations.ReadAsJSONL:
		if !tables.IsParquet([]byte(r.Content)) {
			return fmt.Errorf("%w (it does not start with the Parquet magic bytes PAR1)", tables.ErrNotParquet)
		}
		b, err := tables.ParquetJSONL([]byte(r.Content))
		if err != nil {
			return err
		}
		r.Content, r.Bytes = string(b), int64(len(b))
		return nil
	}
	return fmt.Errorf("as %q: want \"\" or %q", as, operations.ReadAsJSONL)
}

var _ handlers.Handler = (*Handler)(nil)
