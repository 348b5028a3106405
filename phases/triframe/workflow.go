package triframe

import (
	"encoding/json"
	"fmt"

	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
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
			{Name: PhaseInit, Run: phases.EndOnFatal(typed.Phase(Init)), Next: []string{PhaseAdvisor}},
			{Name: PhaseAdvisor, Run: phases.EndOnFatal(typed.Phase(Advisor)), Next: []string{PhaseActor}},
			{Name: PhaseActor, Run: phases.EndOnFatal(typed.Phase(Actor)), Next: []string{PhaseAdvisorRatings}},
			{Name: PhaseAdvisorRatings, Run: phases.EndOnFatal(typed.Phase(AdvisorRatings)), Next: []string{PhaseActor, PhaseProcess, PhaseAggregateRatings}},
			{Name: PhaseAggregateRatings, Run: phases.EndOnFatal(typed.Phase(AggregateRatings)), Next: []string{PhaseActor, PhaseProcess}},
			{Name: PhaseProcess, Run: phases.EndOnFatal(typed.Phase(Process)), Next: []string{PhaseToolOutput, PhaseAdvisor, PhaseSubagents}},
			{Name: PhaseToolOutput, Run: phases.EndOnFatal(typed.Phase(ToolOutput)), Next: []string{PhaseAdvisor}},
			{Name: PhaseSubagents, Run: phases.EndOnFatal(typed.Phase(Subagents)), Next: []string{PhaseTournament, PhaseAdvisor}},
			{Name: PhaseTournament, Run: phases.EndOnFatal(typed.Phase(Tournament)), Next: []string{PhaseTournament, PhaseAdvisor}},
		},
		Settings:      Settings{},
		CheckSettings: CheckSettings,
	}
}

// CheckSettings checks a run's settings at start: ParseSettings, then the
// keys that govern what another key already does (agent.ErrSettingsConflict,
// naming both): bash.timeout_s or python.timeout_s beside triframe's own
// timeout, and model entries with both temp and temperature.
func CheckSettings(doc json.RawMessage) error {
	s, err := ParseSettings(doc)
	if err != nil {
		return err
	}
	if err := agent.CheckTimeoutKeys(doc, Name, "timeout", DefaultTimeout); err != nil {
		return err
	}
	for _, g := range []struct {
		name string
		list []agent.Model
	}{{"advisors", s.Advisors}, {"actors", s.Actors}, {"raters", s.Raters}} {
		for i, m := range g.list {
			if err := m.CheckConflicts(fmt.Sprintf("%s[%d]", g.name, i)); err != nil {
				return err
			}
		}
	}
	return s.Subagents.Judge.CheckConflicts("subagents.judge")
}

func init() { phases.Register(Workflow()) }
