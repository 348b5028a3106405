package simulated

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/flockrun/flock/operations"
)

// Model is the model name the simulated provider reports.
const Model = "flock-simulated"

// maxSimActions is the number of shell actions after which the simulated
// actor submits whatever it has.
const maxSimActions = 6

// Input is what the simulated model answers: a generate request, its
// labels and the task of the run that makes it.
type Input struct {
	// Task is the task of the run the request belongs to (handlers.Env.Task):
	// what the model works on, read from the run, not from the prompt.
	Task string
	// Meta is the request's labels: operations.MetaRole says what the
	// model is asked to play, and MetaFormat, MetaAttempt, MetaBranch and
	// MetaFailedSteps the rest of what its prompt says in words.
	Meta map[string]string
	// Request is the generate request.
	Request *operations.GenerateRequest
}

// Reply answers in.Request with the built-in deterministic policy (see the
// package documentation): in.Request.N outputs (at least one). The outputs
// depend only on in's task, labels and the request's structure (tools,
// tool calls, tool outputs, the data its messages hold), never on the
// wording of its prompts.
func Reply(in Input) []operations.Output {
	g := in.Request
	var role func(Input) operations.Output
	switch in.Meta[operations.MetaRole] {
	case operations.ModelRoleExplorer:
		role = explorer
	case operations.ModelRoleSynthesizer:
		role = synthesizer
	case operations.ModelRoleGrader:
		role = grader
	case operations.ModelRoleClosedBook:
		role = func(Input) operations.Output {
			return operations.Output{Content: "unknown", FinishReason: "stop"}
		}
	}
	if role != nil {
		outs := make([]operations.Output, max(1, g.N))
		for i := range outs {
			outs[i] = role(in)
		}
		return outs
	}
	s := newSim(in)
	outs := make([]operations.Output, max(1, g.N))
	for i := range outs {
		outs[i] = s.output(i)
	}
	return outs
}

// Request families the simulated policy recognises.
const (
	famText    = "text"
	famActor   = "actor"
	famAdvisor = "advisor"
	famRater   = "rater"
	famJudge   = "judge"
	famGeneric = "generic"
)

// sim holds what the policy derived from one request.
type sim struct {
	g     *operations.GenerateRequest
	tools map[string]operations.Tool
	hash  uint64
	// last is the content of the last message.
	last string
	// all is every message's content and tool-call arguments, in order.
	all string
	// task is the run's task.
	task string

	fam      string
	textMode bool
	xml      bool
	// forced is the tool named by tool_choice, when offered.
	forced string
}

func newSim(in Input) *sim {
	g := in.Request
	s := &sim{g: g, tools: map[string]operations.Tool{}, task: strings.TrimSpace(in.Task)}
	for _, t := range g.Tools {
		if _, dup := s.tools[t.Name]; !dup {
			s.tools[t.Name] = t
		}
	}
	s.hash = requestHash(in.Meta, g)
	var all []string
	for _, m := range g.Messages {
		all = append(all, m.Content)
		for _, tc := range m.ToolCalls {
			all = append(all, tc.Arguments)
		}
	}
	if len(g.Messages) > 0 {
		s.last = g.Messages[len(g.Messages)-1].Content
	}
	s.all = strings.Join(all, "\n")
	s.classify(in.Meta)
	return s
}

