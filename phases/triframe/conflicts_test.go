package triframe_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/triframe"
)

// TestConflictingSettings: settings that govern the same thing as another
// are refused at start, naming both keys.
func TestConflictingSettings(t *testing.T) {
	phasetest.CheckConflicts(t, triframe.Workflow().CheckSettings, []phasetest.Conflict{
		{Name: "timeout alone", Doc: `{"actors":[{"model":"m"}],"timeout":30}`},
		{Name: "python.timeout_s", Doc: `{"actors":[{"model":"m"}],"python":{"timeout_s":1200}}`, Keys: []string{"python.timeout_s", `"timeout"`}},
		{Name: "bash.timeout_s with timeout", Doc: `{"actors":[{"model":"m"}],"timeout":30,"bash":{"timeout_s":5}}`, Keys: []string{"bash.timeout_s", `"timeout"`}},
		{Name: "other python keys", Doc: `{"actors":[{"model":"m"}],"python":{"interpreter":"python3"},"bash":{"output_limit":5}}`},
		{Name: "temp and temperature", Doc: `{"actors":[{"model":"m"},{"model":"m","temp":1,"temperature":0.5}]}`, Keys: []string{"actors[1].temp", "actors[1].temperature"}},
		{Name: "temperature alone", Doc: `{"actors":[{"model":"m","temperature":0.5}],"raters":[{"model":"m","temp":0}]}`},
		{Name: "judge temp and temperature", Doc: `{"actors":[{"model":"m"}],"subagents":{"judge":{"model":"j","temp":0,"temperature":0}}}`, Keys: []string{"subagents.judge.temp", "subagents.judge.temperature"}},
	})
}
