package textdoc

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseHTML reduces an HTML page to its <title> and sections of paragraphs.
func parseHTML(data []byte) (string, []Section) {
	z := html.NewTokenizer(bytes.NewReader(data))
	sections := []Section{{}}
	var title string
	var buf strings.Builder
	skip := 0        // depth inside dropped elements
	heading := 0     // level while inside h1–h6
	inTitle := false // inside <title>
	inPre := 0       // depth inside <pre>
	flush := func() {
		text := buf.String()
		buf.Reset()
		if inPre == 0 {
			text = strings.Join(strings.Fields(text), " ")
		} else {
			text = strings.Trim(text, "\n")
		}
		if strings.TrimSpace(text) == "" {
			return
		}
		if heading > 0 {
			sections = append(sections, Section{Heading: text, Level: heading})
			return
		}
		s := &sections[len(sections)-1]
		s.Paragraphs = append(s.Paragraphs, text)
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			flush()
			return title, sections
		case html.TextToken:
			if skip > 0 {
				continue
			}
			if inTitle {
				title += strings.Join(strings.Fields(string(z.Text())), " ")
				continue
			}
			buf.Write(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if dropped(a) {
				if tt == html.StartTagToken {
					skip++
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch {
			case a == atom.Title:
				inTitle = tt == html.StartTagToken
			case headingLevel(a) > 0:
				flush()
				heading = headingLevel(a)
			case a == atom.Br:
				buf.WriteByte('\n')
			case a == atom.Td || a == atom.Th:
				buf.WriteString(" | ")
			case a == atom.Pre:
				flush()
				inPre++
			case block(a):
				flush()
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if dropped(a) {
				if skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch {
			case a == atom.Title:
				inTitle = false
			case headingLevel(a) > 0:
				flush()
				heading = 0
			case a == atom.Pre:
				flush()
				if inPre > 0 {
					inPre--
				}
			case block(a):
				flush()
			}
		}
	}
}

func headingLevel(a atom.Atom) int {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

// dropped elements contribute no text.
func dropped(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Nav, atom.Header, atom.Footer, atom.Noscript, atom.Template, atom.Svg:
		return true
	}
	return false
}

// block elements end the paragraph in progress.
func block(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Li, atom.Ul, atom.Ol, atom.Blockquote, atom.Tr, atom.Table,
		atom.Section, atom.Article, atom.Main, atom.Aside, atom.Dl, atom.Dt, atom.Dd,
		atom.Figure, atom.Figcaption, atom.Hr, atom.Body, atom.Html:
		return true
	}
	return false
}