// requestHash is a stable hash of what shapes the reply besides the data:
// the labels, the tools offered, tool_choice and the conversation's
// structure with the model's own turns (the roles of the messages, the
// assistant's text and tool calls). The text of system and user messages
// (the phases' prompts) and of tool outputs is left out, so that neither
// a reworded prompt nor a tool output's incidental bytes (a listing's
// times) change the reply's wording or its call ids.
func requestHash(meta map[string]string, g *operations.GenerateRequest) uint64 {
	names := make([]string, len(g.Tools))
	for i, t := range g.Tools {
		names[i] = t.Name
	}
	type turn struct {
		R string
		C string                `json:",omitempty"`
		T []operations.ToolCall `json:",omitempty"`
	}
	turns := make([]turn, len(g.Messages))
	for i, m := range g.Messages {
		turns[i] = turn{R: m.Role}
		if m.Role == operations.RoleAssistant {
			turns[i].C, turns[i].T = m.Content, m.ToolCalls
		}
	}
	b, _ := json.Marshal(struct {
		L  map[string]string // encoded with sorted keys
		M  []turn
		T  []string
		TC string
	}{meta, turns, names, g.ToolChoice})
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

func mix(h uint64, vals ...uint64) uint64 {
	f := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], h)
	f.Write(b[:])
	for _, v := range vals {
		binary.LittleEndian.PutUint64(b[:], v)
		f.Write(b[:])
	}
	return f.Sum64()
}

// judgeFragment are the parts of a tool name that make it a judge's.
var judgeFragment = []string{"winner", "judge", "select", "choose", "pick", "rank", "compare", "vote"}

func isJudgeTool(name string) bool {
	n := strings.ToLower(name)
	for _, f := range judgeFragment {
		if strings.Contains(n, f) {
			return true
		}
	}
	return false
}

func toolFamily(name string) string {
	switch {
	case name == "rate_options":
		return famRater
	case name == "advise":
		return famAdvisor
	case name == "bash" || name == "run_bash" || name == "python" || name == "submit" ||
		name == "conclude" || name == "score" || name == "score_log" || name == "set_timeout":
		return famActor
	case isJudgeTool(name):
		return famJudge
	}
	return famGeneric
}

// roleFamily maps the request's operations.MetaRole to a family ("" when
// the role is unset or unknown).
func roleFamily(role string) string {
	switch role {
	case operations.ModelRoleActor:
		return famActor
	case operations.ModelRoleAdvisor:
		return famAdvisor
	case operations.ModelRoleRater:
		return famRater
	case operations.ModelRoleJudge:
		return famJudge
	}
	return ""
}

// classify picks the family: the request's role when the phase set one
// (operations.MetaRole); otherwise, in tool mode, the offered tools (the
// forced one first). Text mode (no tools, or tool_choice "none") without a
// role is a plain text reply; its answer format is the request's
// operations.MetaFormat. The prompt's wording decides nothing.
func (s *sim) classify(meta map[string]string) {
	fam := roleFamily(meta[operations.MetaRole])
	if len(s.tools) > 0 && s.g.ToolChoice != "none" {
		if _, ok := s.tools[s.g.ToolChoice]; ok {
			s.forced = s.g.ToolChoice
		}
		switch {
		case fam != "":
			s.fam = fam
		case s.forced != "":
			s.fam = toolFamily(s.forced)
		case s.has("rate_options"):
			s.fam = famRater
		case s.has("advise"):
			s.fam = famAdvisor
		case s.shellTool() != "" || s.has("python") || s.finisher() != "":
			s.fam = famActor
		default:
			s.fam = famGeneric
			for _, t := range s.g.Tools {
				if isJudgeTool(t.Name) {
					s.fam = famJudge
					break
				}
			}
		}
		return
	}
	s.textMode = true
	s.xml = meta[operations.MetaFormat] == operations.FormatXML
	s.fam = famText
	if fam != "" {
		s.fam = fam
	}
}

func (s *sim) has(name string) bool { _, ok := s.tools[name]; return ok }

func (s *sim) shellTool() string {
	for _, n := range []string{"bash", "run_bash"} {
		if s.has(n) {
			return n
		}
	}
	return ""
}

func (s *sim) finisher() string {
	for _, n := range []string{"submit", "conclude"} {
		if s.has(n) {
			return n
		}
	}
	return ""
}

