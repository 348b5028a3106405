package triframe_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/triframe"
)

// TestGolden runs testdata/golden/*.json (inputs written by goldenCases in
// cases_test.go with -gen; expected outputs by `go test -update`).
func TestGolden(t *testing.T) {
	phasetest.Run(t, "testdata/golden", triframe.Workflow())
}
