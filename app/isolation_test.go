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
// show that "isolation" and its deprecated name "sandbox" both put bash
// under bwrap (the data directory, holding the journal, is invisible), that
// "sandbox" is reported on the run's first event with the name to use, and
// that a document setting both is refused naming both.
func TestIsolationSettings(t *testing.T) {
	if err := isolation.Available(); err != nil {
		t.Skipf("bwrap unavailable: %v", err)
	}
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), configs.Server{DataDir: data, Mode: "simulated"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	// The command fails when it can see the journal, so a run that is not
	// isolated fails: the test can fail.
	probe := fmt.Sprintf(`{"commands":["test ! -e %s"]`, filepath.Join(data, "flock.db"))
	deprecated := `settings key "sandbox" is deprecated: use "isolation" (same value)`
	tests := []struct {
		name     string
		settings string
		status   state.Status
		warnings []string
	}{
		{name: "isolation", settings: probe + `,"isolation":{"kind":"bwrap"}}`, status: state.StatusSucceeded},
		{name: "deprecated sandbox", settings: probe + `,"sandbox":{"kind":"bwrap"}}`, status: state.StatusSucceeded,
			warnings: []string{deprecated}},
		{name: "none", settings: probe + `}`, status: state.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
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

	_, err = a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script",
		Settings: json.RawMessage(probe + `,"isolation":{"kind":"bwrap"},"sandbox":{"kind":"none"}}`)})
	if !errors.Is(err, workflows.ErrBadRequest) || !strings.Contains(err.Error(), `"isolation"`) || !strings.Contains(err.Error(), `"sandbox"`) {
		t.Fatalf("both keys: err = %v, want a bad request naming isolation and sandbox", err)
	}
}