// output builds output number i.
func (s *sim) output(i int) operations.Output {
	var o operations.Output
	switch s.fam {
	case famActor:
		o = s.actor(i)
	case famAdvisor:
		o = s.advisor(i)
	case famRater:
		o = s.rater(i)
	case famJudge:
		o = s.judge(i)
	case famGeneric:
		o = s.generic(i)
	default:
		o = s.text(i)
	}
	if o.Reasoning == "" {
		o.Reasoning = "simulated policy: " + s.fam
	}
	o.FinishReason = "stop"
	if len(o.ToolCalls) > 0 {
		o.FinishReason = "tool_calls"
	}
	return o
}

func (s *sim) callID(i, j int) string {
	return fmt.Sprintf("call_%012x", mix(s.hash, uint64(i), uint64(j))&0xffffffffffff)
}

func (s *sim) toolCall(i int, name string, args map[string]any) operations.ToolCall {
	return operations.ToolCall{ID: s.callID(i, 0), Name: name, Arguments: marshal(args, "")}
}

// marshal encodes v without HTML escaping (so "a > b" stays readable).
func marshal(v any, indent string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	_ = enc.Encode(v) // maps of strings, numbers and slices always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// --- history ---------------------------------------------------------------

var (
	reFencedBash = regexp.MustCompile("(?s)```(?:bash|sh|shell|run_bash)[ \\t]*\\n(.*?)```")
	reXMLBash    = regexp.MustCompile(`(?s)<(?:bash|run_bash)>(.*?)</(?:bash|run_bash)>`)
	reJSONCmd    = regexp.MustCompile(`"command"\s*:\s*("(?:[^"\\]|\\.)*")`)
)

// executed lists the shell commands the agent already ran (or proposed in
// its own earlier turns), oldest first: tool calls of assistant messages,
// fenced or XML bash blocks in assistant text, and the calls' JSON
// arguments ({"command": ...}) that transcripts other roles read carry
// (advisor and rater prompts), whatever words surround them.
func (s *sim) executed() []string {
	var out []string
	for _, m := range s.g.Messages {
		if m.Role == operations.RoleAssistant {
			for _, tc := range m.ToolCalls {
				var a map[string]any
				if json.Unmarshal([]byte(tc.Arguments), &a) == nil {
					if c, ok := a["command"].(string); ok {
						out = append(out, strings.TrimSpace(c))
					}
				}
			}
			for _, re := range []*regexp.Regexp{reFencedBash, reXMLBash} {
				for _, mm := range re.FindAllStringSubmatch(m.Content, -1) {
					out = append(out, strings.TrimSpace(mm[1]))
				}
			}
		}
		if m.Role == operations.RoleAssistant && len(m.ToolCalls) > 0 {
			continue
		}
		for _, mm := range reJSONCmd.FindAllStringSubmatch(m.Content, -1) {
			var c string
			if json.Unmarshal([]byte(mm[1]), &c) == nil {
				out = append(out, strings.TrimSpace(c))
			}
		}
	}
	return out
}

// outputs lists tool outputs, oldest first: role "tool" messages and user
// messages right after an assistant message (text-mode agents), by their
// place in the conversation. The transcript of a prompt that is not the
// agent's own conversation (an advisor's, a rater's) holds none.
func (s *sim) outputs() []string {
	var out []string
	prevAssistant := false
	for _, m := range s.g.Messages {
		switch {
		case m.Role == operations.RoleTool:
			out = append(out, m.Content)
		case m.Role == operations.RoleUser && prevAssistant:
			out = append(out, m.Content)
		}
		prevAssistant = m.Role == operations.RoleAssistant
	}
	return out
}

// --- task and plan -----------------------------------------------------------

var (
	reCreate   = regexp.MustCompile("(?i)\\b(?:create|write|make)\\s+(?:an?\\s+)?(?:new\\s+)?(?:text\\s+)?(?:file\\s+)?(?:named\\s+|called\\s+)?[`'\"]?([A-Za-z0-9_][A-Za-z0-9_.\\-/]*\\.[A-Za-z0-9]+)[`'\"]?\\s+(?:containing|that\\s+contains|with\\s+(?:the\\s+)?(?:content|contents|text|line|word|string)s?)\\s*:?\\s*")
	reLeadNoun = regexp.MustCompile(`(?i)^(?:the\s+)?(?:text|word|string|line|content|contents)\s+`)
	reUnquoted = regexp.MustCompile(`^(.*?)(?:\s+and\s|\s+then\s|[,;\n]|\.\s|\.$|$)`)
	reFileName = regexp.MustCompile("(?i)(?:^|[\\s`'\"(])((?:[A-Za-z0-9_\\-]+/)*[A-Za-z0-9_\\-]+\\.(?:txt|md|csv|tsv|json|jsonl|py|log|sh|yaml|yml|toml|c|h|go|js|ts|html|xml|ini|cfg|conf|dat|rs|java|rb))\\b")
	reSafeName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$`)
	reLsFile   = regexp.MustCompile(`(?m)^-[rwxsStT-]{9}\S*\s+.*\s(\S+)\s*$`)
	reWords    = regexp.MustCompile(`(?i)word[\s-]*count|count\s+(?:the\s+)?words|how\s+many\s+words|number\s+of\s+words`)
	reLines    = regexp.MustCompile(`(?i)line[\s-]*count|count\s+(?:the\s+)?lines|how\s+many\s+lines|number\s+of\s+lines`)
	reChars    = regexp.MustCompile(`(?i)(?:character|char|byte)[\s-]*count|how\s+many\s+(?:characters|bytes)|number\s+of\s+(?:characters|bytes)`)
	reFiles    = regexp.MustCompile(`(?i)how\s+many\s+files|number\s+of\s+files|count\s+(?:the\s+)?files`)
)

func safeName(n string) bool {
	return reSafeName.MatchString(n) && !strings.Contains(n, "..") && len(n) <= 200
}

// shellQuote single-quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// parseCreate finds "create NAME containing TEXT" in the task.
func parseCreate(task string) (name, content string, ok bool) {
	loc := reCreate.FindStringSubmatchIndex(task)
	if loc == nil {
		return "", "", false
	}
	name = task[loc[2]:loc[3]]
	if !safeName(name) {
		return "", "", false
	}
	rest := reLeadNoun.ReplaceAllString(task[loc[1]:], "")
	if rest != "" && strings.ContainsRune("'\"`", rune(rest[0])) {
		if end := strings.IndexByte(rest[1:], rest[0]); end >= 0 {
			content = rest[1 : end+1]
		}
	}
	if content == "" {
		if m := reUnquoted.FindStringSubmatch(rest); m != nil {
			content = strings.TrimSpace(m[1])
		}
	}
	if content == "" || len(content) > 500 {
		return "", "", false
	}
	return name, content, true
}

