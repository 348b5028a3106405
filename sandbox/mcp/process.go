package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/isolation"
)

// implementation is how flock introduces itself in the MCP handshake.
var implementation = &sdk.Implementation{Name: "flock-sandbox", Version: "1"}

// conn is one running MCP server process and its client session. It is safe for
// concurrent use; close is idempotent.
type conn struct {
	name    string
	cmd     *exec.Cmd
	cs      *sdk.ClientSession
	stderr  *tailBuffer
	secrets []string
	done    chan struct{} // closed when the client session ends (process gone or closed)
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool // guarded by mu
}

// startServer starts sc with workspace as the session's workspace and completes the
// MCP handshake within timeout. The process leads its own process group so that close
// can kill every process it started. Errors wrap ErrServerStart and name the server.
func startServer(ctx context.Context, sc ServerConfig, workspace string, timeout time.Duration) (*conn, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: %w: workspace: %v", sc.Name, ErrServerStart, err)
	}
	sub := func(s string) string { return strings.ReplaceAll(s, WorkspacePlaceholder, ws) }
	dir := ws
	if sc.Cwd != "" {
		c := sub(sc.Cwd)
		if filepath.IsAbs(c) {
			dir = filepath.Clean(c)
		} else {
			dir = filepath.Join(ws, c)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("mcp server %q: %w: cwd: %v", sc.Name, ErrServerStart, err)
		}
	}
	cmd := exec.Command(sub(sc.Command))
	for _, a := range sc.Args {
		cmd.Args = append(cmd.Args, sub(a))
	}
	cmd.Dir = dir
	cmd.Env = serverEnv(sc, ws, sub)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Wait (run by the transport's Close) also waits for the stderr copy; a grandchild
	// holding stderr open must not stall it.
	cmd.WaitDelay = time.Second
	c := &conn{name: sc.Name, cmd: cmd, stderr: &tailBuffer{max: 4096}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	for k, v := range sc.Env {
		if secretName(k) && len(v) >= 4 {
			c.secrets = append(c.secrets, sub(v))
		}
	}
	// Longest first, so that a secret containing another is redacted whole.
	sort.Slice(c.secrets, func(i, j int) bool { return len(c.secrets[i]) > len(c.secrets[j]) })

	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := sdk.NewClient(implementation, nil)
	cs, err := client.Connect(hctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: stopGrace}, nil)
	if err != nil {
		c.killGroup()
		if cmd.Process != nil {
			// Connect closed the connection (and waited) on a failed handshake; be sure.
			_ = cmd.Process.Kill()
		}
		return nil, fmt.Errorf("mcp server %q: %w: %s%s", sc.Name, ErrServerStart, c.redact(err.Error()), c.stderrNote())
	}
	c.cs = cs
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = cs.Wait()
		close(c.done)
	}()
	return c, nil
}

// serverEnv is the server's environment: the base set of flock's
// (isolation.Environ: PATH, the locale, ...), HOME and TMPDIR set to the
// workspace, then the configured variables. Nothing else of flock's
// environment (API keys, tokens) reaches the server.
func serverEnv(sc ServerConfig, ws string, sub func(string) string) []string {
	extra := []string{"HOME=" + ws, "TMPDIR=" + ws}
	keys := make([]string, 0, len(sc.Env))
	for k := range sc.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra = append(extra, k+"="+sub(sc.Env[k]))
	}
	return isolation.Environ(configs.Isolation{}, extra...)
}

