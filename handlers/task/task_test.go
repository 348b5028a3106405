package task

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/phasetest"
)

func TestParseScore(t *testing.T) {
	tests := []struct {
		name, out string
		score     float64
		msg, err  string
	}{
		{name: "json", out: "running tests\n{\"score\": 0.75, \"message\": \"3 of 4\"}\n", score: 0.75, msg: "3 of 4"},
		{name: "number", out: "noise\n1\n", score: 1},
		{name: "negative float", out: "-0.5", score: -0.5},
		{name: "object message", out: `{"score": 1, "message": {"passed": 3}}`, score: 1, msg: `{"passed": 3}`},
		{name: "empty", out: "  \n", err: "printed nothing"},
		{name: "no score", out: `{"message": "x"}`, err: `no numeric "score"`},
		{name: "garbage", out: "all good", err: "neither JSON nor a number"},
		{name: "bad json", out: `{"score": }`, err: "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseScore(tt.out)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || *got.Score != tt.score || got.Message != tt.msg {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func env(t *testing.T, settings string) handlers.Env {
	t.Helper()
	rs, err := configs.ParseRunSettings([]byte(settings))
	if err != nil {
		t.Fatal(err)
	}
	st := &phasetest.State{Log: []phases.Entry{
		phases.MustEntry("score", operations.ScoreLogEntry{ElapsedSeconds: 3, Score: new(float64), Message: "first"}),
		phases.MustEntry("note", map[string]string{}),
	}}
	return handlers.Env{RunID: "r", OpID: "r/1/0", WorkDir: t.TempDir(), Task: "do the thing", Settings: rs, State: st,
		Usage: func() (operations.RunUsage, operations.RunLimits) {
			return operations.RunUsage{Tokens: 7, Actions: 2}, operations.RunLimits{Tokens: 100}
		}}
}

func TestHandle(t *testing.T) {
	h := New()
	ctx := context.Background()
	e := env(t, `{"scoring":{"command":"test -f answer.txt && echo '{\"score\": 1, \"message\": \"found\"}' || echo 0","intermediate":true,"timeout_s":5}}`)

	res := h.Handle(ctx, e, operations.NewScore())
	if res.Error != "" || *operations.Score.Result(res).Score != 0 {
		t.Fatalf("score before the file exists: %+v", res)
	}
	if out := h.Handle(ctx, e, operations.NewSubmit("x")); !operations.Submit.Result(out).Accepted {
		t.Fatalf("submit: %+v", out)
	}
	if err := writeFile(e.WorkDir, "answer.txt"); err != nil {
		t.Fatal(err)
	}
	res = h.Handle(ctx, e, operations.NewScore())
	if res.Error != "" || *operations.Score.Result(res).Score != 1 || operations.Score.Result(res).Message != "found" {
		t.Fatalf("score after: %+v", res)
	}
	u := h.Handle(ctx, e, operations.NewGetUsage())
	if operations.GetUsage.Result(u).Usage.Tokens != 7 || operations.GetUsage.Result(u).Limits.Tokens != 100 {
		t.Fatalf("usage: %+v", operations.GetUsage.Result(u))
	}
	task := h.Handle(ctx, e, operations.NewGetTask())
	if operations.GetTask.Result(task).Instructions != "do the thing" || !operations.GetTask.Result(task).Scoring.Intermediate {
		t.Fatalf("task: %+v", operations.GetTask.Result(task))
	}
	log := h.Handle(ctx, e, operations.NewScoreLog())
	if len(operations.ScoreLog.Result(log).Entries) != 1 || operations.ScoreLog.Result(log).Entries[0].Message != "first" {
		t.Fatalf("score log: %+v", operations.ScoreLog.Result(log))
	}
	if r := h.Handle(ctx, e, operations.Request{Kind: operations.KindAction, Params: &operations.ActionRequest{}}); !strings.Contains(r.Error, "type is required") {
		t.Fatalf("action without type: %+v", r)
	}
}

func TestScoreFailures(t *testing.T) {
	tests := []struct {
		name, settings, err string
	}{
		{name: "no scorer", settings: `{}`, err: "no scorer configured"},
		{name: "timeout", settings: `{"scoring":{"command":"sleep 10","timeout_s":0.2}}`, err: "timed out after 0.2s"},
		{name: "crash", settings: `{"scoring":{"command":"echo boom >&2; exit 3"}}`, err: "scorer failed: exit status 3; output: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := New().Handle(context.Background(), env(t, tt.settings), operations.NewScore())
			if !strings.Contains(res.Error, tt.err) {
				t.Fatalf("error = %q, want %q", res.Error, tt.err)
			}
		})
	}
}

func writeFile(dir, name string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
}