// plan is the list of shell commands the simulated agent means to run for
// the task, in order. It is recomputed on every call from the task and the
// tool outputs seen so far, so it is stable once the first listing is in.
func (s *sim) plan(outputs []string) []string {
	cmds := []string{"ls -la"}
	task := s.task
	name, content, created := parseCreate(task)
	if created {
		cmds = append(cmds, "printf '%s\\n' "+shellQuote(content)+" > "+name)
	}
	file := name
	if file == "" {
		if m := reFileName.FindStringSubmatch(task); m != nil && safeName(m[1]) {
			file = m[1]
		}
	}
	switch {
	case reFiles.MatchString(task):
		cmds = append(cmds, "ls -1 | wc -l")
	case file != "" && reWords.MatchString(task):
		cmds = append(cmds, "wc -w < "+file)
	case file != "" && reLines.MatchString(task):
		cmds = append(cmds, "wc -l < "+file)
	case file != "" && reChars.MatchString(task):
		cmds = append(cmds, "wc -c < "+file)
	case file != "":
		cmds = append(cmds, "cat -- "+file)
	}
	if len(cmds) == 1 {
		cmds = append(cmds, "pwd")
		if len(outputs) > 0 {
			if m := reLsFile.FindStringSubmatch(outputs[0]); m != nil && safeName(m[1]) {
				cmds = append(cmds, "head -n 40 -- "+m[1])
			}
		}
	}
	return cmds
}

