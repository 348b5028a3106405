package phasetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/agent"
)

// Conflict is one settings document for CheckConflicts.
type Conflict struct {
	Name string
	Doc  string
	// Keys are what the refusal names; none: the settings are accepted.
	Keys []string
}

// CheckConflicts runs check, a workflow's CheckSettings, on each case's
// document in a subtest: one without Keys must be accepted; one with Keys
// refused with agent.ErrSettingsConflict, the error naming every key.
func CheckConflicts(t *testing.T, check func(json.RawMessage) error, cases []Conflict) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			err := check(json.RawMessage(tt.Doc))
			if len(tt.Keys) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, agent.ErrSettingsConflict) {
				t.Fatalf("err = %v, want ErrSettingsConflict", err)
			}
			for _, k := range tt.Keys {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}
