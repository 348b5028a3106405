package triframe

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
)

// launch turns a launch_subagents call into spawn operations, or returns
// the error message the agent gets instead.
func launch(in phases.Input, s *Settings, c agent.Call) ([]operations.Request, string) {
	if !s.EnableSubagents {
		return nil, "Error: subagents are not enabled for this run."
	}
	var a agent.LaunchSubagentsArgs
	if err := c.Decode(&a); err != nil {
		return nil, "Error: " + err.Error()
	}
	if len(a.Agents) > s.Subagents.MaxAgents {
		return nil, fmt.Sprintf("Error: at most %d subagents can be launched at once; you asked for %d.", s.Subagents.MaxAgents, len(a.Agents))
	}
	u, l := in.State.Usage()
	limits := shareBudget(u, l, s.Subagents.BudgetShare, len(a.Agents))
	settings, err := childSettings(in.Run.Settings, limits)
	if err != nil {
		return nil, "Error: " + err.Error()
	}
	ops := make([]operations.Request, len(a.Agents))
	for k, sp := range a.Agents {
		id := agentID(in.Run.Step, k)
		ops[k] = operations.NewSpawn(operations.SpawnRequest{
			Workflow: in.Run.Workflow, Settings: settings, Task: subagentTask(sp, in.Run.Task), Name: id,
		}).WithMeta(metaAgent, id).WithMeta(metaIndex, strconv.Itoa(k))
	}
	return ops, ""
}

func agentID(step uint64, k int) string { return fmt.Sprintf("agent_%d_%d", step, k) }

// shareBudget gives each of n agents share/n of what is left of every
// limit (a limit of 0 stays unlimited).
func shareBudget(u operations.RunUsage, l operations.RunLimits, share float64, n int) operations.RunLimits {
	f := share / float64(max(1, n))
	part := func(limit, used float64) float64 {
		if limit <= 0 {
			return 0
		}
		return max(limit-used, 0) * f
	}
	var out operations.RunLimits
	if l.Tokens > 0 {
		out.Tokens = max(1, int(part(float64(l.Tokens), float64(u.Tokens))))
	}
	if l.Actions > 0 {
		out.Actions = max(1, int(part(float64(l.Actions), float64(u.Actions))))
	}
	if l.Seconds > 0 {
		out.Seconds = max(1, math.Floor(part(l.Seconds, u.Seconds)))
	}
	if l.Cost > 0 {
		out.Cost = part(l.Cost, u.Cost)
	}
	return out
}

// childSettings is the parent's settings document with the subagent keys
// and the child's limits set.
func childSettings(parent json.RawMessage, limits operations.RunLimits) (json.RawMessage, error) {
	doc := map[string]json.RawMessage{}
	if err := json.Unmarshal(parent, &doc); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	lim, _ := json.Marshal(limits)
	doc["limits"] = lim
	doc["subagent"] = json.RawMessage("true")
	doc["enable_subagents"] = json.RawMessage("false")
	doc["workflow_type"] = json.RawMessage(`"triframe"`)
	return json.Marshal(doc) // map keys are sorted: deterministic
}

// Subagents records how the subagents ended and starts the tournament
// between those that worked on the same task.
func Subagents(in phases.Input, s *Settings) (phases.Output, error) {
	v, err := loadVars(in, s)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	ch, _, err := lastEntry[Choice](in.State, EntryChoice)
	if err != nil {
		return out, err
	}
	var a agent.LaunchSubagentsArgs
	callID := ""
	if c := ch.Option.Call; c != nil {
		callID = c.ID
		_ = c.Decode(&a)
	}
	entry := SubagentsReport{CallID: callID}
	b := &bracket{}
	for _, r := range in.Results {
		k, err := resultIndex(r)
		if err != nil {
			return phases.Output{}, err
		}
		run := SubagentRun{ID: r.Meta[metaAgent]}
		if k >= 0 && k < len(a.Agents) {
			run.Task, run.Approach = a.Agents[k].Task, a.Agents[k].Approach
		}
		switch sp := operations.Spawn.Result(r); {
		case r.Error != "" || sp == nil:
			run.Status, run.Error = "error", r.Error
		default:
			run.RunID, run.Status, run.EndReason, run.Error = sp.RunID, string(sp.Status), sp.EndReason, sp.Error
			run.Conclusion, run.Report = childResult(sp.Result)
		}
		entry.Agents = append(entry.Agents, run)
		b.add(run.Task, run.ID)
	}
	concluded := 0
	var parts []string
	for _, r := range entry.Agents {
		if r.Concluded() {
			concluded++
		}
		st := r.Status
		if r.EndReason != "" {
			st += " (" + r.EndReason + ")"
		}
		parts = append(parts, r.ID+" "+st)
	}
	entry.Summary = fmt.Sprintf("%d subagents ended, %d concluded: %s", len(entry.Agents), concluded, strings.Join(parts, ", "))
	out.Append = append(out.Append, phases.MustEntry(EntrySubagents, entry))
	return play(in, s, v, out, b, entry, nil)
}

