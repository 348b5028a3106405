package triframe_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/triframe"
)

// TestMalformedIndexLabel: a result whose index label is not an integer
// (only a damaged journal has one) fails the phase naming the label, where
// it used to be read as index -1.
func TestMalformedIndexLabel(t *testing.T) {
	wf := triframe.Workflow()
	for _, name := range []string{"actor_with_advice", "aggregate_mean_best", "subagents_judge_pair"} {
		t.Run(name, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(goldenDir, "*_"+name+".json"))
			if len(files) != 1 {
				t.Fatalf("golden case %s: %v", name, files)
			}
			raw, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var c phasetest.Case
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			spec, _ := wf.Phase(c.Phase)
			if _, err := spec.Run(c.Input(wf.Name)); err != nil {
				t.Fatalf("the golden case itself fails: %v", err)
			}
			c.Results[0].Meta = c.Results[0].Meta.Clone()
			c.Results[0].Meta["index"] = "x"
			_, err = spec.Run(c.Input(wf.Name))
			if !errors.Is(err, operations.ErrBadMeta) || !strings.Contains(err.Error(), `index="x"`) {
				t.Fatalf("err = %v, want ErrBadMeta naming index=\"x\"", err)
			}
		})
	}
}
