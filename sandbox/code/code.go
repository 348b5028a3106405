package code

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/pyinterp"
	"github.com/flockrun/flock/internal/shell"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/sandbox"
)

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "code", New: func() sandbox.Backend { return new(Backend) }})
}

// DefaultMaxFileSize bounds what code:read returns and code:write accepts;
// max_file_size sets it, up to MaxFileSizeLimit.
const (
	DefaultMaxFileSize = 10 << 20
	MaxFileSizeLimit   = 1 << 30
)

// Backend is the code backend.
type Backend struct {
	py      *pyinterp.Pool
	sh      *shell.Pool
	iso     configs.Isolation // resolved in Provision
	maxFile int64
	grace   time.Duration // how long past the call's deadline a timed-out cell may take to stop
}

// config is resources.code.config.
type config struct {
	// Timeout is a call's timeout when it names none (the shell's and the
	// interpreter's default, 600 s, when absent).
	Timeout *sandbox.Seconds `json:"timeout"`
	// OutputLimit caps each stream, in bytes (100000 when absent).
	OutputLimit *sandbox.Count `json:"output_limit" min:"1" max:"1073741824"` // sandbox.MaxOutputLimit
	// MaxFileSize bounds what code:read and code:write move, in bytes
	// (DefaultMaxFileSize when absent).
	MaxFileSize *sandbox.Count `json:"max_file_size" min:"1" max:"1073741824"` // MaxFileSizeLimit
	// Isolation is "bwrap" (a private /tmp, no network) or "none" (the
	// operator opting this backend out); when absent, the service's
	// policy (Env.Isolation resolves it).
	Isolation string `json:"isolation" enum:"none,bwrap"`
}

// Provision reads the config section.
func (b *Backend) Provision(_ context.Context, env sandbox.Env) error {
	var c config
	if err := env.Decode(&c); err != nil {
		return err
	}
	var popts pyinterp.Options
	var bopts shell.Options
	if c.Timeout != nil {
		popts.DefaultTimeout, bopts.DefaultTimeout = c.Timeout.Duration(), c.Timeout.Duration()
	}
	if c.OutputLimit != nil {
		popts.OutputLimit, bopts.OutputLimit = int(c.OutputLimit.Int()), int(c.OutputLimit.Int())
	}
	b.maxFile = DefaultMaxFileSize
	if c.MaxFileSize != nil {
		b.maxFile = c.MaxFileSize.Int()
	}
	iso, err := env.Isolation(c.Isolation)
	if err != nil {
		return err
	}
	// The isolation is resolved: each call asks for it as a run's explicit
	// choice, with the service's data directory (other sessions'
	// workspaces, backends' data) hidden; the session's own workspace is
	// bound back.
	b.iso = iso
	popts.Isolation, bopts.Isolation = isolation.PolicyNone, isolation.PolicyNone
	popts.Hidden, bopts.Hidden = env.Hidden, env.Hidden
	b.grace = pyinterp.DefaultInterruptGrace + 2*time.Second
	b.py = pyinterp.NewPool(popts)
	b.sh = shell.NewPool(bopts)
	return nil
}

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

const timeoutProp = `"timeout":{"type":"number","description":"seconds before the call is interrupted"}`

