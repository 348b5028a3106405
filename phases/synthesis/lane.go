package synthesis

import (
	"encoding/json"
	"fmt"

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
}

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
		switch {
		case r.Error != "":
			st.Failed = append(st.Failed, SeedFailure{SourceID: seed, Error: r.Error})
		case r.Spawn != nil && r.Spawn.Status == "succeeded":
			st.Done++
		case r.Spawn != nil:
			st.Failed = append(st.Failed, SeedFailure{SourceID: seed, RunID: r.Spawn.RunID, Reason: r.Spawn.EndReason, Error: r.Spawn.Error})
		}
	}
	var out phases.Output
	if st.Next >= len(s.Seeds) {
		res, err := phases.Marshal(LaneResult{Done: st.Done, Failed: st.Failed})
		if err != nil {
			return out, err
		}
		out.End = &phases.End{Reason: "lane_done", Result: res}
		return out, nil
	}
	seed := s.Seeds[st.Next]
	st.Next++
	ss := s.Base
	ss.Seed = seed
	doc, err := phases.Marshal(ss)
	if err != nil {
		return out, fmt.Errorf("encode seed settings: %w", err)
	}
	r := operations.NewSpawn(operations.SpawnRequest{Workflow: SeedName, Settings: json.RawMessage(doc), Name: seed.ID})
	r.Meta = operations.Meta{"seed": seed.ID}
	out.Ops = []operations.Request{r}
	out.Next = PhaseNext
	return out, out.SetVar("lane", st)
}
