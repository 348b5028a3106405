package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// progress prints a run's steps as they happen: one line per entry the
// run appends and per operation that finishes. On a terminal it also keeps
// a status line (step, phase, usage, elapsed) at the bottom.
type progress struct {
	w       io.Writer
	store   runReader
	id      string
	tty     bool
	start   time.Time
	entries uint64
	step    uint64
	phase   string
	status  bool // a status line is on screen
}

func newProgress(w io.Writer, store runReader, id string, tty bool) *progress {
	return &progress{w: w, store: store, id: id, tty: tty, start: time.Now()}
}

func (p *progress) event(ctx context.Context, ev state.Event) {
	if p == nil {
		return
	}
	switch ev.Type {
	case state.EventPhase:
		p.step, p.phase = ev.Step, ev.Phase
		p.printEntries(ctx)
	case state.EventOp:
		var d struct {
			DurationMS int64  `json:"duration_ms"`
			Error      string `json:"error"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		if d.Error != "" {
			p.line(fmt.Sprintf("  ! %s failed after %dms: %s", ev.Kind, d.DurationMS, oneLine(d.Error, 160)))
		}
	case state.EventRun:
		p.printEntries(ctx)
	}
	p.statusLine()
}

func (p *progress) printEntries(ctx context.Context) {
	es, err := p.store.Entries(ctx, p.id, p.entries, 1000)
	if err != nil {
		return
	}
	for _, e := range es {
		p.entries = e.Seq
		p.line(FormatEntry(e))
	}
}

func (p *progress) line(s string) {
	if p.tty && p.status {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = false
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) statusLine() {
	if !p.tty {
		return
	}
	h, err := p.store.Run(context.Background(), p.id)
	if err != nil {
		return
	}
	fmt.Fprintf(p.w, "\r\033[K[step %d · %s · %d tokens · %d actions · %.1fs]", p.step, p.phase,
		h.Usage.Tokens, h.Usage.Actions, time.Since(p.start).Seconds())
	p.status = true
}

func (p *progress) done() {
	if p != nil && p.tty && p.status {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = false
	}
}

// FormatEntry renders an entry as one line for humans. Entries with a
// "summary" string field print it; well-known types get a shape of their
// own; anything else prints its type and compact JSON.
func FormatEntry(e phases.Entry) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(e.Data, &m) != nil {
		return fmt.Sprintf("[%s] %s", e.Type, oneLine(string(e.Data), 200))
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}
	if s := str("summary"); s != "" {
		return fmt.Sprintf("[%s] %s", e.Type, oneLine(s, 240))
	}
	switch e.Type {
	case "command":
		var code int
		_ = json.Unmarshal(m["exit_code"], &code)
		out := strings.TrimSpace(str("stdout") + "\n" + str("stderr"))
		return fmt.Sprintf("$ %s  → exit %d  %s", oneLine(str("command"), 120), code, oneLine(out, 120))
	case record.EntryTypeLog:
		return "[log] " + oneLine(str("content"), 240)
	case record.EntryTypeSubmission:
		return "[submission] " + oneLine(str("answer"), 240)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+string(m[k]))
	}
	return fmt.Sprintf("[%s] %s", e.Type, oneLine(strings.Join(parts, " "), 200))
}

// oneLine collapses whitespace and caps s at n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
