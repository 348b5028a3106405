package modular_test

import (
	"testing"

	"github.com/flockrun/flock/phases/modular"
	"github.com/flockrun/flock/phases/phasetest"
)

// TestConflictingSettings: settings that govern the same thing as another
// are refused at start, naming both keys.
func TestConflictingSettings(t *testing.T) {
	phasetest.CheckConflicts(t, modular.Workflow().CheckSettings, []phasetest.Conflict{
		{Name: "timeout alone", Doc: `{"generator":{"model":"m"},"timeout":30}`},
		{Name: "python.timeout_s", Doc: `{"generator":{"model":"m"},"python":{"timeout_s":1200}}`, Keys: []string{"python.timeout_s", `"timeout"`}},
		{Name: "bash.timeout_s with timeout", Doc: `{"generator":{"model":"m"},"timeout":30,"bash":{"timeout_s":5}}`, Keys: []string{"bash.timeout_s", `"timeout"`}},
		{Name: "temp and temperature", Doc: `{"generator":{"model":"m","temp":1,"temperature":0.5}}`, Keys: []string{"generator.temp", "generator.temperature"}},
	})
}
