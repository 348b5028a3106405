package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ManifestJSON is run id's work-dir manifest of step as a fork reads it
// (its whole manifest and deltas applied), as JSON; an error when the run
// wrote no manifest of that step.
func (e *Executor) ManifestJSON(id string, step uint64) ([]byte, error) {
	m, _, _, err := e.loadManifest(id, step)
	if err != nil {
		return nil, err
	}
	if m == nil || m.Step != step {
		return nil, fmt.Errorf("run %s wrote no manifest of step %d", id, step)
	}
	return json.Marshal(m)
}

// ManifestSteps lists the steps run id wrote a manifest of, whole or as a
// delta, comma-separated.
func (e *Executor) ManifestSteps(id string) (string, error) {
	names, err := os.ReadDir(e.snapRunDir(id))
	if err != nil {
		return "", err
	}
	seen := map[uint64]bool{}
	for _, n := range names {
		if s, ok := strings.CutSuffix(n.Name(), ".json"); ok {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return "", err
			}
			seen[v] = true
		}
		if _, ok := strings.CutSuffix(n.Name(), ".log"); ok {
			b, err := os.ReadFile(filepath.Join(e.snapRunDir(id), n.Name()))
			if err != nil {
				return "", err
			}
			for line := range bytes.Lines(b) {
				var d manifestDelta
				if err := json.Unmarshal(line, &d); err != nil {
					return "", err
				}
				seen[d.Step] = true
			}
		}
	}
	var steps []uint64
	for s := range seen {
		steps = append(steps, s)
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = strconv.FormatUint(s, 10)
	}
	return strings.Join(out, ","), nil
}
