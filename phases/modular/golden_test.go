package modular_test

import (
	"testing"

	"github.com/flockrun/flock/phases/modular"
	"github.com/flockrun/flock/phases/phasetest"
)

func TestGolden(t *testing.T) {
	phasetest.Run(t, "testdata/golden", modular.Workflow())
}
