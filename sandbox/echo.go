package sandbox

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// Bounds of what a tool echoes of its call (AgentFlow's data.inputs) and
// of a client's name the core quotes back: a client cannot make an answer
// larger than its question by much.
const (
	// EchoStringBytes is the most of one string an echo keeps.
	EchoStringBytes = 1 << 10
	// EchoItems is the most elements of one list, or keys of one object,
	// an echo keeps.
	EchoItems = 32
	// EchoBytes bounds the strings and items of one echo as a whole:
	// past it, what is left is elided.
	EchoBytes = 8 << 10
	// echoDepth is the deepest nesting an echo keeps.
	echoDepth = 4
)

// Echo returns a copy of v, a JSON-ready value (a decoded request's
// params), bounded for echoing back: strings cut at EchoStringBytes,
// lists and objects cut at EchoItems, nesting at 4 levels and the whole at
// about EchoBytes; each cut says what it left out ("…[N bytes cut]",
// "…[N more]"). Objects keep their keys in sorted order when cut.
func Echo(v any) any {
	budget := EchoBytes
	return echo(v, 0, &budget)
}

func echo(v any, depth int, budget *int) any {
	if *budget <= 0 {
		return "…"
	}
	switch x := v.(type) {
	case string:
		return EchoString(x, min(EchoStringBytes, max(*budget, 16)), budget)
	case []any:
		if depth >= echoDepth {
			return fmt.Sprintf("…[a list of %d]", len(x))
		}
		out := make([]any, 0, min(len(x), EchoItems+1))
		for i, e := range x {
			if i == EchoItems || *budget <= 0 {
				out = append(out, fmt.Sprintf("…[%d more]", len(x)-i))
				break
			}
			*budget -= 8
			out = append(out, echo(e, depth+1, budget))
		}
		return out
	case map[string]any:
		if depth >= echoDepth {
			return fmt.Sprintf("…[an object of %d keys]", len(x))
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(map[string]any, min(len(x), EchoItems+1))
		for i, k := range keys {
			if i == EchoItems || *budget <= 0 {
				out["…"] = fmt.Sprintf("[%d more keys]", len(keys)-i)
				break
			}
			ek := EchoString(k, 64, budget)
			out[ek] = echo(x[k], depth+1, budget)
		}
		return out
	}
	*budget -= 8
	return v
}

// EchoString returns s cut to at most max bytes (whole characters), with
// "…[N bytes cut]" appended when it was cut, and takes what it keeps from
// budget when budget is not nil.
func EchoString(s string, max int, budget *int) string {
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf("…[%d bytes cut]", len(s)-cut)
	}
	if budget != nil {
		*budget -= len(s)
	}
	return s
}
