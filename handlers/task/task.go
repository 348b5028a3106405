package task

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/procgroup"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
)

// Handler serves the task operations. The zero value is ready to use: its
// scorer runs under the default isolation policy (isolation.PolicyAuto).
type Handler struct {
	// hidden and policy isolate the scorer command as bash is isolated
	// (Provision sets them from the server's data directory and policy).
	hidden []string
	policy isolation.Policy
}

// Provision takes the operator's isolation policy and the paths the
// scorer must not see (the server's data directory).
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.hidden = deps.Hidden()
	p, err := deps.Isolation()
	h.policy = p
	return err
}

// New returns a Handler.
func New() *Handler { return &Handler{} }

func init() {
	handlers.Register(handlers.Info{ID: "flock.task", Kinds: Kinds(), New: func() handlers.Handler { return New() }})
}

// Kinds lists the operation kinds Handler serves.
func Kinds() []operations.Kind {
	return []operations.Kind{operations.KindSubmit, operations.KindScore, operations.KindScoreLog,
		operations.KindGetUsage, operations.KindGetTask, operations.KindLog, operations.KindAction,
		operations.KindObservation}
}

// Handle implements handlers.Handler.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	res := operations.Result{Kind: req.Kind, Meta: req.Meta}
	switch req.Kind {
	case operations.KindSubmit:
		res.Data = &operations.SubmitResult{Accepted: true}
	case operations.KindGetUsage:
		u, l := env.Usage()
		res.Data = &operations.GetUsageResult{Usage: u, Limits: l}
	case operations.KindGetTask:
		s := env.Settings.Scoring
		res.Data = &operations.GetTaskResult{Instructions: env.Task,
			Scoring: operations.Scoring{Intermediate: s.Intermediate, VisibleToAgent: s.VisibleToAgent || s.Intermediate}}
	case operations.KindLog, operations.KindObservation:
		res.Data = &operations.RecordedResult{Recorded: true}
	case operations.KindAction:
		if p := operations.Action.Params(req); p == nil || p.Type == "" {
			return operations.Failed(req, "action: type is required")
		}
		res.Data = &operations.RecordedResult{Recorded: true}
	case operations.KindScore:
		sc, err := h.Score(ctx, env)
		if err != nil {
			return operations.Failed(req, "score: %v", err)
		}
		res.Data = sc
	case operations.KindScoreLog:
		res.Data = &operations.ScoreLogResult{Entries: scoreLog(env)}
	default:
		return operations.Failed(req, "task handler cannot run %q", req.Kind)
	}
	return res
}

// Score runs the task's scorer command (settings scoring.command) in the
// work directory under its timeout, isolated as the run's bash is, and
// parses its last non-empty output line: {"score": x, "message": "..."} or
// a bare number. A scorer that exits non-zero without a parsable line is an
// error.
func (h *Handler) Score(ctx context.Context, env handlers.Env) (*operations.ScoreResult, error) {
	s := env.Settings.Scoring
	if s.Command == "" {
		return nil, fmt.Errorf("no scorer configured (settings scoring.command)")
	}
	iso, err := h.policy.Resolve(env.Settings.Isolation)
	if err != nil {
		return nil, fmt.Errorf("isolation: %w", err)
	}
	argv, err := isolation.Wrap(iso, env.WorkDir, h.hidden, []string{"bash", "-c", s.Command})
	if err != nil {
		return nil, fmt.Errorf("isolation: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(s.TimeoutS*float64(time.Second)))
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = env.WorkDir
	cmd.Env = isolation.Environ(iso, "HOME="+env.WorkDir, "LANG=C.UTF-8")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	runErr := procgroup.Run(cmd, time.Second)
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("scorer timed out after %gs", s.TimeoutS)
	}
	sc, perr := ParseScore(out.String())
	if perr != nil {
		if runErr != nil {
			text, _ := handlers.Truncate(out.String(), 2000)
			return nil, fmt.Errorf("scorer failed: %v; output: %s", runErr, text)
		}
		return nil, perr
	}
	return sc, nil
}

// ParseScore reads a score from a scorer's output: the last non-empty line
// must be a JSON object with a numeric "score" (and optional "message") or
// a bare number.
func ParseScore(output string) (*operations.ScoreResult, error) {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return nil, fmt.Errorf("scorer printed nothing")
	}
	if strings.HasPrefix(last, "{") {
		var v struct {
			Score   *float64        `json:"score"`
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal([]byte(last), &v); err != nil {
			return nil, fmt.Errorf("scorer's last line is not valid JSON: %v", err)
		}
		if v.Score == nil {
			return nil, fmt.Errorf("scorer's last line has no numeric \"score\"")
		}
		msg := ""
		if len(v.Message) > 0 {
			if err := json.Unmarshal(v.Message, &msg); err != nil {
				msg = string(v.Message)
			}
		}
		return &operations.ScoreResult{Score: v.Score, Message: msg}, nil
	}
	f, err := strconv.ParseFloat(last, 64)
	if err != nil {
		return nil, fmt.Errorf("scorer's last line %q is neither JSON nor a number", trim(last, 200))
	}
	return &operations.ScoreResult{Score: &f}, nil
}

// scoreLog lists the score entries of the run's log (those the score
// result's effects recorded, operations.ScoreResult.Effects).
func scoreLog(env handlers.Env) []operations.ScoreLogEntry {
	out := []operations.ScoreLogEntry{}
	if env.State == nil {
		return out
	}
	for i := 0; i < env.State.Len(); i++ {
		e := env.State.Entry(i)
		if e.Type != record.EntryTypeScore {
			continue
		}
		var s operations.ScoreLogEntry
		if e.Decode(&s) == nil {
			out = append(out, s)
		}
	}
	return out
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

var (
	_ handlers.Handler     = (*Handler)(nil)
	_ handlers.Provisioner = (*Handler)(nil)
)
