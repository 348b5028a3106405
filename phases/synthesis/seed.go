package synthesis

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/synthesis/trajectory"
)

// SeedName is the workflow of one seed: the sampler, the selector and the
// synthesizer of that seed, and its lines of the output files.
const SeedName = "synthesis.seed"

// Phase names of the seed workflow.
const (
	PhaseStart   = "start"
	PhaseStep    = "step"
	PhaseWritten = "written"
	PhaseFinish  = "finish"
)

// Entry types of a seed run.
const (
	// EntryNode is one node of the tree (trajectory.Node), appended as it
	// is created: the entries are the tree, persisted as it grows.
	EntryNode = "node"
	// EntryEnded is a planned child that was not grown (Ended).
	EntryEnded = "ended"
	// EntrySelection is the selected paths with their scores (Selection).
	EntrySelection = "selection"
	// EntryQA is a QA pair that passed every check (QARecord).
	EntryQA = "qa"
	// EntryRejected is a selected path whose QA failed every attempt
	// (Rejected).
	EntryRejected = "qa_rejected"
)

// Ended is a planned child of Parent that was not grown, and why:
// "duplicate" (every proposal repeated an action taken for this seed),
// "bad_proposal" (no proposal parsed) or "model_error" (the model call
// failed).
type Ended struct {
	Parent string `json:"parent"`
	Child  int    `json:"child"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Work kinds.
const (
	workPropose = "propose"
	workExecute = "execute"
	workQA      = "qa"
	workClosed  = "closed_book"
)

// work is one model or tool call a seed run has to make.
type work struct {
	Kind string `json:"kind"`
	// Parent and Child name the node a propose or execute work grows:
	// Parent + "." + Child.
	Parent string `json:"parent,omitempty"`
	Child  int    `json:"child,omitempty"`
	// Attempt counts re-asks (propose) or QA attempts from 1 (qa).
	Attempt  int    `json:"attempt,omitempty"`
	Feedback string `json:"feedback,omitempty"`
	// Proposal is what an execute work runs.
	Proposal *Proposal `json:"proposal,omitempty"`
	// Path indexes the selection (qa, closed_book); QA and Passed are the
	// pair a closed_book work tests.
	Path   int            `json:"path,omitempty"`
	QA     *trajectory.QA `json:"qa_pair,omitempty"`
	Passed []string       `json:"passed,omitempty"`
}

func (w work) node() string { return w.Parent + "." + strconv.Itoa(w.Child) }

// Stages of a seed run.
const (
	stageSample = "sample"
	stageQA     = "qa"
	stageWrite  = "write"
)

// seedState is the seed run's var "seed": the queue of calls to make, the
// calls in flight (in request order) and counters. The tree itself is
// the node entries.
type seedState struct {
	Version  int    `json:"version"`
	Stage    string `json:"stage"`
	Queue    []work `json:"queue,omitempty"`
	Inflight []work `json:"inflight,omitempty"`
	Stats    Stats  `json:"stats"`
}

// Stats are a seed's counters, its line of seeds_done.jsonl with its ids.
type Stats struct {
	Nodes      int `json:"nodes"`
	ModelCalls int `json:"model_calls"`
	ToolCalls  int `json:"tool_calls"`
	// FailedTools counts tool calls whose observation is an error.
	FailedTools int `json:"failed_tools"`
	// Reasks counts proposals asked again; Duplicates the proposals that
	// repeated an action; Ended the planned children not grown.
	Reasks     int            `json:"reasks"`
	Duplicates int            `json:"duplicates"`
	Ended      int            `json:"ended"`
	Tokens     int            `json:"tokens"`
	Cost       float64        `json:"cost"`
	Selected   int            `json:"selected"`
	QAKept     int            `json:"qa_kept"`
	QARejected map[string]int `json:"qa_rejected,omitempty"`
	// CheckFailures counts failed QA attempts by check.
	CheckFailures map[string]int `json:"check_failures,omitempty"`
}

func (s *Stats) add(o Stats) {
	s.Nodes += o.Nodes
	s.ModelCalls += o.ModelCalls
	s.ToolCalls += o.ToolCalls
	s.FailedTools += o.FailedTools
	s.Reasks += o.Reasks
	s.Duplicates += o.Duplicates
	s.Ended += o.Ended
	s.Tokens += o.Tokens
	s.Cost += o.Cost
	s.Selected += o.Selected
	s.QAKept += o.QAKept
	for k, v := range o.QARejected {
		if s.QARejected == nil {
			s.QARejected = map[string]int{}
		}
		s.QARejected[k] += v
	}
	for k, v := range o.CheckFailures {
		if s.CheckFailures == nil {
			s.CheckFailures = map[string]int{}
		}
		s.CheckFailures[k] += v
	}
}

const (
	varSeed      = "seed"
	stateVersion = 1
)

func getSeedState(s phases.State) (seedState, error) {
	var st seedState
	ok, err := phases.GetVar(s, varSeed, &st)
	if err == nil && !ok {
		err = fmt.Errorf("%w: var %q is not set", ErrState, varSeed)
	}
	return st, err
}

func init() {
	phases.Register(Workflow())
	phases.Register(LaneWorkflow())
	phases.Register(SeedWorkflow())
}

// SeedWorkflow returns the seed workflow's declaration.
func SeedWorkflow() phases.Workflow {
	return phases.Workflow{
		Name:        SeedName,
		Description: "Synthesis of one seed: grows its trajectory tree over sandbox tools, selects paths, writes checked multi-hop QA and appends the seed's lines to the output files.",
		Start:       PhaseStart,
		Phases: []phases.PhaseSpec{
			{Name: PhaseStart, Run: typedSeed.Phase(Start), Next: []string{PhaseStep, PhaseWritten}},
			{Name: PhaseStep, Run: typedSeed.Phase(Step), Next: []string{PhaseStep, PhaseWritten}},
			{Name: PhaseWritten, Run: typedSeed.Phase(Written), Next: []string{PhaseFinish}},
			{Name: PhaseFinish, Run: typedSeed.Phase(Finish)},
		},
		Settings: SeedSettings{},
	}
}

// readTree rebuilds the tree from the node and ended entries.
func readTree(s phases.State, seed trajectory.Seed) (trajectory.Tree, error) {
	t := trajectory.Tree{Seed: seed}
	index := map[string]int{}
	var ended []Ended
	for i := 0; i < s.Len(); i++ {
		e := s.Entry(i)
		switch e.Type {
		case EntryNode:
			var n trajectory.Node
			if err := json.Unmarshal(e.Data, &n); err != nil {
				return t, fmt.Errorf("%w: node entry %d: %v", ErrState, i, err)
			}
			index[n.ID] = len(t.Nodes)
			t.Nodes = append(t.Nodes, n)
			if p, ok := index[n.ParentID]; ok && n.ParentID != "" {
				t.Nodes[p].Children = append(t.Nodes[p].Children, n.ID)
			}
		case EntryEnded:
			var x Ended
			if err := json.Unmarshal(e.Data, &x); err != nil {
				return t, fmt.Errorf("%w: ended entry %d: %v", ErrState, i, err)
			}
			ended = append(ended, x)
		}
	}
	for _, x := range ended {
		if p, ok := index[x.Parent]; ok && t.Nodes[p].Ended == "" {
			t.Nodes[p].Ended = x.Reason
		}
	}
	return t, nil
}

// pathTo returns the nodes from the root's first child down to id.
func pathTo(t *trajectory.Tree, id string) []trajectory.Node {
	var rev []trajectory.Node
	for id != "" && id != rootID {
		n := t.Node(id)
		if n == nil {
			break
		}
		rev = append(rev, *n)
		id = n.ParentID
	}
	out := make([]trajectory.Node, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
	}
	return out
}

const rootID = "0"

// taken returns the signatures of the tree's actions in creation order.
func taken(t *trajectory.Tree) []string {
	var out []string
	for _, n := range t.Nodes {
		if n.Tool != "" {
			out = append(out, Signature(n.Tool, n.Params))
		}
	}
	return out
}

// Start creates the root (the seed at depth 0) and asks for the first
// actions.
func Start(in phases.Input, s *SeedSettings) (phases.Output, error) {
	root := trajectory.Node{ID: rootID, Depth: 0, Observation: "Starting point: " + s.Seed.Content}
	st := seedState{Version: stateVersion, Stage: stageSample}
	for i := 0; i < s.Config.Children(0); i++ {
		st.Queue = append(st.Queue, work{Kind: workPropose, Parent: rootID, Child: i})
	}
	tree := trajectory.Tree{Seed: s.Seed, Nodes: []trajectory.Node{root}}
	out := phases.Output{Append: []phases.Entry{phases.MustEntry(EntryNode, root)}}
	return dispatch(in, s, &tree, st, out)
}

// Step takes the results of the calls in flight (proposals, tool calls, QA
// attempts, closed-book answers), records what they grew and queues what
// follows; then it sends the next calls, at most the seed's share of
// max_concurrency at once.
func Step(in phases.Input, s *SeedSettings) (phases.Output, error) {
	st, err := getSeedState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	if len(in.Results) != len(st.Inflight) {
		return phases.Output{}, fmt.Errorf("%w: %d results for %d calls in flight", ErrState, len(in.Results), len(st.Inflight))
	}
	if end := phases.FatalEnd(in.Results); end != nil {
		// The model cannot serve the calls (a refused key, an unknown
		// model, a rate limit not to be outwaited): no re-ask can help. The
		// seed fails unwritten, so a re-run after the fix runs it again.
		return phases.Output{End: end}, nil
	}
	tree, err := readTree(in.State, s.Seed)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	var sel *Selection
	if st.Stage != stageSample {
		if sel, err = readSelection(in.State); err != nil {
			return out, err
		}
	}
	claimed := map[string]bool{}
	for _, sig := range taken(&tree) {
		claimed[sig] = true
	}
	for _, w := range append(append([]work(nil), st.Inflight...), st.Queue...) {
		if w.Kind == workExecute {
			claimed[Signature(w.Proposal.Tool, w.Proposal.Params)] = true
		}
	}
	names := toolNames(s.Tools())
	for i, w := range st.Inflight {
		r := in.Results[i]
		if g := operations.Generate.Result(r); g != nil {
			st.Stats.ModelCalls++
			st.Stats.Tokens += g.Usage.PromptTokens + g.Usage.CompletionTokens
			st.Stats.Cost += g.Usage.Cost
		} else if w.Kind == workPropose || w.Kind == workQA || w.Kind == workClosed {
			st.Stats.ModelCalls++
		}
		switch w.Kind {
		case workPropose:
			onProposal(s, &st, &out, w, r, names, claimed)
		case workExecute:
			n := onExecuted(s, &st, &tree, w, r)
			out.Append = append(out.Append, phases.MustEntry(EntryNode, n))
		case workQA:
			onQA(s, &st, &out, sel, w, r)
		case workClosed:
			onClosedBook(s, &st, &out, sel, w, r)
		default:
			return out, fmt.Errorf("%w: work kind %q", ErrState, w.Kind)
		}
	}
	st.Inflight = nil
	return dispatch(in, s, &tree, st, out)
}

// onProposal takes a proposal: a new action is queued for execution and
// claims its signature; a duplicate, an unparsable reply or a failed call
// is asked again with the reason, up to max_reasks times, then the branch
// ends.
func onProposal(s *SeedSettings, st *seedState, out *phases.Output, w work, r operations.Result, names map[string]string, claimed map[string]bool) {
	reason, detail := "", ""
	var p Proposal
	g := operations.Generate.Result(r)
	switch {
	case r.Error != "":
		reason, detail = "model_error", r.Error
	case g == nil || len(g.Outputs) == 0:
		reason, detail = "model_error", "the model returned no output"
	default:
		var err error
		if p, err = ParseProposal(g.Outputs[0], names); err != nil {
			reason, detail = "bad_proposal", err.Error()
		} else if sig := Signature(p.Tool, p.Params); claimed[sig] {
			st.Stats.Duplicates++
			reason, detail = "duplicate", "the action "+clip(sig, signatureChars)+" was already taken for this seed"
		} else {
			claimed[sig] = true
			p.Params = CanonicalParams(p.Params)
			st.Queue = append(st.Queue, work{Kind: workExecute, Parent: w.Parent, Child: w.Child, Proposal: &p})
			return
		}
	}
	if w.Attempt < *s.Config.MaxReasks {
		st.Stats.Reasks++
		st.Queue = append(st.Queue, work{Kind: workPropose, Parent: w.Parent, Child: w.Child, Attempt: w.Attempt + 1, Feedback: detail})
		return
	}
	st.Stats.Ended++
	out.Append = append(out.Append, phases.MustEntry(EntryEnded, Ended{Parent: w.Parent, Child: w.Child, Reason: reason, Detail: detail}))
}

// onExecuted turns a tool call's result into the node it grows, adds it
// to tree and queues its children's proposals.
func onExecuted(s *SeedSettings, st *seedState, tree *trajectory.Tree, w work, r operations.Result) trajectory.Node {
	st.Stats.ToolCalls++
	st.Stats.Nodes++
	parent := tree.Node(w.Parent)
	depth := 1
	if parent != nil {
		depth = parent.Depth + 1
	}
	obs, failed := Observation(w.Proposal.Tool, r)
	if failed {
		st.Stats.FailedTools++
	}
	n := trajectory.Node{ID: w.node(), ParentID: w.Parent, Depth: depth, Intent: w.Proposal.Intent,
		Tool: w.Proposal.Tool, Params: w.Proposal.Params, Observation: obs, Failed: failed}
	tree.Nodes = append(tree.Nodes, n)
	if parent = tree.Node(w.Parent); parent != nil {
		parent.Children = append(parent.Children, n.ID)
	}
	for i := 0; i < s.Config.Children(depth); i++ {
		st.Queue = append(st.Queue, work{Kind: workPropose, Parent: n.ID, Child: i})
	}
	return n
}

// dispatch sends the next calls from the queue (at most PerSeed at once);
// when none is left in a stage it moves to the next: selection and QA
// after sampling, the output files after QA.
func dispatch(in phases.Input, s *SeedSettings, tree *trajectory.Tree, st seedState, out phases.Output) (phases.Output, error) {
	if len(st.Queue) == 0 && st.Stage == stageSample {
		sel := selectPaths(s, tree)
		st.Stats.Selected = len(sel.Paths)
		out.Append = append(out.Append, phases.MustEntry(EntrySelection, sel))
		st.Stage = stageQA
		for i := range sel.Paths {
			st.Queue = append(st.Queue, work{Kind: workQA, Path: i, Attempt: 1})
		}
	}
	if len(st.Queue) == 0 && st.Stage == stageQA {
		st.Stage = stageWrite
		ops, err := writeOps(in, s, tree, out.Append)
		if err != nil {
			return out, err
		}
		out.Ops = ops
		out.Next = PhaseWritten
		return out, out.SetVar(varSeed, st)
	}
	n := min(len(st.Queue), PerSeed(&s.Config))
	st.Inflight = append([]work(nil), st.Queue[:n]...)
	st.Queue = append([]work(nil), st.Queue[n:]...)
	var sel *Selection
	for i, w := range st.Inflight {
		key := strconv.Itoa(i)
		switch w.Kind {
		case workPropose:
			msgs := ProposalPrompt(&s.Config, s.Seed, w.node(), s.Tools(), s.SandboxTools, pathTo(tree, w.Parent), taken(tree), w.Feedback)
			out.Ops = append(out.Ops, proposalRequest(&s.Config, s.Tools(), s.SandboxTools, msgs, w.node(), w.Attempt+1))
		case workExecute:
			out.Ops = append(out.Ops, executeRequest(s, tree, w))
		case workQA, workClosed:
			if sel == nil {
				var err error
				if sel, err = readSelection(in.State); err != nil {
					// The selection may be in this output, not yet in the state.
					if sel = selectionIn(out.Append); sel == nil {
						return out, err
					}
				}
			}
			req, err := qaRequest(s, sel, w)
			if err != nil {
				return out, err
			}
			req.Meta["work"] = key
			out.Ops = append(out.Ops, req)
		}
	}
	out.Next = PhaseStep
	return out, out.SetVar(varSeed, st)
}

// executeRequest is the sandbox call of an execute work: on the branch's
// own session (named after its node), forked from the nearest ancestor's
// that has one; the seed's kwargs fill in params the model did not set.
func executeRequest(s *SeedSettings, tree *trajectory.Tree, w work) operations.Request {
	params := w.Proposal.Params
	if len(s.Seed.Kwargs) > 0 {
		var m map[string]any
		if json.Unmarshal(params, &m) == nil {
			keys := make([]string, 0, len(s.Seed.Kwargs))
			for k := range s.Seed.Kwargs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if _, set := m[k]; !set {
					m[k] = s.Seed.Kwargs[k]
				}
			}
			if b, err := json.Marshal(m); err == nil {
				params = b
			}
		}
	}
	var fork []string
	for id := w.Parent; id != ""; {
		fork = append(fork, "n"+id)
		n := tree.Node(id)
		if n == nil {
			break
		}
		id = n.ParentID
	}
	r := operations.Request{Kind: operations.KindSandbox, Params: &operations.SandboxRequest{
		Action: w.Proposal.Tool, Params: params, TimeoutS: s.Config.SandboxTimeout,
		Session: "n" + w.node(), ForkFrom: fork}}
	r.Meta = operations.Meta{"work": w.node()}
	return r
}

// Written checks the output appends, then appends the seed's line to
// seeds_done.jsonl: the mark that the seed is finished.
func Written(in phases.Input, s *SeedSettings) (phases.Output, error) {
	st, err := getSeedState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var errs []string
	for _, r := range in.Results {
		if r.Error != "" {
			errs = append(errs, r.Error)
		}
	}
	if len(errs) > 0 {
		return phases.Output{End: &phases.End{Failed: true, Reason: "write_error: " + strings.Join(errs, "; ")}}, nil
	}
	line, err := phases.Marshal(DoneLine{SourceID: s.Seed.ID, Index: s.Seed.Index, Stats: st.Stats})
	if err != nil {
		return phases.Output{}, err
	}
	f := files(s.Config.OutputDir)
	return phases.Output{Ops: []operations.Request{operations.NewWriteFile(f.Done, string(line)+"\n", true)}, Next: PhaseFinish}, nil
}

// Finish ends the run with the seed's stats as its result.
func Finish(in phases.Input, s *SeedSettings) (phases.Output, error) {
	st, err := getSeedState(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	for _, r := range in.Results {
		if r.Error != "" {
			return phases.Output{End: &phases.End{Failed: true, Reason: "write_error: " + r.Error}}, nil
		}
	}
	res, err := phases.Marshal(DoneLine{SourceID: s.Seed.ID, Index: s.Seed.Index, Stats: st.Stats})
	if err != nil {
		return phases.Output{}, err
	}
	return phases.Output{End: &phases.End{Reason: "seed_done", Result: res}}, nil
}

// DoneLine is one line of seeds_done.jsonl: a finished seed and its stats.
type DoneLine struct {
	SourceID string `json:"source_id"`
	Index    int    `json:"index"`
	Stats
}
