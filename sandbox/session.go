package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// sessionKey identifies a session: the authenticated caller ("" without
// auth), the worker id it sent and the resource type.
type sessionKey struct {
	caller, worker, rt string
}

const (
	statusInitializing = "initializing"
	statusActive       = "active"
)

// entry is a session in the table.
//
// Lock order: Service.mu may be taken while holding entry.mu, never the
// reverse (entry.mu is only locked without Service.mu, except on a fresh
// entry nobody else can see yet).
type entry struct {
	// mu is held through Initialize, each call and Cleanup, so calls on one
	// session are serialised and never overlap its set-up or teardown.
	mu   sync.Mutex
	s    Session
	key  sessionKey
	gone bool // guarded by mu: removed from the table and torn down (or failed)

	compat    bool // no enabled backend of this resource type
	auto      bool // a temporary session of one call
	custom    string
	createdAt time.Time

	status       string    // guarded by Service.mu
	lastActivity time.Time // guarded by Service.mu
	expiresAt    time.Time // guarded by Service.mu
	// busy counts the holders and waiters of mu that found the entry in
	// the table (lockSession); guarded by Service.mu. The sweeper passes
	// over a busy session, so it never waits for a call: a call that does
	// not return holds only its own session.
	busy int
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// sanitize is AgentFlow's name sanitizer: every character outside
// [A-Za-z0-9_-] becomes "-", and "-" and "_" are trimmed from the ends.
func sanitize(s string, max int) string {
	out := strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-_")
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// timestamp is AgentFlow's time format: naive ISO-8601 UTC, microseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// newEntryLocked names a new session of key: {rt}_{worker}_{counter:03d}
// [_{custom}], id = name + "_" + 8 hex. Requires s.mu.
func (s *Service) newEntryLocked(key sessionKey, custom string, now time.Time) *entry {
	s.counters[key]++
	name := fmt.Sprintf("%s_%s_%03d", sanitize(key.rt, 32), sanitize(key.worker, 32), s.counters[key])
	if c := sanitize(custom, 32); c != "" {
		name += "_" + c
	}
	var b [4]byte
	rand.Read(b[:])
	id := name + "_" + hex.EncodeToString(b[:])
	_, enabled := s.backends[key.rt]
	return &entry{
		s:   Session{ID: id, Name: name, WorkerID: key.worker, ResourceType: key.rt},
		key: key, compat: !enabled, custom: custom, createdAt: now,
		status: statusInitializing, lastActivity: now, expiresAt: now.Add(s.cfg.Server.SessionTTL),
	}
}

// setUp creates e's workspace and runs the backend's Initialize with the
// backend's section merged with cfg (shallow, cfg wins). The caller holds
// e.mu. On error nothing is left behind.
func (s *Service) setUp(ctx context.Context, e *entry, cfg map[string]any) error {
	ws := filepath.Join(s.dataDir, "workspaces", e.s.ID)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	e.s.Workspace, e.s.MaxWorkspaceBytes = ws, s.cfg.Server.MaxWorkspaceBytes
	be, ok := s.backends[e.key.rt]
	if !ok {
		return nil
	}
	in, ok := be.b.(Initializer)
	if !ok {
		return nil
	}
	merged := cloneMap(be.cfg)
	for k, v := range cfg {
		merged[k] = v
	}
	state, err := in.Initialize(ctx, &e.s, merged)
	if err != nil {
		os.RemoveAll(ws)
		return err
	}
	e.s.State = state
	return nil
}

// tearDown runs the backend's Cleanup and removes the workspace. The caller
// holds e.mu.
func (s *Service) tearDown(ctx context.Context, e *entry) {
	if be, ok := s.backends[e.key.rt]; ok {
		if c, ok := be.b.(Cleaner); ok {
			if err := c.Cleanup(ctx, &e.s); err != nil {
				s.log.Warn("sandbox: session cleanup", "session", e.s.ID, "err", err)
			}
		}
	}
	if e.s.Workspace != "" {
		if err := os.RemoveAll(e.s.Workspace); err != nil {
			s.log.Warn("sandbox: remove workspace", "session", e.s.ID, "err", err)
		}
	}
}

// destroyEntry tears down e, already removed from the table, once its
// running call (if any) is done.
func (s *Service) destroyEntry(ctx context.Context, e *entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gone {
		return
	}
	e.gone = true
	s.tearDown(ctx, e)
}

// lockSession returns the active session of key locked and marked busy, or
// nil when there is none. It waits for a session being initialised.
// Release it with unlockSession.
func (s *Service) lockSession(key sessionKey) *entry {
	for {
		s.mu.Lock()
		e := s.sessions[key]
		if e != nil {
			e.busy++
		}
		s.mu.Unlock()
		if e == nil {
			return nil
		}
		e.mu.Lock()
		if !e.gone {
			return e
		}
		s.unlockSession(e)
	}
}

// unlockSession releases an entry lockSession returned.
func (s *Service) unlockSession(e *entry) {
	s.mu.Lock()
	e.busy--
	s.mu.Unlock()
	e.mu.Unlock()
}

// touch refreshes e's activity and TTL.
func (s *Service) touch(e *entry) time.Time {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e.lastActivity = now
	e.expiresAt = now.Add(s.cfg.Server.SessionTTL)
	return e.expiresAt
}

func sessionMeta(tool, traceID string, start time.Time, sessionID string) Meta {
	m := Meta{Tool: tool, ResourceType: "session", TraceID: traceID, ExecutionTimeMS: msSince(start)}
	if sessionID != "" {
		m.SessionID = &sessionID
	}
	return m
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func ok(data any, meta Meta) Envelope {
	return Envelope{Code: 0, Message: "success", Data: data, Meta: meta}
}

func fail(code int, msg string, data any, meta Meta) Envelope {
	return Envelope{Code: code, Message: msg, Data: data, Meta: meta}
}

// Caller identifies who a request comes from: Caller is the authenticated
// identity ("" without auth), Worker the body's worker_id, TraceID the
// request's trace_id ("" for a fresh one).
type Caller struct {
	Caller, Worker, TraceID string
}

func (c Caller) key(rt string) sessionKey {
	return sessionKey{caller: c.Caller, worker: c.Worker, rt: rt}
}

func (c Caller) trace() string {
	if c.TraceID != "" {
		return c.TraceID
	}
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// CreateSession creates the session of (caller, worker, rt), initialising
// its backend with cfg over the backend's section. If one exists it answers
// data.status "exists" and refreshes its TTL. A failed Initialize answers
// 4007 and leaves nothing behind. A resource type with no enabled backend
// gets a session in compatibility mode, as AgentFlow does.
func (s *Service) CreateSession(ctx context.Context, c Caller, rt string, cfg map[string]any, custom string) Envelope {
	start, trace := time.Now(), c.trace()
	meta := func(id string) Meta { return sessionMeta("session:create", trace, start, id) }
	key := c.key(rt)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fail(CodeUnexpectedError, ErrClosed.Error(), nil, meta(""))
	}
	if e := s.sessions[key]; e != nil {
		e.lastActivity = time.Now()
		e.expiresAt = e.lastActivity.Add(s.cfg.Server.SessionTTL)
		s.mu.Unlock()
		return ok(map[string]any{"status": "exists", "session_id": e.s.ID, "session_name": e.s.Name, "resource_type": rt}, meta(e.s.ID))
	}
	e := s.newEntryLocked(key, custom, start)
	e.mu.Lock() // fresh: never blocks
	s.sessions[key] = e
	s.mu.Unlock()

	err := s.setUp(ctx, e, cfg)
	s.mu.Lock()
	if err != nil {
		delete(s.sessions, key)
	} else {
		e.status = statusActive
		e.lastActivity = time.Now()
		e.expiresAt = e.lastActivity.Add(s.cfg.Server.SessionTTL)
	}
	s.mu.Unlock()
	if err != nil {
		e.gone = true
		e.mu.Unlock()
		return fail(CodeResourceNotInitialized, "Session creation failed: "+err.Error(),
			map[string]any{"session_id": e.s.ID, "session_name": e.s.Name, "resource_type": rt, "session_status": "error", "error": err.Error()}, meta(e.s.ID))
	}
	e.mu.Unlock()
	data := map[string]any{"session_id": e.s.ID, "session_name": e.s.Name, "resource_type": rt, "session_status": statusActive, "error": nil}
	if e.compat {
		data["compatibility_mode"] = true
		data["compatibility_message"] = "no enabled backend for resource type " + rt + "; the session holds no state"
	}
	return ok(data, meta(e.s.ID))
}

// DestroySession destroys the session of (caller, worker, rt) after its
// running call: 4007 when there is none.
func (s *Service) DestroySession(ctx context.Context, c Caller, rt string) Envelope {
	start, trace := time.Now(), c.trace()
	s.mu.Lock()
	e := s.sessions[c.key(rt)]
	if e != nil {
		delete(s.sessions, c.key(rt))
	}
	s.mu.Unlock()
	if e == nil {
		return fail(CodeResourceNotInitialized, "No session found for "+rt, nil, sessionMeta("session:destroy", trace, start, ""))
	}
	s.destroyEntry(ctx, e)
	return ok(map[string]any{"message": "Session destroyed", "session_id": e.s.ID, "session_name": e.s.Name, "resource_type": rt},
		sessionMeta("session:destroy", trace, start, e.s.ID))
}

// workerEntries returns the sessions of c's worker sorted by resource type.
// Requires s.mu.
func (s *Service) workerEntriesLocked(c Caller) []*entry {
	var out []*entry
	for k, e := range s.sessions {
		if k.caller == c.Caller && k.worker == c.Worker {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *entry) int {
		if a.key.rt < b.key.rt {
			return -1
		}
		if a.key.rt > b.key.rt {
			return 1
		}
		return 0
	})
	return out
}

// ListSessions lists the sessions of c's worker.
func (s *Service) ListSessions(c Caller) Envelope {
	start, trace := time.Now(), c.trace()
	s.mu.Lock()
	list := []map[string]any{}
	for _, e := range s.workerEntriesLocked(c) {
		list = append(list, map[string]any{
			"resource_type": e.key.rt, "session_id": e.s.ID, "session_name": e.s.Name, "status": e.status,
			"auto_created": e.auto, "created_at": timestamp(e.createdAt), "last_activity": timestamp(e.lastActivity), "expires_at": timestamp(e.expiresAt),
		})
	}
	s.mu.Unlock()
	return ok(map[string]any{"worker_id": c.Worker, "sessions": list, "count": len(list)}, sessionMeta("session:list", trace, start, ""))
}

// RefreshSession extends the TTL of the session of rt, or of every session
// of the worker when rt is "": 4007 when there is none.
func (s *Service) RefreshSession(c Caller, rt string) Envelope {
	start, trace := time.Now(), c.trace()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if rt != "" {
		e := s.sessions[c.key(rt)]
		if e == nil {
			return fail(CodeResourceNotInitialized, "No session found for "+rt, nil, sessionMeta("session:refresh", trace, start, ""))
		}
		e.lastActivity, e.expiresAt = now, now.Add(s.cfg.Server.SessionTTL)
		return ok(map[string]any{"message": "Session refreshed", "resource_type": rt, "session_id": e.s.ID, "expires_at": timestamp(e.expiresAt)},
			sessionMeta("session:refresh", trace, start, e.s.ID))
	}
	entries := s.workerEntriesLocked(c)
	if len(entries) == 0 {
		return fail(CodeResourceNotInitialized, "No sessions found for worker "+c.Worker, nil, sessionMeta("session:refresh", trace, start, ""))
	}
	details := map[string]any{}
	for _, e := range entries {
		e.lastActivity, e.expiresAt = now, now.Add(s.cfg.Server.SessionTTL)
		details[e.key.rt] = map[string]any{"status": "refreshed", "expires_at": timestamp(e.expiresAt)}
	}
	return ok(map[string]any{"message": "Sessions refreshed", "worker_id": c.Worker, "refreshed_count": len(entries), "details": details},
		sessionMeta("session:refresh", trace, start, ""))
}

// Heartbeat extends the TTL of every session of c's worker (AgentFlow's
// does not) and lists their resource types.
func (s *Service) Heartbeat(c Caller) Envelope {
	start, trace := time.Now(), c.trace()
	now := time.Now()
	s.mu.Lock()
	active := []string{}
	for _, e := range s.workerEntriesLocked(c) {
		e.lastActivity, e.expiresAt = now, now.Add(s.cfg.Server.SessionTTL)
		active = append(active, e.key.rt)
	}
	s.mu.Unlock()
	return ok(map[string]any{"worker_id": c.Worker, "active_sessions": active, "timestamp": timestamp(now)}, sessionMeta("session:heartbeat", trace, start, ""))
}

// Status reports the sessions of c's worker and the number of tools.
func (s *Service) Status(c Caller) Envelope {
	start, trace := time.Now(), c.trace()
	s.mu.Lock()
	active := []string{}
	sessions := map[string]any{}
	for _, e := range s.workerEntriesLocked(c) {
		active = append(active, e.key.rt)
		sessions[e.key.rt] = map[string]any{"session_id": e.s.ID, "status": e.status, "created_at": timestamp(e.createdAt), "last_activity": timestamp(e.lastActivity)}
	}
	s.mu.Unlock()
	return ok(map[string]any{"worker_id": c.Worker, "active_resources": active, "sessions": sessions, "tools_available": len(s.tools)},
		sessionMeta("session:status", trace, start, ""))
}

// Disconnect destroys every session of c's worker.
func (s *Service) Disconnect(ctx context.Context, c Caller) Envelope {
	start, trace := time.Now(), c.trace()
	s.mu.Lock()
	entries := s.workerEntriesLocked(c)
	for _, e := range entries {
		delete(s.sessions, e.key)
	}
	s.mu.Unlock()
	for _, e := range entries {
		s.destroyEntry(ctx, e)
	}
	return ok(map[string]any{"worker_id": c.Worker, "sessions_cleaned": len(entries)}, sessionMeta("worker:disconnect", trace, start, ""))
}

// DisconnectCaller destroys every session of the authenticated caller
// (every worker) and returns how many.
func (s *Service) DisconnectCaller(ctx context.Context, caller string) int {
	s.mu.Lock()
	var entries []*entry
	for k, e := range s.sessions {
		if k.caller == caller {
			entries = append(entries, e)
			delete(s.sessions, k)
		}
	}
	s.mu.Unlock()
	for _, e := range entries {
		s.destroyEntry(ctx, e)
	}
	return len(entries)
}
