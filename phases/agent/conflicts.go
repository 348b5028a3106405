package agent

import (
	"encoding/json"
	"fmt"
)

// CheckConflicts reports settings of the entry that govern the same thing:
// temp and temperature both set (they are aliases). field names the entry
// in the error (for example "actors[1]"). Workflows call it at start
// (CheckSettings), not when a stored run is resumed.
func (m Model) CheckConflicts(field string) error {
	if m.Temp != nil && m.Temperature != nil {
		return fmt.Errorf("%w: %s.temp and %s.temperature both set the sampling temperature: keep one", ErrSettingsConflict, field, field)
	}
	return nil
}

// EngineTimeoutKeys reports which of the engine's timeout keys,
// bash.timeout_s and python.timeout_s, the settings doc sets; a malformed
// doc sets none (the settings' own decoding reports it).
func EngineTimeoutKeys(doc json.RawMessage) (bash, python bool) {
	var s struct {
		Bash struct {
			TimeoutS *float64 `json:"timeout_s"`
		} `json:"bash"`
		Python struct {
			TimeoutS *float64 `json:"timeout_s"`
		} `json:"python"`
	}
	if json.Unmarshal(doc, &s) != nil {
		return false, false
	}
	return s.Bash.TimeoutS != nil, s.Python.TimeoutS != nil
}

// CheckTimeoutKeys refuses bash.timeout_s and python.timeout_s in the
// settings of a workflow whose own key (key, for example "timeout") sets
// the timeout of every bash and python call it makes, with a default, so
// that the engine's keys could never apply. The error names both keys.
func CheckTimeoutKeys(doc json.RawMessage, workflow, key string, def int) error {
	bash, python := EngineTimeoutKeys(doc)
	for _, k := range []struct {
		name string
		set  bool
	}{{"bash.timeout_s", bash}, {"python.timeout_s", python}} {
		if k.set {
			return fmt.Errorf("%w: %s and %q both set the timeout of the agent's commands; workflow %s uses %q "+
				"(default %d s, changed by the agent with set_timeout) for every bash and python call: remove %s and set %q",
				ErrSettingsConflict, k.name, key, workflow, key, def, k.name, key)
		}
	}
	return nil
}
