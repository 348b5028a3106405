package script

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/settings"
)

// Name is the workflow's registry name.
const Name = "script"

// Settings are the workflow's keys of the settings document.
type Settings struct {
	Commands        []string `json:"commands"`
	ContinueOnError bool     `json:"continue_on_error"`
	// TimeoutS is each command's timeout. When set it wins over
	// bash.timeout_s; when 0 bash.timeout_s applies (then the bash
	// handler's default, 600 s).
	TimeoutS float64 `json:"timeout_s"`
}

// Command is the entry appended for each finished command.
type Command struct {
	Index    int    `json:"index"`
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Summary is the run's result.
type Summary struct {
	Commands int `json:"commands"`
	Failed   int `json:"failed"`
}

// ParseSettings decodes and checks the workflow's settings.
func ParseSettings(doc json.RawMessage) (Settings, error) {
	var s Settings
	if err := settings.Decode(doc, &s); err != nil {
		return s, fmt.Errorf("commands: %w", err)
	}
	if len(s.Commands) == 0 {
		return s, errors.New("commands: must list at least one command")
	}
	for i, c := range s.Commands {
		if c == "" {
			return s, fmt.Errorf("commands[%d]: empty command", i)
		}
	}
	if s.TimeoutS < 0 {
		return s, errors.New("timeout_s: must be >= 0")
	}
	return s, nil
}

// Run is the workflow's only phase: it records the previous command's
// result and asks for the next command.
func Run(in phases.Input, s *Settings) (phases.Output, error) {
	var out phases.Output
	var sum Summary
	if _, err := phases.GetVar(in.State, "summary", &sum); err != nil {
		return out, err
	}
	if len(in.Results) == 1 {
		res := in.Results[0]
		c := Command{Index: sum.Commands, Command: s.Commands[sum.Commands], Error: res.Error, ExitCode: -1}
		if b := operations.Bash.Result(res); b != nil {
			c.ExitCode, c.Stdout, c.Stderr, c.TimedOut = b.ExitCode, b.Stdout, b.Stderr, b.TimedOut
		}
		out.Append = append(out.Append, phases.MustEntry("command", c))
		sum.Commands++
		if c.ExitCode != 0 {
			sum.Failed++
			if !s.ContinueOnError {
				result, _ := json.Marshal(sum)
				if err := out.SetVar("summary", sum); err != nil {
					return out, err
				}
				out.End = &phases.End{Failed: true, Reason: "command_failed: " + c.Command, Result: result}
				return out, nil
			}
		}
	}
	if err := out.SetVar("summary", sum); err != nil {
		return out, err
	}
	if sum.Commands >= len(s.Commands) {
		result, _ := json.Marshal(sum)
		out.End = &phases.End{Failed: sum.Failed > 0, Reason: endReason(sum), Result: result}
		return out, nil
	}
	out.Ops = []operations.Request{operations.NewBash(s.Commands[sum.Commands], s.TimeoutS)}
	out.Next = "run"
	return out, nil
}

func endReason(s Summary) string {
	if s.Failed > 0 {
		return fmt.Sprintf("commands_failed: %d of %d", s.Failed, s.Commands)
	}
	return "completed"
}

// Workflow returns the script workflow's declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name:        Name,
		Description: "Run shell commands one by one in a persistent shell; durable and resumable.",
		Start:       "run",
		Phases:      []phases.PhaseSpec{{Name: "run", Run: typed.Phase(Run), Next: []string{"run"}}},
		Settings:    Settings{},
		CheckSettings: func(doc json.RawMessage) error {
			_, err := ParseSettings(doc)
			return err
		},
	}
}

func init() { phases.Register(Workflow()) }

// typed hands the phase its parsed settings (see phases.Typed).
var typed = phases.NewTyped(ParseSettings)
