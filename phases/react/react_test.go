package react_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/react"
)

func TestGolden(t *testing.T) {
	phasetest.Run(t, "testdata/golden", react.Workflow())
}
