package externalagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/settings"
)

// Names of the workflows in the registry.
const (
	// Name is the external-agent workflow.
	Name = "external"
	// SessionName is the workflow of a gateway session run (a child of an
	// external op): its generate ops are the agent's model calls.
	SessionName = "external.session"
)

// Settings are the external workflow's keys of the settings document.
type Settings struct {
	// Command is the agent program: a string (run by /bin/sh -c) or a list
	// (the argv). Required.
	Command json.RawMessage `json:"command"`
	// Model is the gateway's default model; default: the only model of
	// "models", else "simulated".
	Model string `json:"model,omitempty"`
	// TimeoutS bounds the program (0: only the run's limits bound it).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Env adds variables, with these values, to the program's environment.
	Env map[string]string `json:"env,omitempty"`
	// PassEnv names variables of the server's environment that the program
	// gets with their values: only those the operator lists in the server
	// setting pass_env (a run naming another is refused). The program's
	// environment is otherwise a small base set (PATH, HOME, the locale,
	// ...), the settings' env and the gateway's variables.
	PassEnv []string `json:"pass_env,omitempty"`
	// AnswerFile is read after the program exits when its stdout has no
	// JSON line (relative to the work directory).
	AnswerFile string `json:"answer_file,omitempty"`
	// TaskFile receives the task text (default "task.txt").
	TaskFile string `json:"task_file,omitempty"`
	// TrajectoryFile and EpisodeFile are written with the trajectory and
	// the episode built from the gateway trace (default "episode.json" for
	// the episode, no trajectory file).
	TrajectoryFile string `json:"trajectory_file,omitempty"`
	EpisodeFile    string `json:"episode_file,omitempty"`
	// Name is the trajectory's name when the agent gives none (default
	// "external").
	Name string `json:"name,omitempty"`
	// TaskKwargs are a rollout task's kwargs; the program gets them as
	// FLOCK_TASK_KWARGS (JSON).
	TaskKwargs json.RawMessage `json:"task_kwargs,omitempty"`
}

// request is the external op the settings ask for.
func (s *Settings) request() operations.ExternalRequest {
	r := operations.ExternalRequest{Model: s.Model, TimeoutS: s.TimeoutS, AnswerFile: s.AnswerFile,
		TaskFile: s.TaskFile, TrajectoryFile: s.TrajectoryFile, EpisodeFile: s.EpisodeFile, Name: s.Name,
		PassEnv: s.PassEnv}
	var one string
	if json.Unmarshal(s.Command, &one) == nil {
		r.Command, r.Shell = []string{one}, true
	} else {
		_ = json.Unmarshal(s.Command, &r.Command) // checked by ParseSettings
	}
	if len(s.Env) > 0 || len(s.TaskKwargs) > 0 {
		r.Env = map[string]string{}
		for k, v := range s.Env {
			r.Env[k] = v
		}
		if len(s.TaskKwargs) > 0 && string(s.TaskKwargs) != "null" {
			r.Env["FLOCK_TASK_KWARGS"] = string(s.TaskKwargs)
		}
	}
	return r
}

// ParseSettings decodes and checks the external workflow's settings,
// defaults applied.
func ParseSettings(doc json.RawMessage) (Settings, error) {
	var s Settings
	if err := settings.Decode(doc, &s); err != nil {
		return s, fmt.Errorf("external settings: %w", err)
	}
	c := bytes.TrimSpace(s.Command)
	var one string
	var argv []string
	switch {
	case len(c) == 0 || string(c) == "null":
		return s, errors.New("command: required (a string run by /bin/sh -c, or a list of arguments)")
	case json.Unmarshal(c, &one) == nil:
		if strings.TrimSpace(one) == "" {
			return s, errors.New("command: empty")
		}
	case json.Unmarshal(c, &argv) == nil:
		if len(argv) == 0 || argv[0] == "" {
			return s, errors.New("command: the list must start with a program")
		}
	default:
		return s, errors.New("command: must be a string or a list of strings")
	}
	if s.TimeoutS < 0 {
		return s, errors.New("timeout_s: must be >= 0")
	}
	for _, f := range []struct{ key, v string }{{"answer_file", s.AnswerFile}, {"task_file", s.TaskFile},
		{"trajectory_file", s.TrajectoryFile}, {"episode_file", s.EpisodeFile}} {
		if f.v != "" && (strings.HasPrefix(f.v, "/") || strings.Contains(f.v, "..")) {
			return s, fmt.Errorf("%s: %q must be a path inside the work directory", f.key, f.v)
		}
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return s, fmt.Errorf("env: %q is not a variable name", k)
		}
		if k == "OPENAI_API_KEY" || k == "OPENAI_BASE_URL" {
			return s, fmt.Errorf("env: %s is set by flock (the gateway session)", k)
		}
	}
	for i, k := range s.PassEnv {
		if !envName.MatchString(k) {
			return s, fmt.Errorf("pass_env[%d]: %q is not a variable name", i, k)
		}
		if k == "OPENAI_API_KEY" || k == "OPENAI_BASE_URL" {
			return s, fmt.Errorf("pass_env[%d]: %s is set by flock (the gateway session)", i, k)
		}
	}
	if s.Model == "" {
		var common struct {
			Models map[string]json.RawMessage `json:"models"`
		}
		_ = json.Unmarshal(doc, &common) // the common settings' parser reports its errors
		names := make([]string, 0, len(common.Models))
		for k := range common.Models {
			names = append(names, k)
		}
		sort.Strings(names)
		if len(names) == 1 {
			s.Model = names[0]
		} else {
			s.Model = "simulated"
		}
	}
	if s.TaskFile == "" {
		s.TaskFile = "task.txt"
	}
	if s.EpisodeFile == "" {
		s.EpisodeFile = "episode.json"
	}
	if s.Name == "" {
		s.Name = Name
	}
	return s, nil
}