// Tools lists code:python, code:bash, code:read, code:write, code:glob,
// code:grep and code:edit.
func (b *Backend) Tools() []sandbox.Tool {
	return []sandbox.Tool{
		{
			Name:        "code:python",
			Description: "Run Python code in this session's persistent interpreter (globals, imports and files carry over). Returns output (stdout and stderr), error (a traceback) and timed_out.",
			Parameters:  schema(`"code":{"type":"string","description":"Python source; the value of a final expression is shown"},`+timeoutProp, "code"),
			Run:         b.python,
		},
		{
			Name:        "code:bash",
			Description: "Run a bash command in this session's workspace. Returns stdout, then stderr after a [stderr]: line.",
			Parameters:  schema(`"command":{"type":"string","description":"bash command text"},`+timeoutProp, "command"),
			Run:         b.bash,
		},
		{
			Name:        "code:read",
			Description: "Read a text file of this session's workspace.",
			Parameters:  schema(`"path":{"type":"string","description":"path relative to the workspace"}`, "path"),
			Run:         b.read,
		},
		{
			Name:        "code:write",
			Description: "Create or replace a file of this session's workspace (parent directories are created).",
			Parameters: schema(`"path":{"type":"string","description":"path relative to the workspace"},`+
				`"content":{"type":"string","description":"the file's new content"}`, "path", "content"),
			Run: b.write,
		},
		{
			Name:        "code:glob",
			Description: "List the files of this session's workspace whose path matches a glob pattern (* and ? within a name, ** across directories), sorted; at most 1000.",
			Parameters: schema(`"pattern":{"type":"string","description":"glob relative to path, e.g. **/*.py"},`+
				`"path":{"type":"string","description":"directory to search, relative to the workspace (default the workspace)"}`, "pattern"),
			Run: b.glob,
		},
		{
			Name:        "code:grep",
			Description: "Search the text files of this session's workspace for a regular expression (RE2 syntax). Returns matches as {path, line, text}, at most max_matches.",
			Parameters: schema(`"pattern":{"type":"string","description":"regular expression (RE2), matched against each line"},`+
				`"path":{"type":"string","description":"file or directory to search, relative to the workspace (default the workspace)"},`+
				`"glob":{"type":"string","description":"only files whose name matches this glob, e.g. *.py (a pattern with / matches the path below path)"},`+
				`"ignore_case":{"type":"boolean","description":"case-insensitive match"},`+
				`"max_matches":{"type":"integer","minimum":1,"maximum":1000,"description":"most matching lines returned (default 100)"}`, "pattern"),
			Run: b.grep,
		},
		{
			Name:        "code:edit",
			Description: "Replace an exact string in a file of this session's workspace. old_string must occur exactly once unless replace_all is true.",
			Parameters: schema(`"path":{"type":"string","description":"path relative to the workspace"},`+
				`"old_string":{"type":"string","description":"the exact text to replace (whitespace and line breaks included)"},`+
				`"new_string":{"type":"string","description":"the replacement text"},`+
				`"replace_all":{"type":"boolean","description":"replace every occurrence (default false)"}`, "path", "old_string", "new_string"),
			Run: b.edit,
		},
	}
}

// timeout returns the call's timeout in seconds: the timeout parameter,
// bounded by ctx's deadline.
func timeout(ctx context.Context, c *sandbox.Call) (float64, error) {
	var t float64
	if c.Has("timeout") {
		var err error
		if t, err = c.Float("timeout"); err != nil {
			return 0, err
		}
		if t <= 0 {
			return 0, sandbox.Errorf(sandbox.CodeInvalidParameterType, "parameter timeout must be positive")
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl).Seconds(); t == 0 || left < t {
			t = max(left, 0.001)
		}
	}
	return t, nil
}

// detach returns a context for the interpreter that outlives ctx's deadline
// by grace, so a timed-out cell is interrupted by the interpreter's own timer (the
// interpreter and its globals kept) rather than killed by the cancellation.
// A cancellation other than the deadline passes through at once.
func (b *Backend) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
			return
		}
		t := time.AfterFunc(b.grace, cancel)
		context.AfterFunc(hctx, func() { t.Stop() })
	})
	return hctx, func() { stop(); cancel() }
}

func timedOut(t float64, data map[string]any) error {
	data["timeout"] = t
	return &sandbox.Error{Code: sandbox.CodeTimeout, Message: fmt.Sprintf("Tool execution timed out after %gs", t), Data: data}
}