// step is the simulated agent's next move: a shell command, or finishing
// (cmd == "") with answer.
type step struct {
	cmd    string
	answer string
	// index of cmd in the plan, or len(plan) when finishing.
	index, planLen int
}

func (s *sim) next() step {
	outs := s.outputs()
	done := s.executed()
	ran := map[string]bool{}
	for _, c := range done {
		ran[c] = true
	}
	p := s.plan(outs)
	if len(done) < maxSimActions {
		for i, c := range p {
			if !ran[c] {
				return step{cmd: c, index: i, planLen: len(p)}
			}
		}
	}
	last := ""
	if len(outs) > 0 {
		last = outs[len(outs)-1]
	}
	return step{answer: answerFrom(last), index: len(p), planLen: len(p)}
}

var (
	reNumberLine = regexp.MustCompile(`^\s*(-?\d+(?:\.\d+)?)(?:\s|$)`)
	// reTagLine is a line that only opens or closes an element (a text-mode
	// output's wrapper, whatever it is called).
	reTagLine = regexp.MustCompile(`^<[^>]*>$`)
)

// answerFrom derives a submission from a tool output: its first line (the
// output comes first; notes a phase adds follow it), past the lines that
// only open or close an element, reduced to its leading number when it
// starts with one (wc output).
func answerFrom(out string) string {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || reTagLine.MatchString(line) {
			continue
		}
		if m := reNumberLine.FindStringSubmatch(line); m != nil {
			return m[1]
		}
		if len(line) > 200 {
			line = line[:200]
		}
		return line
	}
	return "done"
}

// alternative is the less useful exploratory command odd-numbered samples
// propose, so that actors produce differing options for raters to rank.
func alternative(cmd string) string {
	if cmd == "ls -la" {
		return "pwd"
	}
	if cmd == "" {
		return "ls -la"
	}
	return "ls"
}

var thoughts = []string{
	"Next step: %s.",
	"I will %s.",
	"Let me %s now.",
}

func describe(cmd string) string {
	switch {
	case cmd == "":
		return "submit the answer"
	case strings.HasPrefix(cmd, "ls"):
		return "look at the files in the working directory"
	case cmd == "pwd":
		return "check the current directory"
	case strings.HasPrefix(cmd, "printf"):
		return "create the requested file"
	case strings.HasPrefix(cmd, "wc"):
		return "count what the task asks for"
	}
	return "read the relevant file"
}

