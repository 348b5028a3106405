package simulated

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/flockrun/flock/operations"
)

// The synthesis roles (operations.ModelRoleExplorer, ModelRoleSynthesizer,
// ModelRoleClosedBook) read what their prompts hold by its layout, never
// by the words around it: the seed is the run's task, the tools are the
// "- ns:tool: description" lines (or the tools offered), the actions
// already taken the "ns:tool {json}" signatures, and a trajectory's steps
// the field lines whose value is a tool name, followed by the parameters'
// JSON and the observation. The branch, the attempt and the failed steps
// are labels of the request (operations.MetaBranch, MetaAttempt,
// MetaFailedSteps).

var (
	reToolLine  = regexp.MustCompile(`(?m)^- ([A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+): (.*)$`)
	reSignature = regexp.MustCompile(`([A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+) \{`)
	reToolName  = regexp.MustCompile(`^[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+$`)
	reField     = regexp.MustCompile(`^\s*([^:\s-][^:\n]{0,79}): (.*)$`)
	reEntity    = regexp.MustCompile(`\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b`)
	reQuoted    = regexp.MustCompile(`"([A-Z][^"\n]{2,40})"`)
	reDBIDs     = regexp.MustCompile(`one of: ([A-Za-z0-9_, -]+)\)`)
	reDBListed  = regexp.MustCompile(`"databases"\s*:\s*\[([^\]]*)\]`)
	reTableName = regexp.MustCompile(`"table"\s*:\s*"([A-Za-z_][A-Za-z0-9_]*)"|\[\s*"([A-Za-z_][A-Za-z0-9_]*)"\s*\]`)
	reNumber    = regexp.MustCompile(`^\d{2,}$`)
)

