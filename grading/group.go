package grading

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Group is the set of trajectories that share a task and a trajectory name,
// the unit GRPO and RLOO compare rewards within.
type Group struct {
	// ID is "task_id:name".
	ID      string        `json:"id"`
	TaskID  string        `json:"task_id"`
	Name    string        `json:"name"`
	Members []GroupMember `json:"members"`
}

// GroupMember points at one trajectory of one episode.
type GroupMember struct {
	EpisodeID  string `json:"episode_id"`
	RolloutIdx int    `json:"rollout_idx"`
	// Trajectory is the index in the episode's Trajectories.
	Trajectory        int               `json:"trajectory"`
	Reward            float64           `json:"reward"`
	IsCorrect         bool              `json:"is_correct"`
	TerminationReason TerminationReason `json:"termination_reason"`
}

// Rewards returns the members' rewards in member order.
func (g Group) Rewards() []float64 {
	rs := make([]float64, len(g.Members))
	for i, m := range g.Members {
		rs[i] = m.Reward
	}
	return rs
}

// GroupTrajectories groups the trajectories of episodes by
// "task_id:trajectory_name", as rLLM does for RL advantages. A trajectory
// without a name is named "default_traj_name_<index in its episode>", and a
// trajectory without steps is left out, as it has nothing to train on.
// Groups are sorted by ID; members keep episode order, then trajectory
// order. An episode ID that is not "task_id:index" is an error.
func GroupTrajectories(episodes []Episode) ([]Group, error) {
	return groupBy(episodes,
		func(_ int, t Trajectory) bool { return len(t.Steps) > 0 },
		func(id, taskID, name string) *Group { return &Group{ID: id, TaskID: taskID, Name: name} },
		func(g *Group, e Episode, idx, ti int, t Trajectory) {
			g.Members = append(g.Members, GroupMember{
				EpisodeID:         e.ID,
				RolloutIdx:        idx,
				Trajectory:        ti,
				Reward:            t.Reward,
				IsCorrect:         e.IsCorrect,
				TerminationReason: e.TerminationReason,
			})
		})
}

