package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/keyring"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
)

// Info registers a handler package: the operation kinds it serves and a
// constructor. A package calls Register from init; a server enables it by
// importing the package (package app imports the built-in ones).
type Info struct {
	// ID names the package, namespaced: "flock.bash".
	ID string
	// Kinds are the operation kinds the handler serves; each must be
	// declared with operations.Declare.
	Kinds []operations.Kind
	// New returns a new, unprovisioned handler. It must be side-effect
	// free: set-up belongs in Provision (see Provisioner).
	New func() Handler
	// provisioned marks an Info made by Fixed: New returns a handler that
	// is already set up, so Provision is not called.
	provisioned bool
}

// Provisioner is implemented by handlers that set themselves up from the
// server's dependencies before the first operation. A failed Provision
// fails the server's start; Cleanup is still called.
type Provisioner interface {
	Provision(ctx context.Context, deps Deps) error
}

// RunValidator is implemented by handlers that check a run's settings at
// start (an API key for each live model, isolation being available). Its
// error refuses the run as a bad request; it must not name secrets. ctx is
// the start request's: a check that reads (the journal, a file) stops
// with it.
type RunValidator interface {
	ValidateRun(ctx context.Context, run RunCheck) error
}

// RunPreparer is implemented by handlers that add to a run's settings at
// start, after every ValidateRun passed (the sandbox handler fills in the
// schemas of the sandbox tools the run offers). What it returns replaces
// the settings document and is journaled with the run, so a resumed run
// sees the same. Its error refuses the run as a bad request.
type RunPreparer interface {
	PrepareRun(ctx context.Context, run RunCheck) (json.RawMessage, error)
}

// RunCheck is what a RunValidator sees of a run about to start.
type RunCheck struct {
	Workflow string
	// Settings are the run's parsed common settings (defaults applied).
	Settings *configs.RunSettings
	// Raw is the run's whole settings document.
	Raw json.RawMessage
	// WorkDir is the work directory the run will have (it may not exist
	// yet): files the checks read resolve as the run's would.
	WorkDir string
}

// Deps are the dependencies a handler may use, handed to Provision. The
// services are ports (see ports.go): package handlers names no store,
// sandbox service or gateway, and the server wires them in.
type Deps struct {
	// Server is the server's configuration (mode, data directory, read
	// and write roots, model limits), defaults applied.
	Server configs.Server
	// Journal reads the journal (a run's head and ops); the executor sets
	// it.
	Journal Journal
	// Log is the server's logger; never nil.
	Log *slog.Logger
	// Runs starts and waits for child runs; the executor sets it.
	Runs Runs
	// Ops runs an operation of any kind the server serves, inside the
	// operation being handled (the gateway_wait handler answers an agent's
	// calls as generates through it); its result is the caller's to
	// journal. The executor sets it to the server's Set.
	Ops Handler
	// Open opens a file a run reads, by the server's access rules
	// (files.Access.Open); nil opens the path as it is.
	Open func(workDir, path string) (*os.File, error)
	// Sandbox is the sandbox service the server hosts (flock serve
	// --sandbox-config; app.WithSandbox), or nil; the sandbox operation
	// runs on it.
	Sandbox Sandbox
	// Services are the server's other services, which a handler finds by
	// the type it asks for (Service): the model gateway whose sessions
	// external agents call (package gateway; without it the external
	// operation is refused).
	Services []any
	// Grants returns the directories the operator granted the run tree
	// whose top-level run is id (the run's spec), or nil; the executor
	// sets it. File access (package files) adds them to its roots.
	Grants func(id string) *record.Grants
	// Keys are the API keys given literally on the command line, by the
	// names the runs' settings use instead of environment variables
	// (package keyring). Nil holds none.
	Keys *keyring.Ring
}

var registry = struct {
	sync.RWMutex
	byID   map[string]Info
	byKind map[operations.Kind]string
}{byID: map[string]Info{}, byKind: map[operations.Kind]string{}}