// envName is the form of an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Result is the external run's result: the answer and how the agent ended
// (the rollout reads both).
type Result struct {
	Answer            string `json:"answer"`
	TerminationReason string `json:"termination_reason,omitempty"`
	Calls             int    `json:"calls"`
	Replayed          int    `json:"replayed,omitempty"`
	ExitCode          int    `json:"exit_code"`
}

// Start asks for the external op.
func Start(_ phases.Input, s *Settings) (phases.Output, error) {
	return phases.Output{Ops: []operations.Request{operations.NewExternal(s.request())}, Next: "finish"}, nil
}

// Finish ends the run with the program's answer, or fails it with the
// program's error.
func Finish(in phases.Input, _ *Settings) (phases.Output, error) {
	if len(in.Results) != 1 {
		return phases.Output{}, fmt.Errorf("finish: %d results, want the external op's", len(in.Results))
	}
	r := in.Results[0]
	x := operations.External.Result(r)
	res := Result{}
	if x != nil {
		res = Result{Answer: x.Answer, TerminationReason: x.TerminationReason, Calls: x.Calls, Replayed: x.Replayed, ExitCode: x.ExitCode}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return phases.Output{}, err
	}
	out := phases.Output{Append: []phases.Entry{phases.MustEntry("external", res)}}
	switch {
	case phases.FatalEnd(in.Results) != nil:
		// The agent's model call could not be served (model_error,
		// rate_limited): the run ends with that code, as react's does.
		out.End = phases.FatalEnd(in.Results)
		out.End.Result = b
	case r.Error != "":
		out.End = &phases.End{Failed: true, Reason: "agent_failed: " + firstLine(r.Error), Result: b}
	default:
		out.End = &phases.End{Reason: "agent_done", Result: b}
	}
	return out, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// SessionSettings are the keys of a session run's settings: only the
// common ones (models, limits), which the external handler copies from
// the external run.
type SessionSettings struct{}

// sessionVar counts the calls the session run has answered.
const sessionVar = "gateway"

type sessionState struct {
	Calls int `json:"calls"`
}

// SessionWait asks for the next gateway_wait op, which waits for the
// agent's next calls and answers them. When the previous step answered
// calls, the op first hands those answers (journaled by the commit of
// this phase's output) to their callers. It ends the run once the
// session closed, and fails it when the wait failed.
func SessionWait(in phases.Input) (phases.Output, error) {
	var st sessionState
	if _, err := phases.GetVar(in.State, sessionVar, &st); err != nil {
		return phases.Output{}, err
	}
	var deliver uint64
	var out phases.Output
	for _, r := range in.Results {
		switch r.Kind {
		case operations.KindGenerate:
			// A step of a session run journaled before gateway_wait answered
			// its calls: its generate ops hold the answers.
			deliver = in.Run.Step - 1
		case operations.KindGatewayWait:
			w := operations.GatewayWait.Result(r)
			if r.Error != "" || w == nil {
				msg := r.Error
				if msg == "" {
					msg = "gateway_wait returned no result"
				}
				return phases.Output{End: &phases.End{Failed: true, Reason: "gateway_failed: " + firstLine(msg)}}, nil
			}
			if w.Closed {
				b, _ := json.Marshal(st)
				out.End = &phases.End{Reason: "session_closed", Result: b}
				return out, nil
			}
			if len(w.Calls) > 0 {
				deliver = in.Run.Step - 1
				st.Calls += len(w.Calls)
				if err := out.SetVar(sessionVar, st); err != nil {
					return out, err
				}
			}
		}
	}
	out.Ops = []operations.Request{operations.NewGatewayWait(deliver)}
	out.Next = "wait"
	return out, nil
}

// Workflow returns the external workflow's declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name:        Name,
		Description: "Run an agent program (any language, any OpenAI client) against a journaled model gateway session; its answer and an rLLM episode built from the trace are the result.",
		Start:       "start",
		Phases: []phases.PhaseSpec{
			{Name: "start", Run: typed.Phase(Start), Next: []string{"finish"}},
			{Name: "finish", Run: typed.Phase(Finish)},
		},
		Settings: Settings{},
		CheckSettings: func(doc json.RawMessage) error {
			_, err := ParseSettings(doc)
			return err
		},
	}
}

// SessionWorkflow returns the declaration of the session runs' workflow.
func SessionWorkflow() phases.Workflow {
	return phases.Workflow{
		Name:        SessionName,
		Description: "A model gateway session of an external agent: each batch of model calls the agent sends is one gateway_wait op of this run, which answers them as generates and journals prompts and answers in one commit.",
		Start:       "wait",
		Phases: []phases.PhaseSpec{
			{Name: "wait", Run: SessionWait, Next: []string{"wait"}},
		},
		Settings: SessionSettings{},
	}
}

func init() {
	phases.Register(Workflow())
	phases.Register(SessionWorkflow())
}

// typed hands the phases their parsed settings (see phases.Typed).
var typed = phases.NewTyped(ParseSettings)
