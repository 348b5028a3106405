package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/flockrun/flock/grading"
)

// Grading is what decides a sample's grade besides the task's own
// references and verifier; the manifest records it so that a re-run can
// tell (and say) that the grades it keeps are stale.
type Grading struct {
	// BenchmarkSHA256 is the hash of the benchmark file's content.
	BenchmarkSHA256 string       `json:"benchmark_sha256"`
	Metric          string       `json:"metric"`
	Threshold       float64      `json:"threshold"`
	Judge           *JudgeSpec   `json:"judge,omitempty"`
	Verifier        VerifierSpec `json:"verifier"`
}

// grading returns the settings' Grading for a benchmark of that hash.
func (s Settings) grading(benchSHA string) Grading {
	return Grading{BenchmarkSHA256: benchSHA, Metric: s.EvaluationMetric, Threshold: *s.CorrectThreshold,
		Judge: s.Judge, Verifier: s.Verifier}
}

// changes lists, for people, how g differs from the earlier grading old.
func (g Grading) changes(old Grading) []string {
	var out []string
	if old.Metric != g.Metric {
		out = append(out, fmt.Sprintf("metric %s → %s", old.Metric, g.Metric))
	}
	if old.Threshold != g.Threshold {
		out = append(out, fmt.Sprintf("correct_threshold %g → %g", old.Threshold, g.Threshold))
	}
	if digest(old.Judge) != digest(g.Judge) {
		out = append(out, "judge changed")
	}
	if old.Verifier != g.Verifier {
		out = append(out, "verifier changed")
	}
	return out
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// digest is a short hash of v's JSON.
func digest(v any) string {
	b, _ := json.Marshal(v)
	return sha256Hex(b)[:16]
}

// inputHash hashes what the agent sees of a task: a change re-runs its
// samples.
func (t Task) inputHash() string {
	return digest(struct {
		Question string          `json:"q"`
		Kwargs   json.RawMessage `json:"k,omitempty"`
		Messages json.RawMessage `json:"m,omitempty"`
	}{t.Question, t.Kwargs, t.Messages})
}

// gradingHash hashes everything that decides a sample's grade: the
// verifier (the task's or the default) when there is one, else the
// references with the metric, threshold and judge. A change re-grades the
// sample from its stored answer.
func gradingHash(metric string, threshold float64, judge *JudgeSpec, v VerifierSpec, t Task, x extraScorers) string {
	base := baseGradingHash(metric, threshold, judge, v, t)
	if len(x.Metrics) == 0 && len(x.Verifiers) == 0 && x.Primary == "" {
		return base
	}
	return digest(struct {
		Base string       `json:"b"`
		X    extraScorers `json:"x"`
		Refs []string     `json:"r,omitempty"`
		T    float64      `json:"t"`
	}{base, x, t.References, threshold})
}

// extraScorers are the scores beside the base grade (Settings.Metrics,
// Verifiers, Primary).
type extraScorers struct {
	Metrics   []string          `json:"metrics,omitempty"`
	Verifiers map[string]string `json:"verifiers,omitempty"`
	Primary   string            `json:"primary,omitempty"`
}

func (s Settings) extras() extraScorers {
	return extraScorers{Metrics: s.Metrics, Verifiers: s.Verifiers, Primary: s.Primary}
}

func baseGradingHash(metric string, threshold float64, judge *JudgeSpec, v VerifierSpec, t Task) string {
	type key struct {
		Verifier  string     `json:"v,omitempty"`
		TimeoutS  float64    `json:"vt,omitempty"`
		Metric    string     `json:"m,omitempty"`
		Threshold float64    `json:"th,omitempty"`
		Judge     *JudgeSpec `json:"j,omitempty"`
		Refs      []string   `json:"r,omitempty"`
	}
	switch {
	case t.Verifier != "" || v.Command != "":
		cmd := t.Verifier
		if cmd == "" {
			cmd = v.Command
		}
		return digest(key{Verifier: cmd, TimeoutS: v.TimeoutS})
	case metric == MetricNone || len(t.References) == 0:
		// Not graded; the metric still labels the row.
		return digest(key{Metric: metric})
	}
	k := key{Metric: metric, Threshold: threshold, Refs: t.References}
	if metric == grading.NameLLMJudgement {
		k.Judge = judge
	}
	return digest(k)
}

// idList names up to 10 ids for a notice.
func idList(ids []string) string {
	slices.Sort(ids)
	if len(ids) > 10 {
		return strings.Join(ids[:10], ", ") + fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return strings.Join(ids, ", ")
}
