package triframe

import (
	"encoding/json"

	"github.com/flockrun/flock/phases"
)

// Name is the workflow's registry name.
const Name = "triframe"

// Workflow returns the triframe workflow's declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name:        Name,
		Description: "Flock's triframe agent: advisors advise, actors propose actions, raters rate them, the best is executed.",
		Start:       PhaseInit,
		Phases: []phases.PhaseSpec{
			{Name: PhaseInit, Run: Init, Next: []string{PhaseAdvisor}},
			{Name: PhaseAdvisor, Run: Advisor, Next: []string{PhaseActor}},
			{Name: PhaseActor, Run: Actor, Next: []string{PhaseAdvisorRatings}},
			{Name: PhaseAdvisorRatings, Run: AdvisorRatings, Next: []string{PhaseActor, PhaseProcess, PhaseAggregateRatings}},
			{Name: PhaseAggregateRatings, Run: AggregateRatings, Next: []string{PhaseActor, PhaseProcess}},
			{Name: PhaseProcess, Run: Process, Next: []string{PhaseToolOutput, PhaseAdvisor, PhaseSubagents}},
			{Name: PhaseToolOutput, Run: ToolOutput, Next: []string{PhaseAdvisor}},
			{Name: PhaseSubagents, Run: Subagents, Next: []string{PhaseTournament, PhaseAdvisor}},
			{Name: PhaseTournament, Run: Tournament, Next: []string{PhaseTournament, PhaseAdvisor}},
		},
		Settings: Settings{},
		CheckSettings: func(doc json.RawMessage) error {
			_, err := ParseSettings(doc)
			return err
		},
	}
}

func init() { phases.Register(Workflow()) }
