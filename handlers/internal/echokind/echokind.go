// Package echokind adds the operation kind "echo" to flock, to show (and
// test) that a new kind is one package plus one import: it declares the
// kind's payloads, effects and workflow-file fields with
// operations.Declare, the one call that declares the built-in kinds too,
// and registers its handler, with a lifecycle, with package handlers. No
// other package names it. It is used by tests only.
package echokind

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// Kind is the wire name of the operation.
const Kind operations.Kind = "echo"

// Echo is the kind, declared as the built-in kinds are (operations.Bash,
// operations.Generate, ...): its payloads travel typed in
// operations.Request.Params and operations.Result.Data.
var Echo = operations.Declare[Request, Result](Kind, view)

// Request echoes Text Times times (default once).
type Request struct {
	Text  string `json:"text"`
	Times int    `json:"times,omitempty"`
}

// Result is what was echoed.
type Result struct {
	Echo  string `json:"echo"`
	Count int    `json:"count"`
	// Tokens are charged to the run, one per echoed word.
	Tokens int `json:"tokens"`
}

// EntryType is the type of the entry each echo records.
const EntryType = "echo.said"

// ErrRefused is returned by ValidateRun for settings {"echo": "refuse"}.
var ErrRefused = errors.New("echo: refused by settings")

// Effects counts an echo as an action, charges its tokens and records
// what it said.
func (r *Result) Effects(in operations.EffectInput) operations.Effects {
	if in.Error != "" {
		return operations.Effects{}
	}
	return operations.Effects{Usage: operations.RunUsage{Actions: 1, Tokens: r.Tokens},
		Entries: []operations.Record{{Type: EntryType, Data: r}}}
}

// view is how workflow files see an echo result: results[i].echo and
// results[i].count; ok needs at least one echo.
func view(_ operations.Result, res *Result) (map[string]any, bool) {
	v := map[string]any{"echo": "", "count": 0}
	if res == nil {
		return v, false
	}
	v["echo"], v["count"] = res.Echo, res.Count
	return v, res.Count > 0
}

// Handler runs echo operations.
type Handler struct {
	mode string // the server's mode, from Provision
}

// Lifecycle counts the Provision and Cleanup calls of every echo handler.
var Lifecycle struct{ Provisioned, Cleaned atomic.Int32 }

// Provision takes the server's mode.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.mode = deps.Server.Mode
	Lifecycle.Provisioned.Add(1)
	return nil
}

// ValidateRun refuses a run whose settings say {"echo": "refuse"}.
func (h *Handler) ValidateRun(_ context.Context, run handlers.RunCheck) error {
	var s struct {
		Echo string `json:"echo"`
	}
	if json.Unmarshal(run.Raw, &s) == nil && s.Echo == "refuse" {
		return ErrRefused
	}
	return nil
}

// Close counts itself.
func (h *Handler) Close() error {
	Lifecycle.Cleaned.Add(1)
	return nil
}

// Handle echoes.
func (h *Handler) Handle(_ context.Context, _ handlers.Env, req operations.Request) operations.Result {
	p := Echo.Params(req)
	if p == nil || p.Text == "" {
		return operations.Failed(req, "echo: text is required")
	}
	n := max(p.Times, 1)
	said := strings.TrimSpace(strings.Repeat(p.Text+" ", n))
	return operations.Result{Kind: Kind, Meta: req.Meta,
		Data: &Result{Echo: h.mode + ": " + said, Count: n, Tokens: len(strings.Fields(said))}}
}

func init() {
	handlers.Register(handlers.Info{ID: "test.echo", Kinds: []operations.Kind{Kind},
		New: func() handlers.Handler { return &Handler{} }})
}

var (
	_ handlers.Handler      = (*Handler)(nil)
	_ handlers.Provisioner  = (*Handler)(nil)
	_ handlers.RunValidator = (*Handler)(nil)
	_ handlers.Closer       = (*Handler)(nil)
	_ operations.Effector   = (*Result)(nil)
)
