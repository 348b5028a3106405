package generate

import (
	"context"
	"encoding/json"
	"os"
	"sort"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

func init() {
	handlers.Register(handlers.Info{ID: "flock.generate", Kinds: []operations.Kind{operations.KindGenerate},
		New: func() handlers.Handler { return New(Options{}) }})
}

// Provision sets h up for the server: its mode (live, simulated,
// scripted), model limits and logger, the journal (scripted cursors) and
// the server's file access (scripts). It does no I/O.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.init(Options{Mode: deps.Server.Mode, Logger: deps.Log, Journal: deps.Journal,
		ModelLimits: deps.Server.Models, Open: deps.Open, Getenv: deps.Keys.Getenv(os.Getenv)})
	return nil
}

// ValidateRun checks that every model the run's settings name resolves
// and, in live mode, has its API key (see CheckSettings).
func (h *Handler) ValidateRun(ctx context.Context, run handlers.RunCheck) error {
	if err := h.checkReplaySource(ctx, run.Settings.ReplayFrom); err != nil {
		return err
	}
	return h.checkSettings(run.Settings, ModelsOf(run.Raw), run.WorkDir)
}

// ModelsOf lists the model names a settings document refers to: every
// "model" string value anywhere in it (Flock's advisors/actors/raters
// entries, generator, judge ...), sorted and deduplicated.
func ModelsOf(raw json.RawMessage) []string {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if s, ok := x.(string); ok && k == "model" && s != "" {
					seen[s] = true
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(doc)
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

var (
	_ handlers.Provisioner  = (*Handler)(nil)
	_ handlers.RunValidator = (*Handler)(nil)
	_ handlers.Closer       = (*Handler)(nil)
)