func (b *Backend) python(ctx context.Context, c *sandbox.Call) (any, error) {
	src, err := c.String("code")
	if err != nil {
		return nil, err
	}
	t, err := timeout(ctx, c)
	if err != nil {
		return nil, err
	}
	hctx, cancel := b.detach(ctx)
	defer cancel()
	start := time.Now()
	s := c.Session
	r, err := b.py.Run(hctx, pyinterp.Cell{Owner: s.ID, Code: src, Timeout: shell.Seconds(t), WorkDir: s.Workspace, Isolation: b.iso})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("python: %w", err)
	}
	if r.TimedOut {
		return nil, timedOut(t, map[string]any{"output": r.Output, "error": r.Error})
	}
	rc := 0
	if r.Error != "" {
		rc = 1
	}
	// stdout, stderr, return_code and execution_time_ms are what AgentFlow's
	// client formatter (CodeExecutionResult) reads for resource "code".
	return map[string]any{
		"output": r.Output, "error": r.Error, "timed_out": false, "truncated": r.Truncated,
		"stdout": r.Output, "stderr": r.Error, "return_code": rc,
		"execution_time_ms": float64(time.Since(start).Microseconds()) / 1000,
	}, nil
}

func (b *Backend) bash(ctx context.Context, c *sandbox.Call) (any, error) {
	cmd, err := c.String("command")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cmd) == "" {
		return nil, sandbox.Errorf(sandbox.CodeInvalidInput, "command is empty")
	}
	t, err := timeout(ctx, c)
	if err != nil {
		return nil, err
	}
	s := c.Session
	r, err := b.sh.Run(ctx, shell.Command{Owner: s.ID, Text: cmd, Timeout: shell.Seconds(t), WorkDir: s.Workspace, Isolation: b.iso})
	if r != nil && r.TimedOut {
		return nil, timedOut(t, map[string]any{"stdout": r.Stdout, "stderr": r.Stderr})
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("bash: %w", err)
	}
	return formatBash(r.Stdout, r.Stderr), nil
}

// formatBash is the removed AgentFlow code backend's answer.
func formatBash(stdout, stderr string) string {
	out := stdout
	if stderr != "" {
		out += "\n[stderr]:\n" + stderr
	}
	if out == "" {
		return "(no output)"
	}
	return out
}

// rel turns a client path into a local path relative to ws, or a 4000.
func rel(ws, p string) (string, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", sandbox.Errorf(sandbox.CodeInvalidInput, "invalid path %q", p)
	}
	r := p
	if filepath.IsAbs(p) {
		var err error
		if r, err = filepath.Rel(ws, filepath.Clean(p)); err != nil {
			return "", sandbox.Errorf(sandbox.CodeInvalidInput, "path %q is outside the workspace", p)
		}
	}
	r = filepath.Clean(r)
	if !filepath.IsLocal(r) {
		return "", sandbox.Errorf(sandbox.CodeInvalidInput, "path %q is outside the workspace", p)
	}
	return r, nil
}

