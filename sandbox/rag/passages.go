package rag

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flockrun/flock/sandbox/internal/textdoc"
)

// Passage is one indexed unit: a run of paragraphs of one section, at most the
// configured number of characters (a longer paragraph is cut at word boundaries).
type Passage struct {
	ID    string `json:"id"`  // "<document path>#<n>", n from 1 in document order
	Doc   string `json:"doc"` // document path relative to the folder
	Title string `json:"title"`
	Text  string `json:"text"`
}

// splitPassages cuts the documents into passages of at most maxChars characters.
func splitPassages(docs []textdoc.Document, maxChars int) []Passage {
	var out []Passage
	for _, d := range docs {
		n := 0
		add := func(title, text string) {
			if strings.TrimSpace(text) == "" {
				return
			}
			n++
			out = append(out, Passage{ID: fmt.Sprintf("%s#%d", d.Path, n), Doc: d.Path, Title: title, Text: text})
		}
		for _, s := range d.Sections {
			title := d.Title
			if s.Heading != "" && s.Heading != d.Title {
				title = d.Title + " — " + s.Heading
			}
			var cur []string
			size := 0
			for _, p := range s.Paragraphs {
				for _, piece := range cutWords(p, maxChars) {
					l := utf8.RuneCountInString(piece)
					if size > 0 && size+2+l > maxChars {
						add(title, strings.Join(cur, "\n\n"))
						cur, size = cur[:0], 0
					}
					if size > 0 {
						size += 2
					}
					cur = append(cur, piece)
					size += l
				}
			}
			add(title, strings.Join(cur, "\n\n"))
		}
	}
	return out
}

// cutWords splits text into pieces of at most maxChars characters at spaces; a single
// word longer than maxChars is cut inside.
func cutWords(text string, maxChars int) []string {
	if utf8.RuneCountInString(text) <= maxChars {
		return []string{text}
	}
	var out []string
	var b strings.Builder
	size := 0
	for _, w := range strings.Fields(text) {
		for utf8.RuneCountInString(w) > maxChars {
			if size > 0 {
				out = append(out, b.String())
				b.Reset()
				size = 0
			}
			r := []rune(w)
			out = append(out, string(r[:maxChars]))
			w = string(r[maxChars:])
		}
		l := utf8.RuneCountInString(w)
		if size > 0 && size+1+l > maxChars {
			out = append(out, b.String())
			b.Reset()
			size = 0
		}
		if size > 0 {
			b.WriteByte(' ')
			size++
		}
		b.WriteString(w)
		size += l
	}
	if size > 0 {
		out = append(out, b.String())
	}
	return out
}