// childResult reads a subagent's run result: the Conclusion JSON its
// conclude wrote, else the raw result text.
func childResult(raw json.RawMessage) (conclusion, report string) {
	if len(raw) == 0 {
		return "", ""
	}
	var c Conclusion
	if json.Unmarshal(raw, &c) == nil && c.Conclusion != "" {
		return c.Conclusion, c.Report
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	return string(raw), ""
}

func (b *bracket) add(task, id string) {
	for i := range b.Groups {
		if b.Groups[i].Task == task {
			b.Groups[i].Alive = append(b.Groups[i].Alive, id)
			return
		}
	}
	b.Groups = append(b.Groups, group{Task: task, Alive: []string{id}})
}

// judgement is a judge's verdict on one match.
type judgement struct {
	winner, reasoning string
	ok                bool
}

// Tournament applies the judges' verdicts of one round and plays on.
func Tournament(in phases.Input, s *Settings) (phases.Output, error) {
	v, err := loadVars(in, s)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	if v.Bracket == nil {
		return out, fmt.Errorf("tournament: no bracket in progress")
	}
	entry, ok, err := lastEntry[SubagentsReport](in.State, EntrySubagents)
	if err != nil || !ok {
		return out, fmt.Errorf("tournament: no subagents entry: %v", err)
	}
	verdicts := map[string]judgement{}
	for _, r := range in.Results {
		if r.Meta[metaRole] != roleJudge {
			continue
		}
		key := r.Meta[metaA] + "|" + r.Meta[metaB]
		j := judgement{}
		if g := operations.Generate.Result(r); r.Error == "" && g != nil && len(g.Outputs) > 0 {
			c, err := agent.ParseStructured(g.Outputs[0], s.Mode(), agent.ToolSelectWinner)
			var w agent.SelectWinnerArgs
			if err == nil && c.Decode(&w) == nil && (w.WinnerID == r.Meta[metaA] || w.WinnerID == r.Meta[metaB]) {
				j = judgement{winner: w.WinnerID, reasoning: w.Reasoning, ok: true}
			}
		}
		verdicts[key] = j
	}
	return play(in, s, v, out, v.Bracket, entry, verdicts)
}

// play resolves the current round with verdicts (nil: no round is under
// judgement yet), then resolves rounds that need no judge, until a round
// needs judges (their generates are emitted, next: tournament) or every
// task has a single winner (the result goes to the agent, next: advisor).
func play(in phases.Input, s *Settings, v vars, out phases.Output, b *bracket, entry SubagentsReport, verdicts map[string]judgement) (phases.Output, error) {
	runs := make(map[string]SubagentRun, len(entry.Agents))
	for _, r := range entry.Agents {
		runs[r.ID] = r
	}
	judging := verdicts != nil
	for {
		if !judging {
			if b.done() {
				return finishTournament(in, s, v, out, b, entry)
			}
			b.Round++
			ops := judgeOps(s, b, runs)
			if len(ops) > 0 {
				out.Ops = ops
				v.Bracket = b
				if err := out.SetVar(varState, v); err != nil {
					return out, err
				}
				out.Next = PhaseTournament
				return out, nil
			}
		}
		judging = false
		matches := b.resolve(runs, verdicts)
		verdicts = nil
		var parts []string
		for _, m := range matches {
			switch m.How {
			case "bye":
				parts = append(parts, m.A+" advances (bye)")
			default:
				loser := m.A
				if loser == m.Winner {
					loser = m.B
				}
				parts = append(parts, fmt.Sprintf("%s beats %s (%s)", m.Winner, loser, m.How))
			}
		}
		out.Append = append(out.Append, phases.MustEntry(EntryTournament, TournamentRound{
			Summary: fmt.Sprintf("round %d: %s", b.Round, strings.Join(parts, "; ")), Round: b.Round, Matches: matches}))
	}
}

func (b *bracket) done() bool {
	for _, g := range b.Groups {
		if len(g.Alive) > 1 {
			return false
		}
	}
	return true
}

// pairs lists the matches of group g's current round; B is "" for a bye.
func (g group) pairs() [][2]string {
	var out [][2]string
	for k := 0; k < len(g.Alive); k += 2 {
		p := [2]string{g.Alive[k], ""}
		if k+1 < len(g.Alive) {
			p[1] = g.Alive[k+1]
		}
		out = append(out, p)
	}
	return out
}

// judgeOps asks a judge about every match of the round in which both
// agents concluded; the other matches are decided without one.
func judgeOps(s *Settings, b *bracket, runs map[string]SubagentRun) []operations.Request {
	var ops []operations.Request
	for gi, g := range b.Groups {
		if len(g.Alive) < 2 {
			continue
		}
		for _, p := range g.pairs() {
			if p[1] == "" || !runs[p[0]].Concluded() || !runs[p[1]].Concluded() {
				continue
			}
			var defs []operations.Tool
			choice := ""
			if s.Mode() == agent.ModeTools {
				defs, choice = agent.Tools(agent.ToolSelectWinner), agent.ToolSelectWinner
			}
			msgs := []operations.Message{
				{Role: operations.RoleSystem, Content: judgeSystem(s)},
				{Role: operations.RoleUser, Content: judgePrompt(g.Task, runs[p[0]], runs[p[1]], s.OutputLimit)},
			}
			ops = append(ops, operations.NewGenerate(s.Subagents.Judge.Request(msgs, defs, choice)).
				WithMeta(metaRole, roleJudge).WithMeta(metaGroup, strconv.Itoa(gi)).WithMeta(metaA, p[0]).WithMeta(metaB, p[1]))
		}
	}
	return ops
}

func judgePrompt(task string, a, b SubagentRun, limit int) string {
	var sb strings.Builder
	sb.WriteString("The assignment both candidates worked on:\n<assignment>\n" + strings.TrimSpace(task) + "\n</assignment>\n")
	for _, r := range []SubagentRun{a, b} {
		fmt.Fprintf(&sb, "\n<candidate id=%q>\nConclusion:\n%s\n\nTheir last actions:\n%s\n</candidate>\n",
			r.ID, agent.Trim(r.Conclusion, limit/4), agent.Trim(r.Report, limit/2))
	}
	fmt.Fprintf(&sb, "\nWhich candidate did better: %s or %s?", a.ID, b.ID)
	return sb.String()
}

// resolve decides every match of the round and moves the winners on.
func (b *bracket) resolve(runs map[string]SubagentRun, verdicts map[string]judgement) []Match {
	var matches []Match
	for gi := range b.Groups {
		g := &b.Groups[gi]
		if len(g.Alive) < 2 {
			continue
		}
		var next []string
		for _, p := range g.pairs() {
			m := Match{Task: g.Task, A: p[0], B: p[1]}
			ca, cb := runs[p[0]].Concluded(), runs[p[1]].Concluded()
			switch {
			case p[1] == "":
				m.Winner, m.How = p[0], "bye"
			case ca && !cb:
				m.Winner, m.How = p[0], "walkover"
			case cb && !ca:
				m.Winner, m.How = p[1], "walkover"
			case !ca && !cb:
				m.Winner, m.How = p[0], "walkover"
			default:
				j := verdicts[p[0]+"|"+p[1]]
				if j.ok {
					m.Winner, m.How, m.Reasoning = j.winner, "judged", j.reasoning
				} else {
					m.Winner, m.How = p[0], "fallback"
				}
			}
			next = append(next, m.Winner)
			matches = append(matches, m)
		}
		g.Alive = next
	}
	return matches
}

// finishTournament answers the launch_subagents call with the winners.
func finishTournament(in phases.Input, s *Settings, v vars, out phases.Output, b *bracket, entry SubagentsReport) (phases.Output, error) {
	runs := make(map[string]SubagentRun, len(entry.Agents))
	for _, r := range entry.Agents {
		runs[r.ID] = r
	}
	var sb strings.Builder
	var winners []string // "id: conclusion" per task
	fmt.Fprintf(&sb, "%d subagents finished.\n", len(entry.Agents))
	for _, g := range b.Groups {
		w := runs[g.Alive[0]]
		if w.Concluded() {
			winners = append(winners, w.ID+": "+agent.Line(w.Conclusion, 120))
		} else {
			winners = append(winners, w.ID+": no conclusion ("+w.Status+")")
		}
		fmt.Fprintf(&sb, "\nAssignment: %s\n", agent.Line(g.Task, 300))
		for _, r := range entry.Agents {
			if r.Task != g.Task || r.ID == w.ID {
				continue
			}
			fmt.Fprintf(&sb, "- %s: %s, conclusion: %s\n", r.ID, status(r), agent.Line(orNone(r.Conclusion), 160))
		}
		fmt.Fprintf(&sb, "Winner: %s (%s)\nConclusion:\n%s\n", w.ID, status(w), orNone(w.Conclusion))
		if w.Report != "" {
			sb.WriteString("Its last actions:\n" + w.Report + "\n")
		}
	}
	t := agent.ToolOutput{Tool: agent.ToolLaunchSubagents, CallID: entry.CallID, Output: agent.Trim(strings.TrimRight(sb.String(), "\n"), s.OutputLimit)}
	t.Summary = "subagents: winner " + strings.Join(winners, "; winner ")
	u, l := in.State.Usage()
	t.Notice = agent.UsageNotice(s.Limit(), u, l, s.thresholds())
	out.Append = append(out.Append, phases.MustEntry(EntryToolOutput, t))
	v.Bracket = nil
	if err := out.SetVar(varState, v); err != nil {
		return out, err
	}
	out.Next = PhaseAdvisor
	return out, nil
}

func status(r SubagentRun) string {
	s := r.Status
	if r.EndReason != "" {
		s += ", " + r.EndReason
	}
	if r.Error != "" {
		s += ": " + agent.Line(r.Error, 120)
	}
	return s
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}
