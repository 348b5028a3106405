package script_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/script"
)

func TestGolden(t *testing.T) {
	phasetest.Run(t, "testdata/golden", script.Workflow())
}
