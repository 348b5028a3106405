package sandbox

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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

// CopyWorkspace copies the tree of directory src into directory dst
// (which exists): directories, regular files (mode kept) and symbolic
// links (as links). Other files (sockets, devices) are skipped. It is the
// Fork of backends whose session state is their workspace (bash, code).
func CopyWorkspace(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
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
			return copyFile(p, to)
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
		return s.CreateSession(ctx, c, rt, nil, "")
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
	env := s.CreateSession(ctx, c, rt, nil, "")
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
	if err != nil {
		s.mu.Lock()
		if s.sessions[c.key(rt)] == dst {
			delete(s.sessions, c.key(rt))
		}
		s.mu.Unlock()
		dst.gone = true
		s.tearDown(context.WithoutCancel(ctx), dst)
		return fail(CodeResourceNotInitialized, "Session fork failed: "+err.Error(),
			map[string]any{"resource_type": rt, "from_worker": from, "error": err.Error()}, meta(""))
	}
	return ok(map[string]any{"session_id": dst.s.ID, "session_name": dst.s.Name, "resource_type": rt,
		"session_status": statusActive, "forked": true, "from_session_id": src.s.ID}, meta(dst.s.ID))
}