// Register adds a handler package. It panics on an empty ID, no kinds, a
// nil New, an ID or a kind already registered, and a kind unknown to
// package operations. Call it from init.
func Register(info Info) {
	if info.ID == "" {
		panic("handlers: Register with an empty ID")
	}
	if len(info.Kinds) == 0 || info.New == nil {
		panic(fmt.Sprintf("handlers: %s: Register needs kinds and New", info.ID))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.byID[info.ID]; dup {
		panic(fmt.Sprintf("handlers: %s registered twice", info.ID))
	}
	for _, k := range info.Kinds {
		if !k.Valid() {
			panic(fmt.Sprintf("handlers: %s: kind %q is not declared with operations.Declare", info.ID, k))
		}
		if other, dup := registry.byKind[k]; dup {
			panic(fmt.Sprintf("handlers: %s: kind %q is served by %s already", info.ID, k, other))
		}
	}
	info.Kinds = append([]operations.Kind(nil), info.Kinds...)
	registry.byID[info.ID] = info
	for _, k := range info.Kinds {
		registry.byKind[k] = info.ID
	}
}

// Registered lists the registered handler packages sorted by ID.
func Registered() []Info {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Info, 0, len(registry.byID))
	for _, info := range registry.byID {
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Lookup returns the registered handler package serving kind.
func Lookup(kind operations.Kind) (Info, bool) {
	registry.RLock()
	defer registry.RUnlock()
	info, ok := registry.byID[registry.byKind[kind]]
	return info, ok
}

// Fixed returns an Info serving kinds with h, already set up (its
// Provision, if any, is not called; ValidateRun, CloseRun and Cleanup
// are). It is for tests and embedders that build a handler themselves;
// it is not registered.
func Fixed(h Handler, kinds ...operations.Kind) Info {
	return Info{ID: fmt.Sprintf("fixed.%v", kinds), Kinds: kinds, New: func() Handler { return h }, provisioned: true}
}

// Set is the handlers of one server, one per kind, built from Infos. It
// is safe for concurrent use once provisioned.
type Set struct {
	infos  []Info
	hs     []Handler // hs[i] was made by infos[i].New
	byKind map[operations.Kind]Handler
}

// NewSet builds the handlers of infos (calling each New) without setting
// them up. A kind served twice is an error.
func NewSet(infos ...Info) (*Set, error) {
	s := &Set{byKind: map[operations.Kind]Handler{}}
	for _, info := range infos {
		h := info.New()
		for _, k := range info.Kinds {
			if _, dup := s.byKind[k]; dup {
				return nil, fmt.Errorf("handlers: kind %q served twice (%s)", k, info.ID)
			}
			s.byKind[k] = h
		}
		s.infos, s.hs = append(s.infos, info), append(s.hs, h)
	}
	return s, nil
}

// Provision sets up every handler in order. On failure it cleans up
// every handler (set up or not) and returns the error naming the package.
func (s *Set) Provision(ctx context.Context, deps Deps) error {
	if deps.Log == nil {
		deps.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	for i, h := range s.hs {
		p, ok := h.(Provisioner)
		if !ok || s.infos[i].provisioned {
			continue
		}
		if err := p.Provision(ctx, deps); err != nil {
			return errors.Join(fmt.Errorf("provision %s: %w", s.infos[i].ID, err), s.Cleanup())
		}
	}
	return nil
}

// Handler returns the handler of kind, or nil.
func (s *Set) Handler(kind operations.Kind) Handler { return s.byKind[kind] }

// Handle runs req with the handler of its kind: an error result for a
// kind the set does not serve, or for a handler that panicked. Operations
// a person answers (Asker) are refused: they cannot run inside another.
func (s *Set) Handle(ctx context.Context, env Env, req operations.Request) (res operations.Result) {
	h := s.byKind[req.Kind]
	if h == nil {
		return operations.Failed(req, "no handler for operation kind %q on this server", req.Kind)
	}
	if _, ok := h.(Asker); ok {
		return operations.Failed(req, "%s is answered by a person; it cannot run inside another operation", req.Kind)
	}
	defer func() {
		if p := recover(); p != nil {
			res = operations.Failed(req, "%s handler panicked: %v", req.Kind, p)
		}
	}()
	res = h.Handle(ctx, env, req)
	if res.Kind == "" {
		res.Kind = req.Kind
	}
	if res.Meta == nil {
		res.Meta = req.Meta
	}
	return res
}

// Kinds lists the kinds the set serves, sorted.
func (s *Set) Kinds() []operations.Kind {
	out := make([]operations.Kind, 0, len(s.byKind))
	for k := range s.byKind {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ValidateRun asks every RunValidator about run and joins their errors.
func (s *Set) ValidateRun(ctx context.Context, run RunCheck) error {
	var errs []error
	for _, h := range s.hs {
		if v, ok := h.(RunValidator); ok {
			errs = append(errs, v.ValidateRun(ctx, run))
		}
	}
	return errors.Join(errs...)
}

// PrepareRun passes the run's settings through every RunPreparer in
// order and returns the document to journal.
func (s *Set) PrepareRun(ctx context.Context, run RunCheck) (json.RawMessage, error) {
	for _, h := range s.hs {
		p, ok := h.(RunPreparer)
		if !ok {
			continue
		}
		doc, err := p.PrepareRun(ctx, run)
		if err != nil {
			return nil, err
		}
		run.Raw = doc
	}
	return run.Raw, nil
}

// CloseRun tells every RunCloser that the run is gone.
func (s *Set) CloseRun(ctx context.Context, runID string) {
	for _, h := range s.hs {
		if c, ok := h.(RunCloser); ok {
			c.CloseRun(ctx, runID)
		}
	}
}

// Cleanup releases every handler's process-wide resources (Closer) and
// returns the first error. It tolerates handlers never provisioned.
func (s *Set) Cleanup() error {
	var first error
	for _, h := range s.hs {
		if c, ok := h.(Closer); ok {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Hidden lists the paths an isolated command must not see, made
// absolute: the server's data directory (the journal, other runs) and
// Server.Hidden. Nil when there are none.
func (d Deps) Hidden() []string {
	var out []string
	for _, p := range append([]string{d.Server.DataDir}, d.Server.Hidden...) {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		out = append(out, p)
	}
	return out
}

// Isolation is the operator's isolation policy for the programs handlers
// start (server setting isolation).
func (d Deps) Isolation() (isolation.Policy, error) {
	p, err := isolation.ParsePolicy(d.Server.Isolation)
	if err != nil {
		return "", fmt.Errorf("server setting isolation: %w", err)
	}
	return p, nil
}

// FromMap returns one Fixed Info per kind of m, sorted by kind: handlers
// built by the caller (tests, embedders), used as they are.
func FromMap(m map[operations.Kind]Handler) []Info {
	out := make([]Info, 0, len(m))
	for k, h := range m {
		out = append(out, Fixed(h, k))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kinds[0] < out[j].Kinds[0] })
	return out
}
