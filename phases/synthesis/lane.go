package synthesis

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
)

// LaneName is the lane workflow: it runs its share of the seeds one after
// another, one seed run in flight, so that max_concurrency stays busy
// without a barrier between seeds.
const LaneName = "synthesis.lane"

// PhaseNext is the lane's one phase.
const PhaseNext = "next"

// LaneResult is a lane's result.
type LaneResult struct {
	Done   int           `json:"done"`
	Failed []SeedFailure `json:"failed,omitempty"`
}

// SeedFailure is a seed run (or a lane) that did not succeed.
type SeedFailure struct {
	SourceID string `json:"source_id,omitempty"`
	Lane     string `json:"lane,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Error    string `json:"error,omitempty"`
}

type laneState struct {
	Next   int           `json:"next"`
	Done   int           `json:"done"`
	Failed []SeedFailure `json:"failed,omitempty"`
	// Spent is what the lane's seed runs used (their usage as they ended).
	Spent operations.RunUsage `json:"spent"`
}

// ReasonBudgetSpent marks a seed a lane did not start: its share of the
// synthesis's limits was spent.
const ReasonBudgetSpent = "budget_spent"

// LaneWorkflow returns the lane declaration.
func LaneWorkflow() phases.Workflow {
	return phases.Workflow{
		Name:        LaneName,
		Description: "One lane of a synthesis: runs its seeds (synthesis.seed) one after another.",
		Start:       PhaseNext,
		Phases:      []phases.PhaseSpec{{Name: PhaseNext, Run: typedLane.Phase(Next), Next: []string{PhaseNext}}},
		Settings:    LaneSettings{},
	}
}

// Next records the seed run that ended and spawns the next seed.
func Next(in phases.Input, s *LaneSettings) (phases.Output, error) {
	var st laneState
	if _, err := phases.GetVar(in.State, "lane", &st); err != nil {
		return phases.Output{}, err
	}
	for _, r := range in.Results {
		seed := r.Meta["seed"]
		sp := operations.Spawn.Result(r)
		if sp != nil {
			st.Spent.Tokens += sp.Usage.Tokens
			st.Spent.Actions += sp.Usage.Actions
			st.Spent.Cost += sp.Usage.Cost
		}
		switch {
		case r.Error != "":
			st.Failed = append(st.Failed, SeedFailure{SourceID: seed, Error: r.Error})
		case sp != nil && sp.Status == "succeeded":
			st.Done++
		case sp != nil:
			st.Failed = append(st.Failed, SeedFailure{SourceID: seed, RunID: sp.RunID, Reason: sp.EndReason, Error: sp.Error})
		}
	}
	var out phases.Output
	if end := phases.FatalEnd(in.Results); end != nil {
		// A seed met a model failure no later seed could escape: start no
		// more (a re-run retries them all).
		for _, sd := range s.Seeds[st.Next:] {
			st.Failed = append(st.Failed, SeedFailure{SourceID: sd.ID, Reason: end.Reason, Error: "not started: " + end.Error})
		}
		res, err := phases.Marshal(LaneResult{Done: st.Done, Failed: st.Failed})
		if err != nil {
			return out, err
		}
		end.Result = res
		out.End = end
		return out, nil
	}
	if st.Next >= len(s.Seeds) {
		res, err := phases.Marshal(LaneResult{Done: st.Done, Failed: st.Failed})
		if err != nil {
			return out, err
		}
		out.End = &phases.End{Reason: "lane_done", Result: res}
		return out, nil
	}
	ss := s.Base
	if s.limited() {
		limits, ok := seedBudget(s, st.Spent, in.Run.Now)
		if !ok {
			for _, sd := range s.Seeds[st.Next:] {
				st.Failed = append(st.Failed, SeedFailure{SourceID: sd.ID, Reason: ReasonBudgetSpent,
					Error: "the synthesis's limits were spent before this seed started"})
			}
			res, err := phases.Marshal(LaneResult{Done: st.Done, Failed: st.Failed})
			if err != nil {
				return out, err
			}
			out.End = &phases.End{Reason: "lane_done", Result: res}
			return out, nil
		}
		doc, err := json.Marshal(limits)
		if err != nil {
			return out, err
		}
		ss.Limits = doc
	}
	seed := s.Seeds[st.Next]
	st.Next++
	ss.Seed = seed
	doc, err := phases.Marshal(ss)
	if err != nil {
		return out, fmt.Errorf("encode seed settings: %w", err)
	}
	// The seed is the seed run's task: what its model explores.
	r := operations.NewSpawn(operations.SpawnRequest{Workflow: SeedName, Settings: json.RawMessage(doc), Task: seed.Content, Name: seed.ID})
	r.Meta = operations.Meta{"seed": seed.ID}
	out.Ops = []operations.Request{r}
	out.Next = PhaseNext
	return out, out.SetVar("lane", st)
}

// seedBudget is the limits of the lane's next seed run: what is left of
// the lane's share, or the seed's own limits (seed_limits) where smaller.
// ok is false when some part of the share is spent.
func seedBudget(s *LaneSettings, spent operations.RunUsage, now time.Time) (operations.RunLimits, bool) {
	var own operations.RunLimits
	if len(s.Base.Limits) > 0 {
		if err := json.Unmarshal(s.Base.Limits, &own); err != nil {
			own = operations.RunLimits{}
		}
	}
	b := s.Budget
	l := own
	if b.Tokens > 0 {
		left := b.Tokens - spent.Tokens
		if left <= 0 {
			return l, false
		}
		l.Tokens = minLimit(l.Tokens, left)
	}
	if b.Actions > 0 {
		left := b.Actions - spent.Actions
		if left <= 0 {
			return l, false
		}
		l.Actions = minLimit(l.Actions, left)
	}
	if b.Cost > 0 {
		left := b.Cost - spent.Cost
		if left <= 0 {
			return l, false
		}
		l.Cost = minLimit(l.Cost, left)
	}
	if s.Deadline != nil {
		left := s.Deadline.Sub(now).Seconds()
		if left <= 0 {
			return l, false
		}
		l.Seconds = minLimit(l.Seconds, left)
	}
	return l, true
}

// minLimit is the smaller of two limits where 0 means none.
func minLimit[T int | float64](a, b T) T {
	if a == 0 || b < a {
		return b
	}
	return a
}