// actor proposes the next step: output 0 (and other even outputs) follow
// the plan, odd outputs propose an exploratory alternative; the thought
// text varies with the request hash and the index.
func (s *sim) actor(i int) operations.Output {
	if o, ok := s.sandboxActor(i); ok {
		return o
	}
	st := s.next()
	cmd, finish := st.cmd, st.cmd == ""
	if i%2 == 1 {
		cmd, finish = alternative(st.cmd), false
	}
	switch s.forced {
	case "":
	case "submit", "conclude":
		finish = true
	case "bash", "run_bash", "python":
		if finish {
			cmd, finish = "ls -la", false
		}
	default:
		return s.generic(i)
	}
	what := describe("")
	if !finish {
		what = describe(cmd)
	}
	thought := fmt.Sprintf(thoughts[(i+int(s.hash%3))%len(thoughts)], what)
	reasoning := fmt.Sprintf("simulated policy: actor, plan step %d of %d", st.index+1, st.planLen)
	if finish {
		reasoning = fmt.Sprintf("simulated policy: actor, plan of %d steps done, submitting", st.planLen)
	}
	if s.textMode {
		var block string
		switch {
		case finish && s.xml:
			block = "<submit>" + st.answer + "</submit>"
		case finish:
			block = "```submit\n" + st.answer + "\n```"
		case s.xml:
			block = "<bash>" + cmd + "</bash>"
		default:
			block = "```bash\n" + cmd + "\n```"
		}
		return operations.Output{Content: thought + "\n\n" + block, Reasoning: reasoning}
	}
	o := operations.Output{Content: thought, Reasoning: reasoning}
	if finish {
		switch {
		case s.finisher() != "":
			name := s.finisher()
			if s.forced == "submit" || s.forced == "conclude" {
				name = s.forced
			}
			def := "answer"
			if name == "conclude" {
				def = "result"
			}
			o.ToolCalls = []operations.ToolCall{s.toolCall(i, name, map[string]any{argName(s.tools[name], def): st.answer})}
			return o
		case s.has("score"):
			o.ToolCalls = []operations.ToolCall{s.toolCall(i, "score", map[string]any{})}
			return o
		}
		cmd = "ls -la"
	}
	switch {
	case s.forced != "python" && s.shellTool() != "":
		name := s.shellTool()
		o.ToolCalls = []operations.ToolCall{s.toolCall(i, name, map[string]any{argName(s.tools[name], "command"): cmd})}
	case s.has("python"):
		code := "import subprocess\nprint(subprocess.run(" + strconv.Quote(cmd) + ", shell=True, capture_output=True, text=True).stdout)"
		o.ToolCalls = []operations.ToolCall{s.toolCall(i, "python", map[string]any{argName(s.tools["python"], "code"): code})}
	default:
		return s.generic(i)
	}
	return o
}

// --- advisor -----------------------------------------------------------------

func (s *sim) advisor(i int) operations.Output {
	st := s.next()
	var advice string
	switch {
	case st.cmd == "" && len(s.outputs()) == 0:
		// A transcript's outputs are not read: the actor has the answer.
		advice = "You have what you need. Submit the answer the last output shows now."
	case st.cmd == "":
		advice = fmt.Sprintf("You have what you need. Submit the answer %q now.", st.answer)
	default:
		advice = fmt.Sprintf("Work in small, verifiable steps. Next, run `%s` and read its output carefully.", st.cmd)
	}
	if i > 0 {
		advice += fmt.Sprintf(" (note %d)", i)
	}
	if s.textMode {
		if s.xml {
			return operations.Output{Content: "<advise>" + advice + "</advise>"}
		}
		return operations.Output{Content: "```advise\n" + advice + "\n```"}
	}
	return operations.Output{ToolCalls: []operations.ToolCall{s.toolCall(i, "advise", map[string]any{argName(s.tools["advise"], "advice"): advice})}}
}

// --- rater -------------------------------------------------------------------

// reOptionMarkers find numbered options by their layout, whatever they
// are called: an element whose name ends in the number (<option_2>,
// <choice-2>), a line opening with a word and the number ("Option 2:",
// "Candidate #2."), a "[2]" line, a JSON option_index.
var reOptionMarkers = []*regexp.Regexp{
	regexp.MustCompile(`<[A-Za-z][A-Za-z0-9_-]*?[ _-]?(?:index=["']?)?(\d+)["']?\s*>`),
	regexp.MustCompile(`(?m)^[ \t]*(?:#+[ \t]*)?(?:\*\*)?[A-Za-z]+[ _#-]*(\d+)(?:\*\*)?[ \t]*[:.)\]-]`),
	regexp.MustCompile(`(?m)^[ \t]*\[(\d+)\]`),
	regexp.MustCompile(`"option_index"\s*:\s*(\d+)`),
}

type option struct {
	index int
	body  string
}

