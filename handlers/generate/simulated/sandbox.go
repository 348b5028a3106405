package simulated

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/flockrun/flock/operations"
)

// Sandbox tools as the agents offer them to the model (phases/agent's
// ModelName of text2sql:list_databases, text2sql:execute, rag:search).
const (
	toolListDBs   = "text2sql-list_databases"
	toolExecute   = "text2sql-execute"
	toolRAGSearch = "rag-search"
	tablesQuery   = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
)

var (
	reDBQuestion = regexp.MustCompile(`(?i)\b(?:database|databases|sql|table|tables)\b`)
	reDBName     = regexp.MustCompile(`(?i)\b(?:the\s+)?([A-Za-z0-9_]+)\s+database\b`)
	reDBList     = regexp.MustCompile(`"databases"\s*:\s*\[\s*"([^"]+)"`)
	reFirstCell  = regexp.MustCompile(`"rows"\s*:\s*\[\s*\[\s*("(?:[^"\\]|\\.)*"|[^\],\s]+)`)
	reTableCell  = regexp.MustCompile(`\[\s*"([A-Za-z_][A-Za-z0-9_]*)"\s*\]`)
	reHowMany    = regexp.MustCompile(`(?i)\bhow\s+many\s+([A-Za-z_]+)`)
	// reRAGText finds the passages of a search answer: rag:search's
	// "context" (AgentFlow's shape), or a passage's text of other shapes.
	reRAGText = regexp.MustCompile(`"(?:context|text|content|chunk)"\s*:\s*"((?:[^"\\]|\\.)*)"`)
	// reRAGTitle is the "[title]" line a rag:search passage starts with.
	reRAGTitle = regexp.MustCompile(`^\s*\[[^\]\n]*\]\s*\n`)
)

// sandboxCalls lists the sandbox tool calls of the assistant's earlier
// turns, oldest first, as name and raw arguments.
func (s *sim) sandboxCalls() []operations.ToolCall {
	var out []operations.ToolCall
	for _, m := range s.g.Messages {
		if m.Role != operations.RoleAssistant {
			continue
		}
		for _, tc := range m.ToolCalls {
			if tc.Name == toolListDBs || tc.Name == toolExecute || tc.Name == toolRAGSearch {
				out = append(out, tc)
			}
		}
	}
	return out
}

// sandboxActor is the actor's move when sandbox tools are offered (tool
// mode, no other tool forced): for a question about a database,
// text2sql-list_databases, then text2sql-execute listing the tables, then
// a count of the table a "how many X" question names, then submit with
// the first cell of the last result; for other questions rag-search with
// the question, then submit with the first passage's first line. ok is
// false when no sandbox tool fits and the shell plan applies.
func (s *sim) sandboxActor(i int) (operations.Output, bool) {
	if s.textMode || (s.forced != "" && s.forced != toolExecute && s.forced != toolListDBs && s.forced != toolRAGSearch) {
		return operations.Output{}, false
	}
	calls := s.sandboxCalls()
	called := map[string]int{}
	var queries []string
	for _, c := range calls {
		called[c.Name]++
		var a struct {
			Query string `json:"query"`
		}
		if c.Name == toolExecute && json.Unmarshal([]byte(c.Arguments), &a) == nil {
			queries = append(queries, a.Query)
		}
	}
	outs := s.outputs()
	last := ""
	if len(outs) > 0 {
		last = outs[len(outs)-1]
	}
	call := func(name, thought string, args map[string]any) (operations.Output, bool) {
		return operations.Output{Content: thought, Reasoning: "simulated policy: actor, sandbox tool " + name,
			ToolCalls: []operations.ToolCall{s.toolCall(i, name, args)}}, true
	}
	finish := func(answer string) (operations.Output, bool) {
		name := s.finisher()
		if name == "" {
			return operations.Output{}, false
		}
		def := "answer"
		if name == "conclude" {
			def = "result"
		}
		return call(name, "I have the answer.", map[string]any{argName(s.tools[name], def): answer})
	}
	switch {
	case s.has(toolExecute) && reDBQuestion.MatchString(s.task):
		if s.has(toolListDBs) && called[toolListDBs] == 0 && len(queries) == 0 {
			return call(toolListDBs, "Let me see which databases there are.", map[string]any{})
		}
		db := ""
		for _, o := range outs {
			if m := reDBList.FindStringSubmatch(o); m != nil {
				db = m[1]
				break
			}
		}
		if m := reDBName.FindStringSubmatch(s.task); m != nil && (db == "" || strings.Contains(strings.Join(outs, "\n"), `"`+m[1]+`"`)) {
			db = m[1]
		}
		if db == "" {
			return operations.Output{}, false
		}
		if len(queries) == 0 {
			return call(toolExecute, "Let me list the tables of "+db+".", map[string]any{"db_id": db, "query": tablesQuery})
		}
		if len(queries) == 1 {
			if m := reHowMany.FindStringSubmatch(s.task); m != nil {
				noun := strings.ToLower(m[1])
				for _, t := range reTableCell.FindAllStringSubmatch(last, -1) {
					tl := strings.ToLower(t[1])
					if tl == noun || tl+"s" == noun || tl+"es" == noun {
						return call(toolExecute, "Let me count the rows of "+t[1]+".", map[string]any{"db_id": db, "query": "SELECT count(*) FROM " + t[1]})
					}
				}
			}
		}
		answer := "done"
		if m := reFirstCell.FindStringSubmatch(last); m != nil {
			answer = strings.Trim(m[1], `"`)
		}
		return finish(answer)
	case s.has(toolRAGSearch):
		if called[toolRAGSearch] == 0 {
			return call(toolRAGSearch, "Let me search the documents.", map[string]any{argName(s.tools[toolRAGSearch], "query"): s.task})
		}
		answer := answerFrom(last)
		if m := reRAGText.FindStringSubmatch(last); m != nil {
			var text string
			if json.Unmarshal([]byte(`"`+m[1]+`"`), &text) == nil {
				first, _, _ := strings.Cut(text, "\n---\n")
				answer = answerFrom(reRAGTitle.ReplaceAllString(first, ""))
			}
		}
		return finish(answer)
	}
	return operations.Output{}, false
}
