package app

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// open opens an App in mode on a fresh data directory (see openWith).
func open(t *testing.T, mode string) *App {
	t.Helper()
	return openWith(t, configs.Server{DataDir: t.TempDir(), Mode: mode})
}

// openWith opens an App with cfg and closes it when the test ends. (The
// package's tests cannot use internal/testkit/testapp, which imports app.)
func openWith(t *testing.T, cfg configs.Server) *App {
	t.Helper()
	a, err := Open(context.Background(), cfg, nil)
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
	return a
}

func TestModelsOf(t *testing.T) {
	doc := `{"advisors":[{"model":"a"}],"actors":[{"model":"b","n":2},{"model":"a"}],"generator":{"model":"c"},"judge":{"model":""},"models":{"x":{"name":"model"}}}`
	if got := ModelsOf(json.RawMessage(doc)); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("ModelsOf = %v", got)
	}
}

// TestLiveModelWithoutKey checks that a live run whose model has no API key
// fails at start, naming the variable and never a key.
func TestLiveModelWithoutKey(t *testing.T) {
	t.Setenv("FLOCK_TEST_MISSING_KEY", "")
	t.Setenv("OPENAI_API_KEY", "sk-should-never-appear")
	a := open(t, "live")
	settings := `{"commands":["true"],"judge":{"model":"gpt-test"},"models":{"gpt-test":{"base_url":"http://127.0.0.1:1/v1","api_key_env":"FLOCK_TEST_MISSING_KEY"}}}`
	_, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script", Settings: json.RawMessage(settings)})
	if !errors.Is(err, workflows.ErrBadRequest) || !strings.Contains(err.Error(), "FLOCK_TEST_MISSING_KEY") {
		t.Fatalf("err = %v, want a bad request naming FLOCK_TEST_MISSING_KEY", err)
	}
	if strings.Contains(err.Error(), "sk-should-never-appear") {
		t.Fatal("the error carries an API key")
	}
	runs, _, _ := a.Store.Runs(context.Background(), state.RunFilter{})
	if len(runs) != 0 {
		t.Fatalf("a run was created: %+v", runs)
	}
	// In simulated mode no key is needed.
	sim := open(t, "simulated")
	if _, err := sim.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script", Settings: json.RawMessage(settings)}); err != nil {
		t.Fatalf("simulated mode: %v", err)
	}
}