// groupBy walks the trajectories of episodes that keep accepts, keys each
// by "task_id:name" (unnamed ones are "default_traj_name_<index>"), makes
// a group with newGroup for each new key and adds the trajectory with add.
// It returns the groups sorted by key; members keep episode order, then
// trajectory order. An episode ID that is not "task_id:index" is an error.
func groupBy[G any](episodes []Episode, keep func(ti int, t Trajectory) bool,
	newGroup func(id, taskID, name string) *G, add func(g *G, e Episode, idx, ti int, t Trajectory)) ([]G, error) {
	byID := map[string]*G{}
	for _, e := range episodes {
		taskID, idx, err := SplitEpisodeID(e.ID)
		if err != nil {
			return nil, err
		}
		for ti, t := range e.Trajectories {
			if !keep(ti, t) {
				continue
			}
			name := t.Name
			if name == "" {
				name = "default_traj_name_" + strconv.Itoa(ti)
			}
			id := taskID + ":" + name
			g := byID[id]
			if g == nil {
				g = newGroup(id, taskID, name)
				byID[id] = g
			}
			add(g, e, idx, ti, t)
		}
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	groups := make([]G, len(ids))
	for i, id := range ids {
		groups[i] = *byID[id]
	}
	return groups, nil
}

// TrajectoryGroup is rLLM's TrajectoryGroup: the trajectories of one
// "task_id:name", themselves, with per-trajectory metadata aligned with
// them.
type TrajectoryGroup struct {
	// GroupID is "task_id:name".
	GroupID      string          `json:"group_id"`
	TaskID       string          `json:"task_id"`
	Name         string          `json:"name"`
	Trajectories []Trajectory    `json:"trajectories"`
	Metadata     []GroupMetadata `json:"metadata"`
}

// GroupMetadata describes one trajectory of a TrajectoryGroup.
type GroupMetadata struct {
	TaskID            string            `json:"task_id"`
	RolloutIdx        int               `json:"rollout_idx"`
	EpisodeID         string            `json:"episode_id"`
	TerminationReason TerminationReason `json:"termination_reason"`
	IsCorrect         bool              `json:"is_correct"`
}

// Rewards returns the trajectories' rewards in order.
func (g TrajectoryGroup) Rewards() []float64 {
	rs := make([]float64, len(g.Trajectories))
	for i, t := range g.Trajectories {
		rs[i] = t.Reward
	}
	return rs
}

// GroupEpisodes groups every trajectory of episodes by
// "task_id:trajectory_name" with the trajectories inline. Unlike
// GroupTrajectories it keeps trajectories without steps: the caller
// decides which episodes belong (a failed agent's episode is a reward-0
// member). Unnamed trajectories are named as GroupTrajectories names them.
// Groups are sorted by ID; trajectories keep episode order.
func GroupEpisodes(episodes []Episode) ([]TrajectoryGroup, error) {
	return groupBy(episodes,
		func(int, Trajectory) bool { return true },
		func(id, taskID, name string) *TrajectoryGroup {
			return &TrajectoryGroup{GroupID: id, TaskID: taskID, Name: name}
		},
		func(g *TrajectoryGroup, e Episode, idx, _ int, t Trajectory) {
			g.Trajectories = append(g.Trajectories, t)
			g.Metadata = append(g.Metadata, GroupMetadata{TaskID: g.TaskID, RolloutIdx: idx, EpisodeID: e.ID,
				TerminationReason: e.TerminationReason, IsCorrect: e.IsCorrect})
		})
}

// Advantage estimators.
const (
	EstimatorGRPO = "grpo"
	EstimatorRLOO = "rloo"
)

// DefaultAdvantageEpsilon is added to the GRPO standard deviation.
const DefaultAdvantageEpsilon = 1e-6

// AdvantageOptions selects an advantage estimator. The zero value is GRPO
// normalised by the group standard deviation with DefaultAdvantageEpsilon.
type AdvantageOptions struct {
	// Estimator is "grpo" (default) or "rloo".
	Estimator string `json:"estimator,omitempty"`
	// NoStdNorm makes GRPO only subtract the group mean, without dividing by
	// the standard deviation (rLLM's norm_adv_by_std_in_grpo=false).
	NoStdNorm bool `json:"no_std_norm,omitempty"`
	// Epsilon is added to the GRPO standard deviation; 0 or less means
	// DefaultAdvantageEpsilon.
	Epsilon float64 `json:"epsilon,omitempty"`
}

// Advantages returns the advantage of each reward of one group under opts.
func Advantages(rewards []float64, opts AdvantageOptions) ([]float64, error) {
	switch opts.Estimator {
	case "", EstimatorGRPO:
		eps := opts.Epsilon
		if eps <= 0 {
			eps = DefaultAdvantageEpsilon
		}
		return GRPOAdvantages(rewards, !opts.NoStdNorm, eps), nil
	case EstimatorRLOO:
		return RLOOAdvantages(rewards), nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownEstimator, opts.Estimator)
}

// GRPOAdvantages returns r_i - mean(r) for each reward, divided by
// (std(r) + eps) when normByStd is set. std is the sample standard
// deviation (divisor n-1), as torch.std computes it in verl and rLLM. A
// group of one has advantage 0 (rLLM gives it its raw reward instead), and a
// group whose rewards are all equal has advantages 0.
func GRPOAdvantages(rewards []float64, normByStd bool, eps float64) []float64 {
	adv := make([]float64, len(rewards))
	if allEqual(rewards) {
		return adv
	}
	mean := meanOf(rewards)
	for i, r := range rewards {
		adv[i] = r - mean
	}
	if !normByStd {
		return adv
	}
	ss := 0.0
	for _, d := range adv {
		ss += d * d
	}
	std := math.Sqrt(ss / float64(len(rewards)-1))
	for i := range adv {
		adv[i] /= std + eps
	}
	return adv
}

// RLOOAdvantages returns, for each reward, the reward minus the mean of the
// other rewards in the group (the REINFORCE leave-one-out baseline), which
// equals n/(n-1)·(r_i - mean). A group of one has advantage 0.
func RLOOAdvantages(rewards []float64) []float64 {
	adv := make([]float64, len(rewards))
	n := len(rewards)
	if allEqual(rewards) {
		return adv
	}
	sum := 0.0
	for _, r := range rewards {
		sum += r
	}
	for i, r := range rewards {
		adv[i] = r - (sum-r)/float64(n-1)
	}
	return adv
}

func meanOf(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// allEqual reports whether xs has fewer than two distinct values; such a
// group carries no learning signal and gets exact zeros rather than
// rounding noise.
func allEqual(xs []float64) bool {
	for _, x := range xs[min(1, len(xs)):] {
		if x != xs[0] {
			return false
		}
	}
	return true
}
