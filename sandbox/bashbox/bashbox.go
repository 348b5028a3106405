// Package bashbox is the sandbox backend "bash": the stateful tool bash:run
// {command, timeout?} → {stdout, stderr, return_code, cwd} on flock's
// persistent pty shell (internal/shell), one shell per session, started in
// the session's workspace. cwd, exported variables and files persist between
// calls of a session; a non-zero exit status is still a success (code 0).
// A command past its timeout answers 5006; its shell is killed and the next
// call gets a new one in the last cwd with the files kept (exported
// variables are lost). Destroying the session kills the shell; the core
// removes the workspace.
//
// Config (resources.bash.config): timeout (seconds, default 600),
// output_limit (bytes per stream, default 100000), isolation: unset, the
// service's policy (flock's --isolation, default auto) runs each shell
// under bubblewrap wherever it can run, with only its workspace (and /tmp)
// writable and the service's data directory, other sessions' workspaces
// included, invisible; "bwrap" adds a private /tmp and no network; "none"
// is the operator opting out (see sandbox.Env.Isolation and package
// isolation).
package bashbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/shell"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/sandbox"
)

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "bash", New: func() sandbox.Backend { return new(Backend) }})
}

// Backend is the bash backend.
type Backend struct {
	sh  *shell.Pool
	iso configs.Isolation // resolved in Provision
}

// config is resources.bash.config.
type config struct {
	// Timeout is a command's timeout when the call names none (the
	// shell's default, 600 s, when absent).
	Timeout *sandbox.Seconds `json:"timeout"`
	// OutputLimit caps each stream, in bytes (100000 when absent).
	OutputLimit *sandbox.Count `json:"output_limit" min:"1" max:"1073741824"` // sandbox.MaxOutputLimit
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
	opts := shell.Options{}
	if c.Timeout != nil {
		opts.DefaultTimeout = c.Timeout.Duration()
	}
	if c.OutputLimit != nil {
		opts.OutputLimit = int(c.OutputLimit.Int())
	}
	iso, err := env.Isolation(c.Isolation)
	if err != nil {
		return err
	}
	// The isolation is resolved: each command asks for it as a run's
	// explicit choice, with the service's data directory (other sessions'
	// workspaces) hidden.
	b.iso = iso
	opts.Isolation, opts.Hidden = isolation.PolicyNone, env.Hidden
	b.sh = shell.NewPool(opts)
	return nil
}

var runSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"command":{"type":"string","description":"bash command text; may span lines"},` +
	`"timeout":{"type":"number","description":"seconds before the command is interrupted"}},` +
	`"required":["command"]}`)

// Tools lists bash:run.
func (b *Backend) Tools() []sandbox.Tool {
	return []sandbox.Tool{{
		Name:        "bash:run",
		Description: "Run a bash command in this session's persistent shell (cwd, environment and files carry over). Returns stdout, stderr, return_code and cwd.",
		Parameters:  runSchema,
		Run:         b.run,
	}}
}

func (b *Backend) run(ctx context.Context, c *sandbox.Call) (any, error) {
	cmd, err := c.String("command")
	if err != nil {
		return nil, err
	}
	var timeoutS float64
	if c.Has("timeout") {
		if timeoutS, err = c.Float("timeout"); err != nil {
			return nil, err
		}
		if timeoutS <= 0 {
			return nil, sandbox.Errorf(sandbox.CodeInvalidParameterType, "parameter timeout must be positive")
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		// The shell's own timer fires first, so the shell is interrupted
		// cleanly and the output so far kept.
		if left := time.Until(dl).Seconds(); timeoutS == 0 || left < timeoutS {
			timeoutS = max(left, 0.001)
		}
	}
	s := c.Session
	r, err := b.sh.Run(ctx, shell.Command{Owner: s.ID, Text: cmd, Timeout: shell.Seconds(timeoutS), WorkDir: s.Workspace, Isolation: b.iso})
	if r != nil && r.TimedOut {
		return nil, &sandbox.Error{Code: sandbox.CodeTimeout, Message: fmt.Sprintf("Tool execution timed out after %gs", timeoutS),
			Data: map[string]any{"timeout": timeoutS, "stdout": r.Stdout, "stderr": r.Stderr}}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("bash: %w", err)
	}
	return map[string]any{
		"stdout": r.Stdout, "stderr": r.Stderr, "return_code": r.ExitCode,
		"cwd": b.sh.Cwd(s.ID, ""), "truncated": r.Truncated,
	}, nil
}

// Fork copies src's workspace into dst's: a forked session sees src's
// files; its shell (and interpreter) start fresh in its own workspace,
// so the working directory, variables and globals are not carried over.
func (b *Backend) Fork(ctx context.Context, src, dst *sandbox.Session) error {
	return sandbox.CopyWorkspace(ctx, src, dst)
}

// Cleanup kills the session's shell.
func (b *Backend) Cleanup(_ context.Context, s *sandbox.Session) error {
	b.sh.CloseOwner(s.ID)
	return nil
}

// Shutdown kills every shell.
func (b *Backend) Shutdown(context.Context) error {
	if b.sh == nil {
		return nil
	}
	return b.sh.Close()
}

var (
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.Cleaner     = (*Backend)(nil)
	_ sandbox.Forker      = (*Backend)(nil)
	_ sandbox.Shutdowner  = (*Backend)(nil)
)