// findOptions finds numbered options in the last message (or, failing
// that, in the whole prompt): numbered elements, numbered lines, "[N]"
// lines, in that order of preference (see reOptionMarkers).
func findOptions(texts ...string) []option {
	for _, t := range texts {
		for _, re := range reOptionMarkers {
			locs := re.FindAllStringSubmatchIndex(t, -1)
			if len(locs) == 0 {
				continue
			}
			var opts []option
			seen := map[int]bool{}
			for k, l := range locs {
				idx, err := strconv.Atoi(t[l[2]:l[3]])
				if err != nil || idx > 1000 || seen[idx] {
					continue
				}
				seen[idx] = true
				end := len(t)
				if k+1 < len(locs) {
					end = locs[k+1][0]
				}
				body := t[l[1]:end]
				// An element's option ends where it closes.
				if open := t[l[0]:l[1]]; strings.HasPrefix(open, "<") {
					name := strings.TrimRight(strings.TrimPrefix(open, "<"), "0123456789\"'> \t")
					if c := strings.Index(body, "</"+name); c >= 0 {
						body = body[:c]
					}
				}
				if len(body) > 4000 {
					body = body[:4000]
				}
				opts = append(opts, option{index: idx, body: body})
			}
			return opts
		}
	}
	return nil
}

// rateOption scores an option by how much it looks like progress: the
// commands and tool names it holds, as whole words, so that the words
// around them (the option's prose) do not count.
func rateOption(body string) (float64, string) {
	b := " " + strings.Join(strings.FieldsFunc(strings.ToLower(body), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_>.", r)
	}), " ") + " "
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(b, " "+w+" ") {
				return true
			}
		}
		return false
	}
	switch {
	case has("rm -rf", "sudo", "mkfs", "shutdown"):
		return -2, "destructive or privileged command"
	case has("submit", "conclude"):
		return 1.8, "submits an answer grounded in the last output"
	case has("printf", "tee", "touch", "mkdir") || has("echo") && strings.Contains(b, ">"):
		return 1.5, "makes the change the task asks for"
	case has("wc", "cat", "head", "grep", "tail", "python"):
		return 1, "reads or checks relevant data"
	case has("ls -la"):
		return 0.75, "useful exploration"
	case has("ls", "pwd", "find"):
		return 0.5, "light exploration"
	}
	return 0, "unclear progress"
}

func (s *sim) ratings() []map[string]any {
	opts := findOptions(s.last, s.all)
	if len(opts) == 0 {
		opts = []option{{index: 0}}
	}
	out := make([]map[string]any, 0, len(opts))
	for _, o := range opts {
		r, why := rateOption(o.body)
		out = append(out, map[string]any{"option_index": o.index, "rating": r, "comment": why})
	}
	return out
}

func (s *sim) rater(i int) operations.Output {
	rs := s.ratings()
	if s.textMode {
		return operations.Output{Content: "Ratings of the options:\n\n```json\n" + marshal(map[string]any{"ratings": rs}, "  ") + "\n```"}
	}
	return operations.Output{ToolCalls: []operations.ToolCall{s.toolCall(i, "rate_options", map[string]any{argName(s.tools["rate_options"], "ratings"): rs})}}
}

// --- judge and generic tools ---------------------------------------------------

// reIDs find the ids of candidate agents (agent_...) in a judge's prompt.
var reIDs = []*regexp.Regexp{
	regexp.MustCompile(`\bagent_[A-Za-z0-9_\-]+`),
}

