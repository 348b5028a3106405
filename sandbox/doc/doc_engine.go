package doc

import (
	"context"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/flockrun/flock/phases/settings"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/sandbox/internal/textdoc"
)

// Config is the backend's section (apis.doc or resources.doc.config).
type Config struct {
	// DocumentsDir is the folder of .md, .html and .txt documents (required).
	DocumentsDir string
	// MaxSearchResults is the number of results per keyword when a call gives none (10).
	MaxSearchResults int
	// MaxTextToken clips doc:read's text, in characters, when a call gives none (20000).
	MaxTextToken int
}

// section is the config section as written, for the settings decoder.
type section struct {
	DocumentsDir     string         `json:"documents_dir"`
	MaxSearchResults *sandbox.Count `json:"max_search_results" default:"10" min:"1" max:"2147483647"`
	MaxTextToken     *sandbox.Count `json:"max_text_token" default:"20000" min:"1" max:"2147483647"`
}

// Validate requires documents_dir.
func (s section) Validate() error {
	if strings.TrimSpace(s.DocumentsDir) == "" {
		return settings.Errorf("documents_dir", "%w", ErrMissingSetting)
	}
	return nil
}

// parseConfig reads the section with decode (Env.Decode, or
// sandbox.DecodeConfig of a map); errors are *sandbox.ConfigError naming
// the key, a bad value's wrapping ErrBadSetting.
func parseConfig(decode func(any) error) (Config, error) {
	var s section
	if err := decode(&s); err != nil {
		return Config{}, sandbox.Classify(err, ErrMissingSetting, ErrBadSetting)
	}
	return Config{
		DocumentsDir:     filepath.Clean(s.DocumentsDir),
		MaxSearchResults: int(s.MaxSearchResults.Int()),
		MaxTextToken:     int(s.MaxTextToken.Int()),
	}, nil
}

// Engine searches and reads the configured documents. It re-reads the folder when a
// file's size or mtime changed since the last call; it is safe for concurrent use.
type Engine struct {
	cfg Config

	mu    sync.Mutex
	files []textdoc.File               // guarded by mu: the listing docs were read from
	docs  []textdoc.Document           // guarded by mu
	byID  map[string]*textdoc.Document // guarded by mu
}

// NewEngine validates the config section; it touches no file.
func NewEngine(cfg map[string]any) (*Engine, error) {
	return newEngine(func(v any) error { return sandbox.DecodeConfig(cfg, v) })
}

// newEngine is NewEngine of the section decode reads.
func newEngine(decode func(any) error) (*Engine, error) {
	c, err := parseConfig(decode)
	if err != nil {
		return nil, err
	}
	return &Engine{cfg: c}, nil
}

// WarmUp reads the documents folder.
func (e *Engine) WarmUp(ctx context.Context) error {
	_, _, err := e.load()
	return err
}

// load returns the current documents, re-reading the folder when it changed.
func (e *Engine) load() ([]textdoc.Document, map[string]*textdoc.Document, error) {
	files, err := textdoc.List(e.cfg.DocumentsDir)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.docs != nil && sameFiles(e.files, files) {
		return e.docs, e.byID, nil
	}
	docs, err := textdoc.Load(e.cfg.DocumentsDir)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]*textdoc.Document, len(docs))
	for i := range docs {
		byID[docs[i].ID] = &docs[i]
	}
	e.files, e.docs, e.byID = files, docs, byID
	return docs, byID, nil
}

func sameFiles(a, b []textdoc.File) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// SectionID names section i (0-based) of document id: "<id>#<i+1>".
func SectionID(docID string, i int) string { return docID + "#" + strconv.Itoa(i+1) }

// Documents returns the ids of the configured documents, sorted.
func (e *Engine) Documents() ([]string, error) {
	docs, _, err := e.load()
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}

type match struct {
	sectionID string
	docID     string
	heading   string
	kind      string // "heading" or "paragraph"
	text      string
	score     int
	order     int
}