// attempt is the request's operations.MetaAttempt (1 when absent).
func attempt(meta map[string]string) int {
	n, err := strconv.Atoi(meta[operations.MetaAttempt])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// field splits a "label: value" line; ok is false for other lines (a
// heading, a "- " list item, a continued value).
func field(line string) (label, value string, ok bool) {
	m := reField.FindStringSubmatch(line)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// promptStep is one step of a trajectory a prompt shows.
type promptStep struct {
	tool, params, obs string
}

// promptSteps reads the steps of the trajectory text shows, by their
// layout: a field line whose value is a tool name (ns:tool), then a field
// whose value is a JSON object (the parameters, when the step has any; it
// may span lines), then the field that opens the observation, which runs
// to the next step's heading (the line above the next step's fields) or,
// for the last step, to the next section (sectionAt).
func promptSteps(text string) []promptStep {
	lines := strings.Split(text, "\n")
	starts := make([]int, len(lines))
	for i, off := 0, 0; i < len(lines); i++ {
		starts[i] = off
		off += len(lines[i]) + 1
	}
	var at []int
	for i, l := range lines {
		if _, v, ok := field(l); ok && reToolName.MatchString(strings.TrimSpace(v)) {
			at = append(at, i)
		}
	}
	var out []promptStep
	for n, i := range at {
		_, tool, _ := field(lines[i])
		st := promptStep{tool: strings.TrimSpace(tool)}
		j := i + 1
		if j < len(lines) {
			if _, v, ok := field(lines[j]); ok && strings.HasPrefix(strings.TrimSpace(v), "{") {
				from := starts[j] + strings.Index(lines[j], v)
				dec := json.NewDecoder(strings.NewReader(text[from:]))
				var raw json.RawMessage
				if dec.Decode(&raw) == nil {
					var b bytes.Buffer
					if json.Compact(&b, raw) == nil {
						st.params = b.String()
					}
					to := from + int(dec.InputOffset())
					for j < len(lines) && starts[j] < to {
						j++
					}
				}
			}
		}
		end := len(lines)
		if n+1 < len(at) {
			end = at[n+1]
			for end-1 > j && isField(lines[end-1]) {
				end--
			}
			if end-1 > j {
				end-- // the next step's heading
			}
		}
		if j < end {
			if _, first, ok := field(lines[j]); ok {
				obs := []string{first}
				for k := j + 1; k < end && (n+1 < len(at) || !sectionAt(lines, k)); k++ {
					obs = append(obs, lines[k])
				}
				st.obs = strings.TrimRight(strings.Join(obs, "\n"), "\n")
			}
		}
		out = append(out, st)
	}
	return out
}

func isField(line string) bool { _, _, ok := field(line); return ok }

// sectionAt reports whether a section of the prompt starts at lines[k]: a
// blank line before a heading ("# ...") or before a line that opens a
// list ("- ..."). The last step's observation runs to the first one.
func sectionAt(lines []string, k int) bool {
	if strings.TrimSpace(lines[k]) != "" || k+1 >= len(lines) {
		return false
	}
	next := lines[k+1]
	return strings.HasPrefix(next, "#") || k+2 < len(lines) && next != "" && !strings.HasPrefix(next, " ") && strings.HasPrefix(lines[k+2], "- ")
}

// signatures lists the actions ("ns:tool {json}") text names, in order.
func signatures(text string) []string {
	var out []string
	for _, loc := range reSignature.FindAllStringSubmatchIndex(text, -1) {
		dec := json.NewDecoder(strings.NewReader(text[loc[1]-1:]))
		var obj map[string]any
		if dec.Decode(&obj) != nil {
			continue
		}
		out = append(out, text[loc[0]:loc[1]-1+int(dec.InputOffset())])
	}
	return out
}

// action is one candidate proposal of the explorer.
type action struct {
	tool   string
	params map[string]any
	intent string
}

func (a action) signature() string {
	b, _ := json.Marshal(a.params)
	return a.tool + " " + string(b)
}

// explorer proposes the branch's next action: candidates are built from
// the newest observation (names it mentions are searched; tables it lists
// are queried), then from the seed (the run's task); the first candidate
// not taken for the seed, counted from the branch's child index (so
// siblings differ), one further on a re-ask (an attempt after the first,
// whose refused proposal is among those taken), is proposed.
// Tool mode answers a tool call under the tool's model name with the
// intent as text; otherwise the XML tags.
func explorer(in Input) operations.Output {
	g := in.Request
	prompt := lastUser(g)
	branch := in.Meta[operations.MetaBranch]
	tools := map[string]string{}
	for _, m := range reToolLine.FindAllStringSubmatch(prompt, -1) {
		tools[m[1]] = m[2]
	}
	if len(tools) == 0 {
		for _, t := range g.Tools {
			tools[strings.Replace(t.Name, "-", ":", 1)] = t.Description
		}
	}
	taken := map[string]bool{}
	for _, sig := range signatures(prompt) {
		taken[sig] = true
	}
	reask := 0
	if attempt(in.Meta) > 1 {
		reask = 1
	}
	seed := strings.TrimSpace(in.Task)
	var obs []string
	for _, st := range promptSteps(prompt) {
		obs = append(obs, st.obs)
	}
	var cands []action
	if len(obs) > 0 {
		cands = candidates(tools, obs[len(obs)-1], prompt)
	}
	cands = append(cands, candidates(tools, seed, prompt)...)
	var fresh []action
	seen := map[string]bool{}
	for _, c := range cands {
		sig := c.signature()
		if !taken[sig] && !seen[sig] {
			seen[sig] = true
			fresh = append(fresh, c)
		}
	}
	if len(fresh) == 0 {
		fresh = fallback(tools, branch)
	}
	child := 0
	if i := strings.LastIndexByte(branch, '.'); i >= 0 {
		child, _ = strconv.Atoi(branch[i+1:])
	}
	pick := fresh[(child+reask)%len(fresh)]
	args, _ := json.Marshal(pick.params)
	if len(g.Tools) > 0 {
		name := strings.ReplaceAll(pick.tool, ":", "-")
		return operations.Output{Content: pick.intent, FinishReason: "tool_calls",
			ToolCalls: []operations.ToolCall{{ID: "call_" + hashHex(branch+pick.signature()), Name: name, Arguments: string(args)}}}
	}
	return operations.Output{FinishReason: "stop",
		Content: fmt.Sprintf("<intent>%s</intent>\n<tool_name>%s</tool_name>\n<parameters>%s</parameters>", pick.intent, pick.tool, args)}
}

// candidates lists actions exploring text with the offered tools; all is
// every observation so far (databases and tables found earlier).
func candidates(tools map[string]string, text, all string) []action {
	var out []action
	if _, ok := tools["text2sql:execute"]; ok {
		dbs := databases(tools["text2sql:execute"], all+"\n"+text)
		if _, ok := tools["text2sql:list_databases"]; ok {
			out = append(out, action{"text2sql:list_databases", map[string]any{}, "List the databases that can be queried."})
		}
		tables := tableNames(text)
		for _, db := range dbs {
			if len(tables) == 0 {
				out = append(out, action{"text2sql:execute", map[string]any{"db_id": db,
					"query": "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"}, "List the tables of the " + db + " database."})
			}
			for _, t := range tables {
				out = append(out, action{"text2sql:execute", map[string]any{"db_id": db, "query": "SELECT * FROM " + t + " LIMIT 5"},
					"Read the first rows of the " + t + " table."})
			}
		}
	}
	ents := entities(text)
	if len(ents) == 0 {
		ents = keywords(text)
	}
	for _, e := range ents {
		if _, ok := tools["rag:search"]; ok {
			out = append(out, action{"rag:search", map[string]any{"query": e}, "Find what the documents say about " + e + "."})
		}
		if _, ok := tools["doc:search"]; ok {
			out = append(out, action{"doc:search", map[string]any{"query": e}, "Search the documents for " + e + "."})
		}
	}
	return out
}

// fallback is an action when every candidate was taken: a search with
// the branch in it, so that it is new.
func fallback(tools map[string]string, branch string) []action {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, ":search") {
			return []action{{n, map[string]any{"query": "overview " + branch}, "Get an overview of the collection."}}
		}
	}
	if len(names) == 0 {
		return []action{{"unknown:tool", map[string]any{}, "No tool is offered."}}
	}
	return []action{{names[0], map[string]any{}, "Try " + names[0] + "."}}
}

