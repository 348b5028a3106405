package rollout_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/rollout"
)

func TestGolden(t *testing.T) {
	phasetest.Run(t, "testdata/golden", rollout.Workflow())
}

func TestGoldenLane(t *testing.T) {
	phasetest.Run(t, "testdata/golden_lane", rollout.LaneWorkflow())
}
