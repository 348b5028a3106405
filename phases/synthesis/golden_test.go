package synthesis_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/synthesis"
)

// TestGoldenSeed runs the sampler's and the synthesizer's decisions
// (testdata/golden_seed, inputs written by testdata/gen_golden.py).
func TestGoldenSeed(t *testing.T) {
	phasetest.Run(t, "testdata/golden_seed", synthesis.SeedWorkflow())
}
