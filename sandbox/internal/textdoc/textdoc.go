package textdoc

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Document is one parsed file.
type Document struct {
	// ID is the slash-separated path relative to the folder, without extension.
	ID string
	// Path is the slash-separated path relative to the folder, with extension.
	Path     string
	Title    string
	Sections []Section
}

// Section is a heading and the paragraphs up to the next heading. The first section of
// a document has an empty Heading when text comes before any heading.
type Section struct {
	Heading    string
	Level      int // 1–6 for headings, 0 for text before the first heading
	Paragraphs []string
}

// Text is the section's paragraphs joined by blank lines.
func (s Section) Text() string { return strings.Join(s.Paragraphs, "\n\n") }

// File is one document file found by List.
type File struct {
	Path    string // slash-separated, relative to the folder
	Size    int64
	ModTime int64 // UnixNano
}

// Supported reports whether a file name has an extension textdoc reads.
func Supported(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown", ".txt", ".html", ".htm":
		return true
	}
	return false
}

// List returns the supported regular files beneath dir, sorted by path. Hidden files
// and directories (a leading dot) and symbolic links are skipped.
func List(dir string) ([]File, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("documents folder: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("documents folder %s: %w", dir, ErrNotDir)
	}
	var files []File
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !Supported(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: filepath.ToSlash(rel), Size: fi.Size(), ModTime: fi.ModTime().UnixNano()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("documents folder: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// Load lists and parses every supported file beneath dir.
func Load(dir string) ([]Document, error) {
	files, err := List(dir)
	if err != nil {
		return nil, err
	}
	docs := make([]Document, 0, len(files))
	seen := make(map[string]string, len(files))
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, fmt.Errorf("documents folder: %w", err)
		}
		d := Parse(f.Path, data)
		if prev, ok := seen[d.ID]; ok {
			return nil, fmt.Errorf("documents folder: %s and %s: %w", prev, f.Path, ErrDuplicateID)
		}
		seen[d.ID] = f.Path
		docs = append(docs, d)
	}
	return docs, nil
}

// Parse parses one file's content by the extension of rel (a slash-separated relative
// path). Empty sections are dropped.
func Parse(rel string, data []byte) Document {
	ext := path.Ext(rel)
	d := Document{ID: strings.TrimSuffix(rel, ext), Path: rel}
	switch strings.ToLower(ext) {
	case ".html", ".htm":
		d.Title, d.Sections = parseHTML(data)
	case ".txt":
		d.Sections = []Section{{Paragraphs: paragraphs(string(data))}}
	default:
		d.Sections = parseMarkdown(data)
	}
	kept := d.Sections[:0]
	for _, s := range d.Sections {
		if s.Heading == "" && len(s.Paragraphs) == 0 {
			continue
		}
		kept = append(kept, s)
	}
	d.Sections = kept
	if d.Title == "" {
		for _, s := range d.Sections {
			if s.Level == 1 && s.Heading != "" {
				d.Title = s.Heading
				break
			}
		}
	}
	if d.Title == "" {
		d.Title = path.Base(d.ID)
	}
	return d
}

// paragraphs splits text at blank lines, trimming each paragraph.
func paragraphs(text string) []string {
	var out []string
	var cur []string
	flush := func() {
		if p := strings.TrimSpace(strings.Join(cur, "\n")); p != "" {
			out = append(out, p)
		}
		cur = cur[:0]
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		cur = append(cur, strings.TrimRight(line, " \t"))
	}
	flush()
	return out
}

func parseMarkdown(data []byte) []Section {
	sections := []Section{{}}
	var cur []string
	inFence := false
	fence := ""
	flush := func() {
		if p := strings.TrimSpace(strings.Join(cur, "\n")); p != "" {
			s := &sections[len(sections)-1]
			s.Paragraphs = append(s.Paragraphs, p)
		}
		cur = cur[:0]
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimSpace(line)
		if inFence {
			cur = append(cur, line)
			if strings.HasPrefix(trimmed, fence) {
				inFence = false
				flush()
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			flush()
			inFence, fence = true, trimmed[:3]
			cur = append(cur, line)
			continue
		}
		if level, heading, ok := atxHeading(trimmed); ok {
			flush()
			sections = append(sections, Section{Heading: heading, Level: level})
			continue
		}
		if trimmed == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return sections
}

// atxHeading parses "## Heading ##" into level 2 and "Heading".
func atxHeading(line string) (int, string, bool) {
	level := 0
	for level < len(line) && line[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(line) && line[level] != ' ' && line[level] != '\t') {
		return 0, "", false
	}
	h := strings.TrimSpace(line[level:])
	h = strings.TrimSpace(strings.TrimRight(h, "#"))
	return level, h, true
}
