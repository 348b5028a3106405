package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/flockrun/flock/internal/sparse"
)

// Forker is implemented by backends whose sessions can be forked: Fork
// gives dst, a new session of the same resource type whose workspace
// exists and whose Initialize has run, a copy of src's state. src is
// locked for the copy, so no call on it runs meanwhile. A backend without
// Forker cannot fork: ForkSession answers a fresh session and says so.
// Stateless tools need none.
type Forker interface {
	Fork(ctx context.Context, src, dst *Session) error
}

// CopyWorkspace copies the tree of src's workspace into dst's (which
// exists): directories, regular files (mode kept) and symbolic links (as
// links). Other files (FIFOs, sockets, devices) are skipped. It is the
// Fork of backends whose session state is their workspace (bash, code).
// Sparse files stay sparse (package internal/sparse): only their data is
// copied (a reflink where the file system shares blocks), so a terabyte of
// holes costs nothing. The
// data copied may total at most dst.MaxWorkspaceBytes; past it the copy
// stops with ErrWorkspaceTooLarge.
func CopyWorkspace(ctx context.Context, src, dst *Session) error {
	budget := dst.MaxWorkspaceBytes
	if budget <= 0 {
		budget = math.MaxInt64
	}
	var used int64
	return filepath.WalkDir(src.Workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src.Workspace, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst.Workspace, rel)
		switch {
		case rel == ".":
			return nil
		case d.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			n, err := sparse.CopyFile(ctx, p, to, budget-used)
			used += n
			if errors.Is(err, sparse.ErrOverBudget) {
				return fmt.Errorf("%w: its files hold more than %d bytes of data (server.max_workspace_bytes)", ErrWorkspaceTooLarge, budget)
			}
			return err
		}
		return nil
	})
}

// WorkspaceUsage is the disk the files and directories beneath dir take
// (allocated blocks: the holes of sparse files count for nothing).
func WorkspaceUsage(ctx context.Context, dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += sparse.DiskUsage(info)
		return nil
	})
	return total, err
}

// ForkSession creates c's session of rt as a fork of the session of
// (c's caller, from, rt): a backend implementing Forker copies the
// source's state into it (bash and code copy the workspace), so the new
// session starts where the source is and later calls on either do not
// reach the other. Data says "forked": true then. When the source does
// not exist or the backend cannot fork, the session is created fresh and
// data says "forked": false with "fork_note" saying why. A session of c
// that exists already is answered "exists" as CreateSession does.
func (s *Service) ForkSession(ctx context.Context, c Caller, from, rt string) Envelope {
	start, trace := time.Now(), c.trace()
	meta := func(id string) Meta { return sessionMeta("session:fork", trace, start, id) }
	s.mu.Lock()
	be, enabled := s.backends[rt]
	src := s.sessions[sessionKey{caller: c.Caller, worker: from, rt: rt}]
	existing := s.sessions[c.key(rt)]
	s.mu.Unlock()
	note := ""
	var forker Forker
	switch {
	case existing != nil:
		return asFork(s.CreateSession(ctx, c, rt, nil, ""))
	case !enabled:
		note = "no enabled backend for resource type " + rt
	case src == nil:
		note = fmt.Sprintf("worker %s has no %s session to fork", from, rt)
	default:
		var ok bool
		if forker, ok = be.b.(Forker); !ok {
			note = "the " + rt + " backend cannot fork sessions"
		}
	}
	if forker != nil {
		if refused := s.forkTooLarge(ctx, src, from, meta); refused != nil {
			return *refused
		}
	}
	env := asFork(s.CreateSession(ctx, c, rt, nil, ""))
	if env.Code != 0 || forker == nil {
		if m, ok := env.Data.(map[string]any); ok && env.Code == 0 {
			m["forked"], m["fork_note"] = false, note
		}
		return env
	}
	dst := s.lockSession(c.key(rt))
	if dst == nil {
		return fail(CodeResourceNotInitialized, "Session fork failed: the new session is gone", nil, meta(""))
	}
	defer s.unlockSession(dst)
	if src = s.lockSession(sessionKey{caller: c.Caller, worker: from, rt: rt}); src == nil {
		m, _ := env.Data.(map[string]any)
		if m != nil {
			m["forked"], m["fork_note"] = false, fmt.Sprintf("worker %s has no %s session to fork", from, rt)
		}
		return env
	}
	err := forker.Fork(ctx, &src.s, &dst.s)
	s.unlockSession(src)
	if errors.Is(err, ErrWorkspaceTooLarge) {
		s.dropFork(ctx, c.key(rt), dst)
		return fail(CodeBusinessFailure, "Session fork refused: the workspace of worker "+from+": "+err.Error(),
			map[string]any{"resource_type": rt, "from_worker": from, "max_workspace_bytes": s.cfg.Server.MaxWorkspaceBytes}, meta(""))
	}
	if err != nil {
		s.dropFork(ctx, c.key(rt), dst)
		return fail(CodeResourceNotInitialized, "Session fork failed: "+err.Error(),
			map[string]any{"resource_type": rt, "from_worker": from, "error": err.Error()}, meta(""))
	}
	return ok(map[string]any{"session_id": dst.s.ID, "session_name": dst.s.Name, "resource_type": rt,
		"session_status": statusActive, "forked": true, "from_session_id": src.s.ID}, meta(dst.s.ID))
}

// asFork makes an answer of CreateSession the fork route's: its meta
// names session:fork, as every answer of that route does.
func asFork(env Envelope) Envelope {
	env.Meta.Tool = "session:fork"
	return env
}

// dropFork removes dst, a new session whose fork failed, from the table and
// tears it down. The caller holds dst.mu.
func (s *Service) dropFork(ctx context.Context, key sessionKey, dst *entry) {
	s.mu.Lock()
	if s.sessions[key] == dst {
		delete(s.sessions, key)
	}
	s.mu.Unlock()
	dst.gone = true
	s.tearDown(context.WithoutCancel(ctx), dst)
}

// forkTooLarge answers the refusal of a fork whose source workspace takes
// more disk than server.max_workspace_bytes, before anything is created;
// nil when it fits (the copy itself keeps to the limit too, should the
// workspace grow meanwhile).
func (s *Service) forkTooLarge(ctx context.Context, src *entry, from string, meta func(string) Meta) *Envelope {
	limit := s.cfg.Server.MaxWorkspaceBytes
	if limit <= 0 || src.s.Workspace == "" {
		return nil
	}
	used, err := WorkspaceUsage(ctx, src.s.Workspace)
	if err != nil || used <= limit {
		return nil // a walk error shows again, clearer, in the copy
	}
	env := fail(CodeBusinessFailure,
		fmt.Sprintf("Session fork refused: the workspace of worker %s takes %d bytes of disk, more than server.max_workspace_bytes (%d)", from, used, limit),
		map[string]any{"resource_type": src.key.rt, "from_worker": from, "workspace_bytes": used, "max_workspace_bytes": limit}, meta(""))
	return &env
}
