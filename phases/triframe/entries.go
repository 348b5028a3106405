package triframe

import (
	"encoding/json"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/record"
)

// Entry types of the triframe log. Each carries a one-line Summary that
// the CLI prints as the agent's steps. tool_output and warning are the
// shared agent.ToolOutput and agent.Warning.
const (
	EntryTask       = "task"
	EntryAdvice     = "advice"
	EntryOptions    = "options"
	EntryRatings    = "ratings"
	EntryChoice     = "choice"
	EntryToolOutput = agent.EntryToolOutput
	EntryWarning    = agent.EntryWarning
	EntrySubagents  = "subagents"
	EntryTournament = "tournament"
	EntryConclusion = "conclusion"
)

// Task records the task at the start of a run.
type Task struct {
	Summary string `json:"summary"`
	Task    string `json:"task"`
	// Tools are the actor's tools; Mode is tools, fenced or xml.
	Tools []string   `json:"tools"`
	Mode  agent.Mode `json:"mode"`
}

// Advice is one advisor output. Advice is empty when the output held no
// usable advice (Invalid says why); such entries stay out of histories.
type Advice struct {
	Summary string `json:"summary"`
	Advice  string `json:"advice,omitempty"`
	Invalid string `json:"invalid,omitempty"`
	Advisor int    `json:"advisor"`
	Sample  int    `json:"sample"`
}

// Options are the distinct candidate actions of one actor round.
type Options struct {
	Summary string         `json:"summary"`
	Options []agent.Option `json:"options"`
	// Dropped counts outputs without content or valid call; Merged counts
	// duplicates folded into an earlier option.
	Dropped int `json:"dropped"`
	Merged  int `json:"merged"`
	// Errors are generate failures of the round.
	Errors []string `json:"errors,omitempty"`
}

// OptionScore aggregates the ratings of one option.
type OptionScore struct {
	Option int     `json:"option"`
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Count  int     `json:"count"`
}

// RaterRating is one rating given by one rater output.
type RaterRating struct {
	Rater  int `json:"rater"`
	Sample int `json:"sample"`
	agent.Rating
}

// Ratings records the raters' verdict on the last options.
type Ratings struct {
	Summary string        `json:"summary"`
	Scores  []OptionScore `json:"scores"`
	Ratings []RaterRating `json:"ratings"`
	// Failed counts rater outputs without usable ratings; Ignored counts
	// ratings of options that do not exist.
	Failed  int `json:"failed"`
	Ignored int `json:"ignored"`
	// Best is the option with the highest mean (-1: nothing rated).
	Best int `json:"best"`
}

// Choice is the option the step executes.
type Choice struct {
	Summary string       `json:"summary"`
	Option  agent.Option `json:"option"`
	// Index is the option's index in the last options entry.
	Index int `json:"index"`
	// Mean is its mean rating, when rated.
	Mean *float64 `json:"mean,omitempty"`
	// Note explains an unusual choice (taken despite a low rating ...).
	Note string `json:"note,omitempty"`
}

// SubagentRun is one finished subagent.
type SubagentRun struct {
	ID       string `json:"id"`
	RunID    string `json:"run_id,omitempty"`
	Task     string `json:"task"`
	Approach string `json:"approach,omitempty"`
	// Status is the child run's status (succeeded, failed ...), or
	// "error" when it could not be started.
	Status     string `json:"status"`
	EndReason  string `json:"end_reason,omitempty"`
	Conclusion string `json:"conclusion,omitempty"`
	Report     string `json:"report,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Concluded reports whether the subagent finished with a conclusion.
func (r SubagentRun) Concluded() bool {
	return r.Status == string(record.StatusSucceeded) && r.Conclusion != ""
}

// SubagentsReport records the subagents of one launch once they all ended.
type SubagentsReport struct {
	Summary string        `json:"summary"`
	CallID  string        `json:"call_id,omitempty"`
	Agents  []SubagentRun `json:"agents"`
}

// Match is one tournament match.
type Match struct {
	Task   string `json:"task"`
	A      string `json:"a"`
	B      string `json:"b,omitempty"`
	Winner string `json:"winner"`
	// How is "judged", "bye", "walkover" (only one concluded) or
	// "fallback" (the judge gave no valid verdict; A advances).
	How       string `json:"how"`
	Reasoning string `json:"reasoning,omitempty"`
}

// TournamentRound records one round of matches.
type TournamentRound struct {
	Summary string  `json:"summary"`
	Round   int     `json:"round"`
	Matches []Match `json:"matches"`
}

// Conclusion is a subagent's final report (its run result, as JSON).
type Conclusion struct {
	Summary    string `json:"summary,omitempty"`
	Conclusion string `json:"conclusion"`
	Report     string `json:"report"`
}

// vars are the run's small state.
type vars struct {
	// Timeout is the bash/python timeout in seconds.
	Timeout int `json:"timeout"`
	// Retries counts the actor rounds of the current step beyond the first.
	Retries int `json:"retries"`
	// Bracket is the running tournament, if any.
	Bracket *bracket `json:"bracket,omitempty"`
	// Pending is the chosen action waiting for a person (ask_human,
	// intervention): process records it as the choice once approved or
	// replaced, so the log never holds an action that did not run.
	Pending *Choice `json:"pending,omitempty"`
}

// bracket is a tournament in progress: for each task, the agents still in.
type bracket struct {
	Round  int     `json:"round"`
	Groups []group `json:"groups"`
}

type group struct {
	Task  string   `json:"task"`
	Alive []string `json:"alive"`
}

const varState = "triframe"

func decode[T any](raw json.RawMessage) (T, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}
