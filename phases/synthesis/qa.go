package synthesis

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	cfgpkg "github.com/flockrun/flock/synthesis/config"
	"github.com/flockrun/flock/synthesis/qa"
	"github.com/flockrun/flock/synthesis/selector"
	"github.com/flockrun/flock/synthesis/trajectory"
)

// Selection is the seed's selected paths, best first, with their scores.
type Selection struct {
	Paths []selector.Scored `json:"paths"`
}

// selectPaths runs the selector on the finished tree with the config's
// options and the concrete tools offered.
func selectPaths(s *SeedSettings, tree *trajectory.Tree) Selection {
	w := s.Config.SelectionWeights
	opts := selector.Options{
		MinDepth: s.Config.MinDepth, MaxDepth: s.Config.MaxDepth, MaxSelected: s.Config.MaxSelectedTraj,
		SimilarityThreshold: *s.Config.PathSimilarityThreshold, Tools: s.Tools(),
		Weights: selector.Weights{Depth: w.Depth, Richness: w.Richness, Diversity: w.Diversity},
	}
	return Selection{Paths: selector.Select(*tree, opts)}
}

func readSelection(s phases.State) (*Selection, error) {
	i := phases.Last(s, EntrySelection)
	if i < 0 {
		return nil, fmt.Errorf("%w: no selection entry", ErrState)
	}
	var sel Selection
	if err := json.Unmarshal(s.Entry(i).Data, &sel); err != nil {
		return nil, fmt.Errorf("%w: selection entry: %v", ErrState, err)
	}
	return &sel, nil
}

// selectionIn finds a selection among entries about to be appended.
func selectionIn(entries []phases.Entry) *Selection {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type == EntrySelection {
			var sel Selection
			if json.Unmarshal(entries[i].Data, &sel) == nil {
				return &sel
			}
		}
	}
	return nil
}

func checkOptions(c *cfgpkg.Config) qa.CheckOptions {
	o := qa.DefaultCheckOptions()
	o.MinHops = c.MinHops
	return o
}

func qaInput(s *SeedSettings, p trajectory.Path) qa.Input {
	tips, _ := cfgpkg.Tips(s.Config.SynthesisTips)
	var ex []qa.Example
	for _, e := range s.Config.QAExamples {
		ex = append(ex, qa.Example{Question: e.Question, Answer: e.Answer})
	}
	return qa.Input{Seed: s.Seed, SeedDescription: s.Config.SeedDescription, SynthesisTips: tips,
		Examples: ex, Path: p, Limits: checkOptions(&s.Config)}
}

