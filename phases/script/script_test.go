package script_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/script"
)

func TestGolden(t *testing.T) {
	phasetest.Run(t, "testdata/golden", script.Workflow())
}

// TestParseSettingsErrors: each mistake is named by its path, a wrong
// type by the settings decoder (phases/settings).
func TestParseSettingsErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{``, "commands: must list at least one command"},
		{`{"commands": "ls"}`, "commands: want a list, got JSON string"},
		{`{"commands": ["ls", 3]}`, "commands[1]: want a string, got JSON number"},
		{`{"commands": ["ls", ""]}`, "commands[1]: empty command"},
		{`{"commands": ["ls"], "timeout_s": "1m"}`, "timeout_s: want a number, got JSON string"},
		{`{"commands": ["ls"], "timeout_s": -1}`, "timeout_s: must be >= 0"},
	} {
		_, err := script.ParseSettings(json.RawMessage(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}