// Search finds the headings and paragraphs that contain every word of each keyword
// (case-insensitive), best first (occurrences, headings count three times), at most
// max per keyword, within one document when docID is not empty. The text is
// AgentFlow's shape: a line per keyword and a <Search_Result> block.
func (e *Engine) Search(ctx context.Context, keywords []string, max int, docID string) (string, error) {
	docs, byID, err := e.load()
	if err != nil {
		return "", err
	}
	if docID != "" {
		d, ok := byID[docID]
		if !ok {
			return "", fmt.Errorf("%w: %q (known: %s)", ErrUnknownDocument, docID, strings.Join(ids(docs), ", "))
		}
		docs = []textdoc.Document{*d}
	}
	if max <= 0 {
		max = e.cfg.MaxSearchResults
	}
	var out []string
	for _, kw := range keywords {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		terms := strings.Fields(strings.ToLower(kw))
		if len(terms) == 0 {
			return "", fmt.Errorf("key_words: %w", ErrEmptyKeyword)
		}
		var ms []match
		for _, d := range docs {
			for i, s := range d.Sections {
				sid := SectionID(d.ID, i)
				if n := countAll(s.Heading, terms); n > 0 {
					ms = append(ms, match{sid, d.ID, s.Heading, "heading", s.Heading, 3 * n, len(ms)})
				}
				for _, p := range s.Paragraphs {
					if n := countAll(p, terms); n > 0 {
						ms = append(ms, match{sid, d.ID, s.Heading, "paragraph", p, n, len(ms)})
					}
				}
			}
		}
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].score > ms[j].score })
		out = append(out, formatSearch(kw, ms, max))
	}
	return strings.Join(out, "\n\n"), nil
}

// countAll is the number of occurrences of the terms in text, or 0 when one is absent.
func countAll(text string, terms []string) int {
	if text == "" {
		return 0
	}
	low := strings.ToLower(text)
	total := 0
	for _, t := range terms {
		n := strings.Count(low, t)
		if n == 0 {
			return 0
		}
		total += n
	}
	return total
}

const snippetChars = 600

func formatSearch(kw string, ms []match, max int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "A Document search for `%s` found %d results:", kw, len(ms))
	if len(ms) == 0 {
		return b.String()
	}
	if len(ms) > max {
		fmt.Fprintf(&b, " (showing %d)", max)
		ms = ms[:max]
	}
	b.WriteString("\n\n<Search_Result>\n")
	for _, m := range ms {
		fmt.Fprintf(&b, `<Result section_id="%s" document="%s" type="%s" heading="%s">`,
			escape(m.sectionID), escape(m.docID), m.kind, escape(m.heading))
		b.WriteString(escape(clip(m.text, snippetChars, "…")))
		b.WriteString("</Result>\n")
	}
	b.WriteString("</Search_Result>")
	return b.String()
}

// Read returns the text of the sections, each headed "[id] title — heading", clipped
// to maxChars characters (the config's max_text_token when maxChars ≤ 0). Unknown ids
// are listed at the end; when every id is unknown it fails with ErrUnknownSection.
func (e *Engine) Read(ctx context.Context, sectionIDs []string, maxChars int) (string, error) {
	_, byID, err := e.load()
	if err != nil {
		return "", err
	}
	if maxChars <= 0 {
		maxChars = e.cfg.MaxTextToken
	}
	var parts, unknown []string
	for _, sid := range sectionIDs {
		s, d, ok := lookup(byID, sid)
		if !ok {
			unknown = append(unknown, sid)
			continue
		}
		head := "[" + sid + "] " + d.Title
		if s.Heading != "" && s.Heading != d.Title {
			head += " — " + s.Heading
		}
		parts = append(parts, head+"\n\n"+s.Text())
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: %s", ErrUnknownSection, strings.Join(unknown, ", "))
	}
	text := clip(strings.Join(parts, "\n\n"), maxChars, fmt.Sprintf("\n[truncated at %d characters]", maxChars))
	if len(unknown) > 0 {
		text += "\n\n[unknown section ids: " + strings.Join(unknown, ", ") + "]"
	}
	return text, nil
}

func lookup(byID map[string]*textdoc.Document, sid string) (textdoc.Section, *textdoc.Document, bool) {
	i := strings.LastIndexByte(sid, '#')
	if i < 0 {
		return textdoc.Section{}, nil, false
	}
	d, ok := byID[sid[:i]]
	if !ok {
		return textdoc.Section{}, nil, false
	}
	n, err := strconv.Atoi(sid[i+1:])
	if err != nil || n < 1 || n > len(d.Sections) {
		return textdoc.Section{}, nil, false
	}
	return d.Sections[n-1], d, true
}

func ids(docs []textdoc.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

// clip cuts s to max characters, appending mark when it cut.
func clip(s string, max int, mark string) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + mark
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
