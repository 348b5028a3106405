package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/configs/configfile"
	"github.com/flockrun/flock/phases"
)

// TestExampleSettingsHaveNoWarnings: the shipped settings files use only
// keys their workflow reads, and their settings pass the start checks.
func TestExampleSettingsHaveNoWarnings(t *testing.T) {
	files, err := filepath.Glob("../configs/examples/*.json")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../settings.example.json", "../configs/examples/rollout.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc, err := configfile.RunSettings(f)
			if err != nil {
				t.Fatal(err)
			}
			var top struct {
				WorkflowType string `json:"workflow_type"`
			}
			if err := json.Unmarshal(doc, &top); err != nil {
				t.Fatal(err)
			}
			name := top.WorkflowType
			if name == "" {
				name = "rollout"
			}
			wf, ok := phases.Default.Lookup(name)
			if !ok {
				t.Fatalf("workflow %q not registered", name)
			}
			if err := wf.CheckSettings(doc); err != nil {
				t.Fatalf("CheckSettings: %v", err)
			}
			if w := configs.SettingsWarnings(doc, wf.Name, wf.Settings); len(w) > 0 {
				t.Fatalf("warnings: %q", w)
			}
		})
	}
}