func messages(ms []qa.Message) []operations.Message {
	out := make([]operations.Message, len(ms))
	for i, m := range ms {
		out[i] = operations.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// qaRequest is the generate request of a QA attempt or a closed-book
// question.
func qaRequest(s *SeedSettings, sel *Selection, w work) (operations.Request, error) {
	if w.Path < 0 || w.Path >= len(sel.Paths) {
		return operations.Request{}, fmt.Errorf("%w: qa work for path %d of %d", ErrState, w.Path, len(sel.Paths))
	}
	if w.Kind == workClosed {
		t := 0.0
		r := operations.NewGenerate(operations.GenerateRequest{Model: s.Config.ClosedBookModel,
			Messages: messages(qa.ClosedBookPrompt(w.QA.Question)), Temperature: &t})
		r.Meta = operations.Meta{operations.MetaRole: RoleClosedBook}
		return r, nil
	}
	t := math.Round(qa.Temperature(w.Attempt)*100) / 100
	path := sel.Paths[w.Path].Path
	r := operations.NewGenerate(operations.GenerateRequest{Model: s.Config.ModelName,
		Messages: messages(qa.Prompt(qaInput(s, path), w.Attempt, w.Feedback)), Temperature: &t})
	// The labels say what the prompt says in words: the role, the attempt
	// and the steps whose calls failed.
	r.Meta = operations.Meta{operations.MetaRole: RoleSynthesizer, operations.MetaAttempt: strconv.Itoa(max(w.Attempt, 1))}
	var failed []string
	for i, n := range path.Nodes {
		if n.Failed {
			failed = append(failed, strconv.Itoa(i+1))
		}
	}
	if len(failed) > 0 {
		r.Meta[operations.MetaFailedSteps] = strings.Join(failed, ",")
	}
	return r, nil
}

// QARecord is one line of synthesized_qa.jsonl.
type QARecord struct {
	QAID         string           `json:"qa_id"`
	Question     string           `json:"question"`
	Answer       string           `json:"answer"`
	Steps        []trajectory.Hop `json:"reasoning_steps"`
	TrajectoryID string           `json:"trajectory_id"`
	SourceID     string           `json:"source_id"`
	Seed         string           `json:"seed"`
	ChecksPassed []string         `json:"checks_passed"`
	Attempts     int              `json:"attempts"`
	Metadata     QAMetadata       `json:"metadata"`
}

// QAMetadata is AgentFlow's metadata of a QA line, plus the path's score.
type QAMetadata struct {
	SeedDescription string  `json:"seed_description,omitempty"`
	TrajectoryDepth int     `json:"trajectory_depth"`
	Score           float64 `json:"score"`
}

// Rejected is a selected path whose QA failed every attempt.
type Rejected struct {
	TrajectoryID string `json:"trajectory_id"`
	Check        string `json:"check"`
	Reason       string `json:"reason"`
	Attempts     int    `json:"attempts"`
}

// Reasons a QA attempt fails besides the checks.
const (
	rejectParse      = "parse"
	rejectModelError = "model_error"
)

// onQA takes a QA attempt: a reply that parses and passes the checks is
// kept (or goes to the closed-book filter when it is on); otherwise the
// reason is fed into the next attempt, up to max_retries.
func onQA(s *SeedSettings, st *seedState, out *phases.Output, sel *Selection, w work, r operations.Result) {
	p := sel.Paths[w.Path]
	check, reason := "", ""
	var pair trajectory.QA
	var passed []string
	g := operations.Generate.Result(r)
	switch {
	case r.Error != "":
		check, reason = rejectModelError, r.Error
	case g == nil || len(g.Outputs) == 0:
		check, reason = rejectModelError, "the model returned no output"
	default:
		var err error
		if pair, err = qa.Parse(g.Outputs[0].Content); err != nil {
			check, reason = rejectParse, err.Error()
		} else {
			var f *qa.Failure
			if passed, f = qa.Check(pair, p.Path, checkOptions(&s.Config)); f != nil {
				check, reason = f.Check, f.Error()
			}
		}
	}
	if check == "" {
		if s.Config.ClosedBook {
			st.Queue = append(st.Queue, work{Kind: workClosed, Path: w.Path, Attempt: w.Attempt, QA: &pair, Passed: passed})
			return
		}
		keep(s, st, out, p, w.Attempt, pair, passed)
		return
	}
	retry(s, st, out, p, w, check, reason)
}

// onClosedBook takes the closed-book answer: a model that answered
// without the trajectory rejects the pair (another attempt follows).
func onClosedBook(s *SeedSettings, st *seedState, out *phases.Output, sel *Selection, w work, r operations.Result) {
	p := sel.Paths[w.Path]
	g := operations.Generate.Result(r)
	if r.Error != "" || g == nil || len(g.Outputs) == 0 {
		// The filter could not run: the pair is not kept unverified.
		msg := r.Error
		if msg == "" {
			msg = "the model returned no output"
		}
		retry(s, st, out, p, w, rejectModelError, "closed-book model: "+msg)
		return
	}
	if f := qa.ClosedBook(g.Outputs[0].Content, w.QA.Answer); f != nil {
		retry(s, st, out, p, w, f.Check, f.Error())
		return
	}
	keep(s, st, out, p, w.Attempt, *w.QA, append(append([]string(nil), w.Passed...), qa.CheckClosedBook))
}

func keep(s *SeedSettings, st *seedState, out *phases.Output, p selector.Scored, attempt int, pair trajectory.QA, passed []string) {
	st.Stats.QAKept++
	out.Append = append(out.Append, phases.MustEntry(EntryQA, QARecord{
		QAID: p.Path.ID + "_qa_0", Question: pair.Question, Answer: pair.Answer, Steps: pair.ReasoningSteps,
		TrajectoryID: p.Path.ID, SourceID: p.Path.SourceID, Seed: s.Seed.Content, ChecksPassed: passed, Attempts: attempt,
		Metadata: QAMetadata{SeedDescription: s.Config.SeedDescription, TrajectoryDepth: len(p.Path.Nodes), Score: p.Score},
	}))
}

func retry(s *SeedSettings, st *seedState, out *phases.Output, p selector.Scored, w work, check, reason string) {
	if st.Stats.CheckFailures == nil {
		st.Stats.CheckFailures = map[string]int{}
	}
	st.Stats.CheckFailures[check]++
	if w.Attempt < s.Config.MaxRetries {
		st.Queue = append(st.Queue, work{Kind: workQA, Path: w.Path, Attempt: w.Attempt + 1, Feedback: reason})
		return
	}
	if st.Stats.QARejected == nil {
		st.Stats.QARejected = map[string]int{}
	}
	st.Stats.QARejected[check]++
	out.Append = append(out.Append, phases.MustEntry(EntryRejected, Rejected{TrajectoryID: p.Path.ID, Check: check, Reason: reason, Attempts: w.Attempt}))
}

// TrajectoryRecord is one line of trajectories.jsonl: a selected path
// with every node's intent, tool, params and observation.
type TrajectoryRecord struct {
	TrajectoryID string             `json:"trajectory_id"`
	SourceID     string             `json:"source_id"`
	SeedData     string             `json:"seed_data"`
	TotalDepth   int                `json:"total_depth"`
	Score        float64            `json:"score"`
	Parts        map[string]float64 `json:"score_parts"`
	Nodes        []trajectory.Node  `json:"nodes"`
}

// TreeRecord is one line of trees.jsonl: a seed's whole tree.
type TreeRecord struct {
	SourceID string `json:"source_id"`
	trajectory.Tree
}

// writeOps are the appends of the seed's lines, one write per file, so a
// kill leaves no torn line and a repeated append (after a crash) is
// skipped by the files handler. pending are entries of this step not yet
// in the state.
func writeOps(in phases.Input, s *SeedSettings, tree *trajectory.Tree, pending []phases.Entry) ([]operations.Request, error) {
	var qaLines, trajLines strings.Builder
	add := func(b *strings.Builder, v any) error {
		line, err := phases.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
		return nil
	}
	all := make([]phases.Entry, 0, in.State.Len()+len(pending))
	for i := 0; i < in.State.Len(); i++ {
		all = append(all, in.State.Entry(i))
	}
	all = append(all, pending...)
	var sel Selection
	for _, e := range all {
		switch e.Type {
		case EntryQA:
			var r QARecord
			if err := json.Unmarshal(e.Data, &r); err != nil {
				return nil, fmt.Errorf("%w: qa entry: %v", ErrState, err)
			}
			if err := add(&qaLines, r); err != nil {
				return nil, err
			}
		case EntrySelection:
			if err := json.Unmarshal(e.Data, &sel); err != nil {
				return nil, fmt.Errorf("%w: selection entry: %v", ErrState, err)
			}
		}
	}
	for _, p := range sel.Paths {
		if err := add(&trajLines, TrajectoryRecord{TrajectoryID: p.Path.ID, SourceID: p.Path.SourceID, SeedData: s.Seed.Content,
			TotalDepth: len(p.Path.Nodes), Score: p.Score,
			Parts: map[string]float64{"depth": p.Depth, "richness": p.Richness, "diversity": p.Diversity}, Nodes: p.Path.Nodes}); err != nil {
			return nil, err
		}
	}
	treeLine, err := phases.Marshal(TreeRecord{SourceID: s.Seed.ID, Tree: *tree})
	if err != nil {
		return nil, err
	}
	f := files(s.Config.OutputDir)
	ops := []operations.Request{operations.NewWriteFile(f.Trees, string(treeLine)+"\n", true)}
	if trajLines.Len() > 0 {
		ops = append(ops, operations.NewWriteFile(f.Trajectories, trajLines.String(), true))
	}
	if qaLines.Len() > 0 {
		ops = append(ops, operations.NewWriteFile(f.QA, qaLines.String(), true))
	}
	return ops, nil
}