// listTools lists every tool the server offers, following pagination.
func (c *conn) listTools(ctx context.Context) ([]*sdk.Tool, error) {
	var tools []*sdk.Tool
	for t, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, c.callError("tools/list", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// Result is what a tool call answers as the envelope's data.
type Result struct {
	// Result is the text of the result's text items, joined by newlines.
	Result string `json:"result"`
	// Content is every content item as the server sent it (text, image, audio,
	// resource...).
	Content []json.RawMessage `json:"content"`
	// StructuredContent is the server's structured result, when it sent one.
	StructuredContent any `json:"structured_content,omitempty"`
}

// call runs one tool. An isError result is returned with an error wrapping
// ErrToolFailed; a failure of the call itself wraps ErrCall, or ErrServerGone when the
// process has exited; a context error is returned wrapped as is.
func (c *conn) call(ctx context.Context, tool string, args map[string]any) (*Result, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mcp server %q: tool %q: %w", c.name, tool, ctx.Err())
		}
		return nil, c.callError("tool "+strconvQuote(tool), err)
	}
	out := &Result{Content: make([]json.RawMessage, 0, len(res.Content)), StructuredContent: res.StructuredContent}
	var texts []string
	for _, item := range res.Content {
		if tc, ok := item.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
		b, err := json.Marshal(item)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: tool %q: %w: content item: %v", c.name, tool, ErrCall, err)
		}
		out.Content = append(out.Content, b)
	}
	out.Result = strings.Join(texts, "\n")
	if res.IsError {
		msg := out.Result
		if msg == "" {
			msg = "(no text)"
		}
		return out, fmt.Errorf("mcp server %q: tool %q: %w: %s", c.name, tool, ErrToolFailed, c.redact(msg))
	}
	return out, nil
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// alive reports ErrClosed or ErrServerGone when the server can take no call.
func (c *conn) alive() error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("mcp server %q: %w", c.name, ErrClosed)
	}
	select {
	case <-c.done:
		return fmt.Errorf("mcp server %q: %w%s", c.name, ErrServerGone, c.stderrNote())
	default:
		return nil
	}
}

// callError wraps a failed request: ErrServerGone when the process is gone, else ErrCall.
func (c *conn) callError(what string, err error) error {
	select {
	case <-c.done:
		return fmt.Errorf("mcp server %q: %s: %w (%s)%s", c.name, what, ErrServerGone, c.redact(err.Error()), c.stderrNote())
	case <-time.After(50 * time.Millisecond):
		// A crash mid-call can fail the request a moment before the session notices
		// the closed pipe; the short wait tells the two apart.
	}
	if errors.Is(err, sdk.ErrConnectionClosed) {
		return fmt.Errorf("mcp server %q: %s: %w (%s)%s", c.name, what, ErrServerGone, c.redact(err.Error()), c.stderrNote())
	}
	return fmt.Errorf("mcp server %q: %s: %w: %s", c.name, what, ErrCall, c.redact(err.Error()))
}

// close ends the client session (closing the server's stdin, then SIGTERM and SIGKILL
// after stopGrace each, as the MCP spec asks) and kills whatever is left of the
// server's process group. Safe to call more than once.
func (c *conn) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.cs.Close()
	c.killGroup()
	c.wg.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) || errors.Is(err, os.ErrProcessDone) {
		err = nil // a server that exits non-zero on EOF, or was killed, is still stopped
	}
	if err != nil {
		return fmt.Errorf("mcp server %q: stop: %s", c.name, c.redact(err.Error()))
	}
	return nil
}

// killGroup sends SIGKILL to the server's process group (the server and every child
// that did not leave the group).
func (c *conn) killGroup() {
	if c.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
}

// pid is the server process's id (its process group id too).
func (c *conn) pid() int {
	if c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// stderrNote is "; stderr: <last lines>" with secrets redacted, or "" when the server
// wrote nothing.
func (c *conn) stderrNote() string {
	s := strings.TrimSpace(c.stderr.String())
	if s == "" {
		return ""
	}
	return "; stderr: " + c.redact(s)
}

// secretName reports whether an environment variable's name marks its value as a
// secret (API_KEY, GITHUB_TOKEN, DB_PASSWORD, CLIENT_SECRET, AUTH_HEADER...).
func secretName(k string) bool {
	k = strings.ToUpper(k)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASS", "AUTH", "CREDENTIAL", "COOKIE", "SESSION"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// redact replaces in s the values of the server's configured variables whose names
// mark them as secrets.
func (c *conn) redact(s string) string {
	for _, v := range c.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	b   []byte // guarded by mu
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