// databases are the database ids named in the execute tool's description
// or listed in an observation.
func databases(desc, text string) []string {
	var out []string
	add := func(s string) {
		s = strings.Trim(strings.TrimSpace(s), `"`)
		if s != "" && !strings.Contains(s, " ") && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, m := range reDBListed.FindAllStringSubmatch(text, -1) {
		for _, s := range strings.Split(m[1], ",") {
			add(s)
		}
	}
	if m := reDBIDs.FindStringSubmatch(desc); m != nil {
		for _, s := range strings.Split(m[1], ",") {
			add(s)
		}
	}
	return out
}

func tableNames(text string) []string {
	var out []string
	for _, m := range reTableName.FindAllStringSubmatch(text, -1) {
		t := m[1] + m[2]
		if t != "" && t != "sqlite_sequence" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// entities are the names a text mentions: capitalised phrases of two or
// more words and quoted titles, in order of appearance.
func entities(text string) []string {
	var out []string
	for _, m := range reQuoted.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	for _, e := range reEntity.FindAllString(text, -1) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if len(out) > 12 {
		out = out[:12]
	}
	return out
}

// keywords are a text's longer words (at least 6 letters), for a text
// that names nothing, such as a seed describing a topic.
func keywords(text string) []string {
	var out []string
	for _, w := range wordsOf(text) {
		w = strings.ToLower(w)
		if len(w) >= 6 && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	if len(out) > 8 {
		out = out[:8]
	}
	return out
}

func lastUser(g *operations.GenerateRequest) string {
	for i := len(g.Messages) - 1; i >= 0; i-- {
		if g.Messages[i].Role == operations.RoleUser {
			return g.Messages[i].Content
		}
	}
	return ""
}

func hashHex(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return strconv.FormatUint(h.Sum64(), 16)
}

// qaStep is one step of a QA prompt's trajectory.
type qaStep struct {
	tool, params, obs string
	failed            bool
}

// qaSteps reads the trajectory of a QA prompt (promptSteps); the steps
// named by the request's operations.MetaFailedSteps failed.
func qaSteps(prompt string, meta map[string]string) []qaStep {
	failed := map[int]bool{}
	for _, f := range strings.Split(meta[operations.MetaFailedSteps], ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			failed[n] = true
		}
	}
	var out []qaStep
	for i, st := range promptSteps(prompt) {
		obs := st.obs
		if j := strings.Index(obs, "… ["); j >= 0 {
			obs = obs[:j]
			// The cut may split a word: drop the last one.
			if k := strings.LastIndexAny(obs, " \n"); k >= 0 {
				obs = obs[:k]
			}
		}
		out = append(out, qaStep{tool: st.tool, params: st.params, obs: obs, failed: failed[i+1]})
	}
	return out
}

// wordsOf splits s into words as the QA checks do (synthesis/qa): runs
// of letters and digits, a '.' between two digits kept inside ("3.5",
// "0.1.0").
func wordsOf(s string) []string {
	var out []string
	var cur []rune
	rs := []rune(s)
	digit := func(i int) bool { return i >= 0 && i < len(rs) && unicode.IsDigit(rs[i]) }
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
		case r == '.' && digit(i-1) && digit(i+1) && len(cur) > 0:
			cur = append(cur, r)
		default:
			if len(cur) > 0 {
				out = append(out, string(cur))
				cur = cur[:0]
			}
		}
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}

// evidence is a run of up to n words of the observation's first line with
// at least four words.
func evidence(obs string, n int) []string {
	for _, line := range strings.Split(obs, "\n") {
		ws := wordsOf(line)
		if len(ws) >= 4 {
			if len(ws) > n {
				ws = ws[:n]
			}
			return ws
		}
	}
	ws := wordsOf(obs)
	if len(ws) > n {
		ws = ws[:n]
	}
	return ws
}

// synthesizer writes a QA pair from the last three steps that did not
// fail: each hop quotes words of its step's observation as evidence; the
// answer is a name or number of the last step's evidence and the question
// asks for it by the words before it and the lookups that led there, so
// it is grounded and does not leak. On a retry the answer moves on to
// the next candidate.
func synthesizer(in Input) operations.Output {
	prompt := lastUser(in.Request)
	var ok []qaStep
	for _, st := range qaSteps(prompt, in.Meta) {
		if !st.failed && len(wordsOf(st.obs)) >= 4 {
			ok = append(ok, st)
		}
	}
	if len(ok) > 3 {
		ok = ok[len(ok)-3:]
	}
	retry := attempt(in.Meta) - 1
	type hop struct {
		Hop      int    `json:"hop"`
		Fact     string `json:"fact"`
		Evidence string `json:"evidence"`
		Output   string `json:"output"`
	}
	var hops []hop
	var ev [][]string
	for i, st := range ok {
		e := evidence(st.obs, 12)
		ev = append(ev, e)
		hops = append(hops, hop{Hop: i + 1, Fact: fmt.Sprintf("%s with %s returns %q", st.tool, st.params, strings.Join(e, " ")),
			Evidence: strings.Join(e, " "), Output: strings.Join(e[:min(4, len(e))], " ")})
	}
	question, answer := "What did the exploration find?", ""
	if len(ev) > 0 {
		last := ev[len(ev)-1]
		var cands []int
		for i, w := range last {
			if i >= 2 && (reNumber.MatchString(w) || len(w) >= 4 && unicode.IsUpper([]rune(w)[0]) && !slices.Contains(stopwords, strings.ToLower(w))) {
				cands = append(cands, i)
			}
		}
		if len(cands) == 0 {
			// The longest word after the first two.
			best := len(last) - 1
			for i := 2; i < len(last); i++ {
				if len(last[i]) > len(last[best]) {
					best = i
				}
			}
			cands = []int{best}
		}
		var trail []string
		for _, st := range ok[:len(ok)-1] {
			trail = append(trail, lookup(st.params))
		}
		// The first candidate from the attempt on whose question does not
		// give the answer away.
		for k := range cands {
			idx := cands[(retry+k)%len(cands)]
			answer = last[idx]
			lead := strings.Join(last[max(0, idx-3):idx], " ")
			question = fmt.Sprintf("In the result of looking up %s, reached after %s, which word follows %q?", lookup(ok[len(ok)-1].params), strings.Join(trail, " and then "), lead)
			if len(trail) == 0 {
				question = fmt.Sprintf("In the result of looking up %s, which word follows %q?", lookup(ok[len(ok)-1].params), lead)
			}
			if !leaks(question, answer) {
				break
			}
			if k == len(cands)-1 {
				question = "Which value did your final lookup report?"
			}
		}
	}
	if len(hops) > 0 {
		hops[len(hops)-1].Output = answer
	}
	b, _ := json.Marshal(map[string]any{"question": question, "answer": answer, "reasoning_steps": hops})
	return operations.Output{Content: string(b), FinishReason: "stop"}
}

// stopwords are capitalised words that make no answer.
var stopwords = []string{"this", "that", "these", "those", "there", "their", "they", "then", "when", "with", "from", "what", "which", "where"}

// lookup is how a question names a step: its query when the params have
// one, else the params.
func lookup(params string) string {
	var m map[string]any
	if json.Unmarshal([]byte(params), &m) == nil {
		if q, ok := m["query"].(string); ok && q != "" {
			return strconv.Quote(q)
		}
	}
	return params
}

func leaks(question, answer string) bool {
	q := " " + strings.ToLower(strings.Join(wordsOf(question), " ")) + " "
	a := " " + strings.ToLower(strings.Join(wordsOf(answer), " ")) + " "
	return strings.Contains(q, a)
}
