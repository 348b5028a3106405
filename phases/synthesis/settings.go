package synthesis

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/settings"
	cfgpkg "github.com/flockrun/flock/synthesis/config"
	"github.com/flockrun/flock/synthesis/trajectory"
)

// Settings of the synthesis run: the config (package synthesis) plus the
// schemas of the resolved available_tools, which the sandbox handler
// writes into sandbox_tools when the run starts.
type Settings struct {
	cfgpkg.Config
	SandboxTools map[string]agent.SandboxTool `json:"sandbox_tools,omitempty"`
	// SandboxURL and SandboxTokenEnv are the common run keys (a
	// sandbox_url beside sandbox_server_url wins).
	SandboxURL      string `json:"sandbox_url,omitempty"`
	SandboxTokenEnv string `json:"sandbox_token_env,omitempty"`
}

// ParseSettings decodes and validates a synthesis run's settings.
func ParseSettings(doc json.RawMessage) (Settings, error) {
	c, err := cfgpkg.Parse(doc)
	if err != nil {
		return Settings{}, err
	}
	var t struct {
		SandboxTools    map[string]agent.SandboxTool `json:"sandbox_tools"`
		SandboxURL      string                       `json:"sandbox_url"`
		SandboxTokenEnv string                       `json:"sandbox_token_env"`
	}
	if err := settings.Decode(doc, &t); err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	return Settings{Config: c, SandboxTools: t.SandboxTools, SandboxURL: t.SandboxURL, SandboxTokenEnv: t.SandboxTokenEnv}, nil
}

// CheckSettings validates a synthesis run's settings at start.
func CheckSettings(doc json.RawMessage) error {
	_, err := ParseSettings(doc)
	return err
}

// PerSeed is how many model and tool calls one seed run may have in
// flight: the widest level of a tree, at most max_concurrency.
func PerSeed(c *cfgpkg.Config) int { return max(1, min(c.Width(), c.MaxConcurrency)) }

// SeedsInFlight is how many seed runs run at once, so that they never
// have more than max_concurrency calls in flight together.
func SeedsInFlight(c *cfgpkg.Config) int { return max(1, c.MaxConcurrency/PerSeed(c)) }

// SeedSettings are the settings of one seed's run (workflow
// synthesis.seed): the parent's config with output_dir absolute, the seed,
// the tools' schemas, the models, the sandbox and the limits.
type SeedSettings struct {
	Config       cfgpkg.Config                `json:"config"`
	Seed         trajectory.Seed              `json:"seed"`
	SandboxTools map[string]agent.SandboxTool `json:"sandbox_tools"`
	// Common run keys the engine reads.
	Models     json.RawMessage `json:"models,omitempty"`
	SandboxURL string          `json:"sandbox_url,omitempty"`
	// SandboxTokenEnv names the variable holding the remote sandbox's
	// token (configs.RunSettings), handed down from the synthesis run.
	SandboxTokenEnv string          `json:"sandbox_token_env,omitempty"`
	Limits          json.RawMessage `json:"limits,omitempty"`
}

// ParseSeedSettings decodes a seed run's settings.
func ParseSeedSettings(doc json.RawMessage) (SeedSettings, error) {
	var s SeedSettings
	if err := json.Unmarshal(doc, &s); err != nil {
		return s, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	if s.Seed.Content == "" {
		return s, fmt.Errorf("%w: seed.content is empty", ErrSettings)
	}
	if len(s.SandboxTools) == 0 {
		return s, fmt.Errorf("%w: sandbox_tools is empty (the sandbox handler fills it in from available_tools when the synthesis starts)", ErrSettings)
	}
	if s.Config.MaxDepth < 1 || s.Config.DepthThreshold == nil || s.Config.MaxReasks == nil || s.Config.Temperature == nil ||
		s.Config.PathSimilarityThreshold == nil || s.Config.SelectionWeights == nil {
		return s, fmt.Errorf("%w: config: defaults not applied", ErrSettings)
	}
	return s, nil
}

// Tools returns the concrete tool names, sorted.
func (s *SeedSettings) Tools() []string { return slices.Sorted(maps.Keys(s.SandboxTools)) }

// LaneSettings are the settings of one lane (workflow synthesis.lane):
// the seed runs' settings without the seed, and the lane's seeds.
type LaneSettings struct {
	Base  SeedSettings      `json:"base"`
	Seeds []trajectory.Seed `json:"seeds"`
	// Budget is the lane's share of the synthesis's limits (tokens,
	// actions, cost; zero fields: none), Deadline when its time limit
	// runs out (nil: none).
	Budget   operations.RunLimits `json:"budget,omitempty"`
	Deadline *time.Time           `json:"deadline,omitempty"`
}

// limited reports whether the lane has a budget to keep within.
func (s *LaneSettings) limited() bool {
	return s.Budget != (operations.RunLimits{}) || s.Deadline != nil
}

// ParseLaneSettings decodes a lane's settings.
func ParseLaneSettings(doc json.RawMessage) (LaneSettings, error) {
	var s LaneSettings
	if err := json.Unmarshal(doc, &s); err != nil {
		return s, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	return s, nil
}

// outputFiles are the output files in output_dir.
type outputFiles struct {
	QA           string `json:"qa"`
	Trajectories string `json:"trajectories"`
	Trees        string `json:"trees"`
	Done         string `json:"done"`
	Summary      string `json:"summary"`
}

// Output file names in output_dir.
const (
	FileQA           = "synthesized_qa.jsonl"
	FileTrajectories = "trajectories.jsonl"
	FileTrees        = "trees.jsonl"
	FileDone         = "seeds_done.jsonl"
	FileSummary      = "summary.json"
)

func files(dir string) outputFiles {
	return outputFiles{
		QA:           filepath.Join(dir, FileQA),
		Trajectories: filepath.Join(dir, FileTrajectories),
		Trees:        filepath.Join(dir, FileTrees),
		Done:         filepath.Join(dir, FileDone),
		Summary:      filepath.Join(dir, FileSummary),
	}
}

// abs resolves p against dir.
func abs(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

var (
	typed     = phases.NewTyped(ParseSettings)
	typedSeed = phases.NewTyped(ParseSeedSettings)
	typedLane = phases.NewTyped(ParseLaneSettings)
)
