package grading

import (
	"fmt"
	"math"
)

// Segment reward modes: how a trajectory reward R is split across the n
// context segments a folded trajectory produced (AgentFly's
// decompose_trajectory_reward).
const (
	// RewardLastOnly gives R to the last segment and 0 to the others:
	// [0, ..., 0, R]. It is the default.
	RewardLastOnly = "last_only"
	// RewardBroadcast gives R to every segment: [R, ..., R].
	RewardBroadcast = "broadcast"
	// RewardUniform splits R equally: [R/n, ..., R/n].
	RewardUniform = "uniform"
	// RewardGeometric weights segment k (0-based) by gamma^(n-1-k), so the
	// last segment weighs 1 and each earlier one gamma times the next, and
	// scales the weights to sum to R. gamma must be in (0, 1]; gamma 1 is
	// uniform and a small gamma approaches last_only.
	RewardGeometric = "geometric"
)

// SegmentRewards splits reward over n segments by mode ("" is last_only).
// gamma is read only by geometric. n <= 0 gives an empty slice. Except for
// broadcast, the rewards sum to reward.
func SegmentRewards(mode string, reward float64, n int, gamma float64) ([]float64, error) {
	switch mode {
	case "", RewardLastOnly, RewardBroadcast, RewardUniform:
	case RewardGeometric:
		if !(gamma > 0 && gamma <= 1) {
			return nil, fmt.Errorf("%w: gamma %v is not in (0, 1]", ErrInvalidGamma, gamma)
		}
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownRewardMode, mode)
	}
	out := make([]float64, max(n, 0))
	if n <= 0 {
		return out, nil
	}
	switch mode {
	case "", RewardLastOnly:
		out[n-1] = reward
	case RewardBroadcast:
		for k := range out {
			out[k] = reward
		}
	case RewardUniform:
		for k := range out {
			out[k] = reward / float64(n)
		}
	case RewardGeometric:
		sum := 0.0
		for k := range out {
			out[k] = math.Pow(gamma, float64(n-1-k))
			sum += out[k]
		}
		for k := range out {
			out[k] = reward * out[k] / sum
		}
	}
	return out, nil
}