// candidates lists the choices a judge can pick from: agent ids the
// prompt holds, else option indices, else "0" and "1".
func (s *sim) candidates(ids bool) []string {
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	if ids {
		for _, re := range reIDs {
			for _, m := range re.FindAllStringSubmatch(s.all, -1) {
				add(m[len(m)-1])
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	for _, o := range findOptions(s.last, s.all) {
		add(strconv.Itoa(o.index))
	}
	if len(out) == 0 {
		out = []string{"0", "1"}
	}
	return out
}

func (s *sim) judgeTool() string {
	if s.forced != "" {
		return s.forced
	}
	for _, t := range s.g.Tools {
		if isJudgeTool(t.Name) {
			return t.Name
		}
	}
	return ""
}

func (s *sim) judge(i int) operations.Output {
	if s.textMode {
		c := s.candidates(true)
		w := c[int(mix(s.hash, 7)%uint64(len(c)))]
		return operations.Output{Content: "```json\n" + marshal(map[string]any{"winner_id": w, "reasoning": "deterministic simulated judgement"}, "") + "\n```"}
	}
	name := s.judgeTool()
	return operations.Output{Content: "Comparing the candidates.", ToolCalls: []operations.ToolCall{s.toolCall(i, name, s.fillArgs(s.tools[name], i))}}
}

// generic calls the forced tool, or the first offered one, with arguments
// filled from its schema.
func (s *sim) generic(i int) operations.Output {
	name := s.forced
	if name == "" && len(s.g.Tools) > 0 {
		name = s.g.Tools[0].Name
	}
	if name == "" {
		return s.text(i)
	}
	return operations.Output{ToolCalls: []operations.ToolCall{s.toolCall(i, name, s.fillArgs(s.tools[name], i))}}
}

type schemaProp struct {
	Type json.RawMessage `json:"type"`
	Enum []any           `json:"enum"`
}

func (p schemaProp) typ() string {
	var t string
	if json.Unmarshal(p.Type, &t) == nil {
		return t
	}
	var ts []string
	if json.Unmarshal(p.Type, &ts) == nil {
		for _, x := range ts {
			if x != "null" {
				return x
			}
		}
	}
	return "string"
}

func properties(t operations.Tool) (map[string]schemaProp, []string) {
	var sch struct {
		Properties map[string]schemaProp `json:"properties"`
		Required   []string              `json:"required"`
	}
	_ = json.Unmarshal(t.Parameters, &sch) // a bad schema means no properties
	return sch.Properties, sch.Required
}

// argName is the parameter to put a tool's single argument in: def when
// the schema has it (or has no properties), else the first required
// string property, else the first property by name.
func argName(t operations.Tool, def string) string {
	props, req := properties(t)
	if len(props) == 0 {
		return def
	}
	if _, ok := props[def]; ok {
		return def
	}
	for _, r := range req {
		if p, ok := props[r]; ok && p.typ() == "string" {
			return r
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}

// fillArgs fills every property of t's schema deterministically: enums and
// choice-like fields pick a candidate by hash, numbers 1, booleans true,
// text fields a short sentence.
func (s *sim) fillArgs(t operations.Tool, i int) map[string]any {
	props, _ := properties(t)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pick := func(n int) int { return int(mix(s.hash, 7) % uint64(n)) }
	args := map[string]any{}
	for _, k := range keys {
		p := props[k]
		lk := strings.ToLower(k)
		choice := strings.Contains(lk, "id") || strings.Contains(lk, "winner") || strings.Contains(lk, "index") ||
			strings.Contains(lk, "choice") || strings.Contains(lk, "option") || strings.Contains(lk, "best")
		switch {
		case len(p.Enum) > 0:
			args[k] = p.Enum[pick(len(p.Enum))]
		case p.typ() == "integer" || p.typ() == "number":
			if choice {
				c := s.candidates(false)
				n, _ := strconv.Atoi(c[pick(len(c))])
				args[k] = n
			} else {
				args[k] = 1
			}
		case p.typ() == "boolean":
			args[k] = true
		case p.typ() == "array":
			args[k] = []any{}
		case p.typ() == "object":
			args[k] = map[string]any{}
		case choice:
			c := s.candidates(true)
			args[k] = c[pick(len(c))]
		default:
			args[k] = fmt.Sprintf("Simulated %s (sample %d).", strings.ReplaceAll(k, "_", " "), i)
		}
	}
	return args
}

// --- plain text --------------------------------------------------------------

func (s *sim) text(i int) operations.Output {
	q := strings.Join(strings.Fields(s.last), " ")
	if len(q) > 120 {
		q = q[:120] + "..."
	}
	c := fmt.Sprintf("Simulated reply to %q: I would start by inspecting the working directory, then act on the task step by step.", q)
	if i > 0 {
		c += fmt.Sprintf(" (sample %d)", i)
	}
	return operations.Output{Content: c}
}
