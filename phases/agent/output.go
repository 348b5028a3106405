package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flockrun/flock/operations"
)

// Trim keeps limit bytes of s, half from its head and half from its tail,
// with a marker counting the omitted bytes in the middle (s is returned
// whole when that would not make it shorter). Cuts fall on rune
// boundaries. A limit <= 0 keeps s whole. Trimming a text that was
// trimmed before counts, in its one marker, what the earlier cuts removed
// too: a marker the cut touches is removed whole and its count added.
func Trim(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	head := limit / 2
	tail := limit - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	removed := 0
	if strings.Contains(s, " characters trimmed ...]") {
		marks := trimMarker.FindAllStringSubmatchIndex(s, -1)
		for _, m := range marks {
			if m[0] < t && m[1] > head {
				head, t = min(head, m[0]), max(t, m[1])
			}
		}
		for _, m := range marks {
			if m[0] >= head && m[1] <= t {
				n, _ := strconv.Atoi(s[m[2]:m[3]])
				removed += n - (m[1] - m[0])
			}
		}
	}
	out := s[:head] + fmt.Sprintf("\n[... %d characters trimmed ...]\n", t-head+removed) + s[t:]
	if len(out) >= len(s) {
		return s
	}
	return out
}

// trimMarker matches the marker Trim inserts.
var trimMarker = regexp.MustCompile(`\n\[\.\.\. (\d+) characters trimmed \.\.\.\]\n`)

// FormatResult renders a tool result for the model, each part trimmed to
// limit (see Trim): for bash, stdout, then "Error: " + stderr, a timeout
// note and "Exit code: N" when not zero; for python, the output, then
// "Error: " + the error; score and score_log as text; an operation that
// failed as "Error: " + why. Empty output reads "(no output)".
func FormatResult(res operations.Result, limit int) string {
	if res.Error != "" {
		return "Error: " + Trim(res.Error, limit)
	}
	var parts []string
	add := func(s string) {
		if strings.TrimSpace(s) != "" {
			parts = append(parts, strings.TrimRight(Trim(s, limit), "\n"))
		}
	}
	switch res.Kind {
	case operations.KindBash:
		b := operations.Bash.Result(res)
		if b == nil {
			break
		}
		add(b.Stdout)
		if strings.TrimSpace(b.Stderr) != "" {
			add("Error: " + b.Stderr)
		}
		if b.TimedOut {
			parts = append(parts, "The command timed out and was interrupted; the output above is what it printed before that.")
		}
		if b.ExitCode != 0 {
			parts = append(parts, "Exit code: "+strconv.Itoa(b.ExitCode))
		}
	case operations.KindPython:
		p := operations.Python.Result(res)
		if p == nil {
			break
		}
		add(p.Output)
		if strings.TrimSpace(p.Error) != "" {
			add("Error: " + p.Error)
		}
		if p.TimedOut {
			parts = append(parts, "The code timed out and was interrupted.")
		}
	case operations.KindScore:
		if s := operations.Score.Result(res); s != nil {
			if s.Score != nil {
				parts = append(parts, "Score: "+strconv.FormatFloat(*s.Score, 'g', -1, 64))
			} else {
				parts = append(parts, "No score was given.")
			}
			add(s.Message)
		}
	case operations.KindScoreLog:
		if l := operations.ScoreLog.Result(res); l != nil {
			if len(l.Entries) == 0 {
				parts = append(parts, "No scores recorded yet.")
			}
			for _, e := range l.Entries {
				b, _ := json.Marshal(e)
				parts = append(parts, string(b))
			}
			if len(parts) > 0 {
				parts = []string{Trim(strings.Join(parts, "\n"), limit)}
			}
		}
	case operations.KindSubmit:
		parts = append(parts, "Answer submitted.")
	case operations.KindSandbox:
		if sb := operations.Sandbox.Result(res); sb != nil {
			add(formatSandbox(sb, limit))
		}
	}
	if len(parts) == 0 {
		return "(no output)"
	}
	return strings.Join(parts, "\n")
}

// Line returns the first non-empty line of s, clipped to n bytes (with
// "..." when cut or when more lines follow). Entry summaries use it.
func Line(s string, n int) string {
	s = strings.TrimSpace(s)
	first, rest, more := strings.Cut(s, "\n")
	first = strings.TrimSpace(first)
	if len(first) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(first[cut]) {
			cut--
		}
		return first[:cut] + "..."
	}
	if more && strings.TrimSpace(rest) != "" {
		return first + " ..."
	}
	return first
}

// Describe renders a call for people: "bash: ls -la", "submit: 6",
// "set_timeout: 30", "score".
func Describe(c Call) string {
	spec, ok := specs[c.Name]
	if !ok {
		return c.Name + " " + Line(string(c.Arguments), 160)
	}
	var args map[string]json.RawMessage
	_ = json.Unmarshal(c.Arguments, &args)
	switch {
	case spec.NoArgs:
		return c.Name
	case spec.IntBody:
		return c.Name + ": " + string(args["timeout"])
	case spec.TextArg != "":
		var s string
		_ = json.Unmarshal(args[spec.TextArg], &s)
		return c.Name + ": " + Line(s, 160)
	case c.Name == ToolLaunchSubagents:
		var a LaunchSubagentsArgs
		_ = c.Decode(&a)
		tasks := make([]string, len(a.Agents))
		for i, ag := range a.Agents {
			tasks[i] = Line(ag.Task, 60)
		}
		return fmt.Sprintf("%s: %d agents (%s)", c.Name, len(a.Agents), strings.Join(tasks, "; "))
	}
	return c.Name + " " + Line(string(c.Arguments), 160)
}

// Failed reports whether a tool result is a failure: an operation error, a
// non-zero exit, a timeout or a python error.
func Failed(res operations.Result) bool {
	b, p, sb := operations.Bash.Result(res), operations.Python.Result(res), operations.Sandbox.Result(res)
	switch {
	case res.Error != "":
		return true
	case b != nil:
		return b.ExitCode != 0 || b.TimedOut
	case p != nil:
		return p.Error != "" || p.TimedOut
	case sb != nil:
		return sb.Code != 0
	}
	return false
}
