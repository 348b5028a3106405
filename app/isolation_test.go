package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestIsolationSettings runs real commands through the server's wiring to
// show that, under the default policy, bash runs under bwrap (the data
// directory, holding the journal, is invisible) with or without
// "isolation" or its deprecated name "sandbox" (reported on the run's first
// event with the name to use), that a run cannot ask for less (kind none
// is refused at start), that the operator's policy none (opt-out) is the
// only way to see the data directory, and that a document setting both
// names is refused naming both.
func TestIsolationSettings(t *testing.T) {
	if err := isolation.Available(); err != nil {
		t.Skipf("bwrap unavailable: %v", err)
	}
	open := func(policy string) (*App, string) {
		data, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		a := openWith(t, configs.Server{DataDir: data, Mode: "simulated", Isolation: policy})
		return a, data
	}
	auto, autoData := open("")
	none, noneData := open("none")
	// The command fails when it can see the journal, so a run that is not
	// isolated fails: the test can fail.
	probe := func(data string) string {
		return fmt.Sprintf(`{"commands":["test ! -e %s"]`, filepath.Join(data, "flock.db"))
	}
	deprecated := `settings key "sandbox" is deprecated: use "isolation" (same value)`
	tests := []struct {
		name     string
		a        *App
		settings string
		status   state.Status
		warnings []string
	}{
		{name: "isolation", a: auto, settings: probe(autoData) + `,"isolation":{"kind":"bwrap"}}`, status: state.StatusSucceeded},
		{name: "deprecated sandbox", a: auto, settings: probe(autoData) + `,"sandbox":{"kind":"bwrap"}}`, status: state.StatusSucceeded,
			warnings: []string{deprecated}},
		{name: "default", a: auto, settings: probe(autoData) + `}`, status: state.StatusSucceeded},
		{name: "operator opted out", a: none, settings: probe(noneData) + `}`, status: state.StatusFailed},
		{name: "bwrap under policy none", a: none, settings: probe(noneData) + `,"isolation":{"kind":"bwrap"}}`, status: state.StatusSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			a := tt.a
			h, warnings, err := a.Executor.StartRunWithWarnings(ctx,
				workflows.StartRequest{Workflow: "script", Settings: json.RawMessage(tt.settings)})
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if fmt.Sprint(warnings) != fmt.Sprint(tt.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tt.warnings)
			}
			evs, err := a.Store.Events(ctx, h.ID, 0, 1)
			if err != nil || len(evs) != 1 {
				t.Fatalf("first event: %v %v", evs, err)
			}
			var data struct {
				Warnings []string `json:"warnings"`
			}
			if len(evs[0].Data) > 0 {
				if err := json.Unmarshal(evs[0].Data, &data); err != nil {
					t.Fatalf("first event data %s: %v", evs[0].Data, err)
				}
			}
			if fmt.Sprint(data.Warnings) != fmt.Sprint(tt.warnings) {
				t.Errorf("first event warnings %q, want %q", data.Warnings, tt.warnings)
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			end, err := a.Executor.Wait(wctx, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			if end.Status != tt.status {
				t.Fatalf("status %s (%s %s), want %s", end.Status, end.EndReason, end.Error, tt.status)
			}
		})
	}

	_, err := auto.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script",
		Settings: json.RawMessage(probe(autoData) + `,"isolation":{"kind":"none"}}`)})
	if !errors.Is(err, isolation.ErrNotAllowed) || !strings.Contains(err.Error(), "isolation") {
		t.Fatalf("kind none under the default policy: err = %v, want ErrNotAllowed", err)
	}
	_, err = auto.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script",
		Settings: json.RawMessage(probe(autoData) + `,"isolation":{"kind":"bwrap"},"sandbox":{"kind":"none"}}`)})
	if !errors.Is(err, workflows.ErrBadRequest) || !strings.Contains(err.Error(), `"isolation"`) || !strings.Contains(err.Error(), `"sandbox"`) {
		t.Fatalf("both keys: err = %v, want a bad request naming isolation and sandbox", err)
	}
}