// fileErr maps an os.Root error to an answer that names the client's path
// only (never the server's directories).
func fileErr(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sandbox.Errorf(sandbox.CodeInvalidInput, "no such file: %s", p)
	case errors.Is(err, fs.ErrInvalid) || strings.Contains(err.Error(), "escapes"):
		return sandbox.Errorf(sandbox.CodeInvalidInput, "path %q is outside the workspace", p)
	case errors.Is(err, fs.ErrPermission):
		return sandbox.Errorf(sandbox.CodeInvalidInput, "permission denied: %s", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, p, pe.Err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

func (b *Backend) open(c *sandbox.Call) (*os.Root, string, string, error) {
	p, err := c.String("path")
	if err != nil {
		return nil, "", "", err
	}
	r, err := rel(c.Session.Workspace, p)
	if err != nil {
		return nil, "", "", err
	}
	root, err := os.OpenRoot(c.Session.Workspace)
	if err != nil {
		return nil, "", "", fmt.Errorf("workspace: %w", err)
	}
	return root, p, r, nil
}

// openRegular opens name beneath root for flag and returns it only when
// it is a regular file: the open never waits (O_NONBLOCK, so a FIFO or a
// device opens at once, or fails for writing a FIFO without a reader),
// and the check is fstat of what was opened, so nothing can be swapped in
// between. Anything else is 4000 naming client, the path the caller gave.
func openRegular(root *os.Root, client, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return nil, nil, notRegular(client)
		}
		return nil, nil, fileErr(client, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fileErr(client, err)
	}
	switch {
	case st.IsDir():
		f.Close()
		return nil, nil, sandbox.Errorf(sandbox.CodeInvalidInput, "%s is a directory", client)
	case !st.Mode().IsRegular():
		f.Close()
		return nil, nil, notRegular(client)
	}
	return f, st, nil
}

func notRegular(client string) error {
	return sandbox.Errorf(sandbox.CodeInvalidInput, "%s is not a regular file (a FIFO, socket or device): the file tools read and write regular files only", client)
}

// readRegular reads the regular file name, at most max bytes; a larger
// one is 4000.
func readRegular(root *os.Root, client, name string, max int64) ([]byte, fs.FileInfo, error) {
	f, st, err := openRegular(root, client, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, nil, sandbox.Errorf(sandbox.CodeInvalidInput, "%s is larger than %d bytes", client, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, fileErr(client, err)
	}
	if int64(len(data)) > max {
		return nil, nil, sandbox.Errorf(sandbox.CodeInvalidInput, "%s is larger than %d bytes", client, max)
	}
	return data, st, nil
}

// writeRegular replaces (or creates with perm) the regular file name with
// data.
func writeRegular(root *os.Root, client, name string, data []byte, perm fs.FileMode) error {
	f, _, err := openRegular(root, client, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fileErr(client, err)
	}
	if err := f.Close(); err != nil {
		return fileErr(client, err)
	}
	return nil
}

func (b *Backend) read(_ context.Context, c *sandbox.Call) (any, error) {
	root, p, r, err := b.open(c)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, _, err := readRegular(root, p, r, b.maxFile)
	if err != nil {
		return nil, err
	}
	return map[string]any{"path": p, "content": string(data), "size": len(data)}, nil
}

func (b *Backend) write(_ context.Context, c *sandbox.Call) (any, error) {
	content, err := c.String("content")
	if err != nil {
		return nil, err
	}
	if int64(len(content)) > b.maxFile {
		return nil, sandbox.Errorf(sandbox.CodeInvalidInput, "content is larger than %d bytes", b.maxFile)
	}
	root, p, r, err := b.open(c)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if d := filepath.Dir(r); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return nil, fileErr(p, err)
		}
	}
	if err := writeRegular(root, p, r, []byte(content), 0o644); err != nil {
		return nil, err
	}
	return map[string]any{"path": p, "size": len(content)}, nil
}

// Fork copies src's workspace into dst's: a forked session sees src's
// files; its shell (and interpreter) start fresh in its own workspace,
// so the working directory, variables and globals are not carried over.
func (b *Backend) Fork(ctx context.Context, src, dst *sandbox.Session) error {
	return sandbox.CopyWorkspace(ctx, src, dst)
}

// Cleanup kills the session's interpreter and shell with every process
// they started.
func (b *Backend) Cleanup(_ context.Context, s *sandbox.Session) error {
	b.py.CloseOwner(s.ID)
	b.sh.CloseOwner(s.ID)
	return nil
}

// Shutdown kills every interpreter and shell.
func (b *Backend) Shutdown(context.Context) error {
	if b.py == nil {
		return nil
	}
	return errors.Join(b.py.Close(), b.sh.Close())
}

var (
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.Cleaner     = (*Backend)(nil)
	_ sandbox.Forker      = (*Backend)(nil)
	_ sandbox.Shutdowner  = (*Backend)(nil)
)
