package code

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/flockrun/flock/sandbox"
)

// Bounds of the answers of code:glob and code:grep.
const (
	// MaxGlobMatches is the most paths code:glob answers.
	MaxGlobMatches = 1000
	// DefaultGrepMatches and MaxGrepMatches are code:grep's default and
	// largest max_matches.
	DefaultGrepMatches = 100
	MaxGrepMatches     = 1000
	// MaxLineBytes cuts each line code:grep answers.
	MaxLineBytes = 500
	// binaryProbe is how much of a file is looked at for a NUL byte, which
	// marks it binary (not searched).
	binaryProbe = 8000
)

func invalid(format string, args ...any) error {
	return sandbox.Errorf(sandbox.CodeInvalidInput, format, args...)
}

// dirArg returns the optional path parameter (default the workspace) as a
// path local to the workspace, with whether it is a directory; a path that
// is missing or leaves the workspace (.., absolute, a symbolic link) is
// 4000.
func dirArg(root *os.Root, c *sandbox.Call) (client, local string, isDir bool, err error) {
	client = "."
	if c.Has("path") {
		if client, err = c.String("path"); err != nil {
			return "", "", false, err
		}
		if client == "" {
			client = "."
		}
	}
	if local, err = rel(c.Session.Workspace, client); err != nil {
		return "", "", false, err
	}
	st, err := root.Stat(local)
	if err != nil {
		return "", "", false, fileErr(client, err)
	}
	return client, local, st.IsDir(), nil
}

// splitPattern checks a glob pattern (slash-separated, relative, "**"
// spans directories) and returns its segments.
func splitPattern(name, p string) ([]string, error) {
	if p == "" {
		return nil, invalid("%s is empty", name)
	}
	if strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
		return nil, invalid("%s %q must be relative to the workspace", name, p)
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == ".." {
			return nil, invalid("%s %q is outside the workspace", name, p)
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, invalid("%s %q: %v", name, p, err)
		}
	}
	return segs, nil
}

// globMatch matches the slash-separated path segments against the pattern
// segments: "**" matches any number of directories, other segments match
// one name as path.Match does.
func globMatch(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if globMatch(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// walkFiles calls fn with every regular file beneath dir (local, slash
// form), in lexical order, with its path relative to dir. Directories are
// read through root, so a symbolic link is never followed out of the
// workspace: a link to a file inside is a file, a link to a directory is
// not descended (no loops), a link leading out is skipped. fn returns
// false to stop.
func walkFiles(ctx context.Context, root *os.Root, dir string, fn func(p, sub string) bool) error {
	start := filepath.ToSlash(dir)
	stop := fmt.Errorf("stop")
	err := fs.WalkDir(root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return err
			}
			return nil // an unreadable directory is skipped
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			st, err := root.Stat(filepath.FromSlash(p))
			if err != nil || !st.Mode().IsRegular() {
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		sub := p
		if start != "." {
			sub = strings.TrimPrefix(p, start+"/")
		}
		if !fn(p, sub) {
			return stop
		}
		return nil
	})
	if err == stop {
		return nil
	}
	return err
}

func (b *Backend) openRoot(c *sandbox.Call) (*os.Root, error) {
	root, err := os.OpenRoot(c.Session.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return root, nil
}

// glob lists the files matching pattern beneath path, relative to the
// workspace, sorted, at most MaxGlobMatches.
func (b *Backend) glob(ctx context.Context, c *sandbox.Call) (any, error) {
	pattern, err := c.String("pattern")
	if err != nil {
		return nil, err
	}
	segs, err := splitPattern("pattern", pattern)
	if err != nil {
		return nil, err
	}
	root, err := b.openRoot(c)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	client, dir, isDir, err := dirArg(root, c)
	if err != nil {
		return nil, err
	}
	if !isDir {
		return nil, invalid("path %s is not a directory", client)
	}
	found := []string{}
	truncated := false
	err = walkFiles(ctx, root, dir, func(p, sub string) bool {
		if !globMatch(segs, strings.Split(sub, "/")) {
			return true
		}
		if len(found) == MaxGlobMatches {
			truncated = true
			return false
		}
		found = append(found, p)
		return true
	})
	if err != nil {
		return nil, walkErr(ctx, client, err)
	}
	sort.Strings(found)
	return map[string]any{"pattern": pattern, "path": client, "matches": found, "count": len(found), "truncated": truncated}, nil
}

func walkErr(ctx context.Context, client string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fileErr(client, err)
}

// grepHit is one matching line.
type grepHit struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// grep searches the text files beneath path (or the one file path names)
// for a regular expression.
func (b *Backend) grep(ctx context.Context, c *sandbox.Call) (any, error) {
	pattern, err := c.String("pattern")
	if err != nil {
		return nil, err
	}
	if pattern == "" {
		return nil, invalid("pattern is empty")
	}
	fold := false
	if c.Has("ignore_case") {
		if fold, err = c.Bool("ignore_case"); err != nil {
			return nil, err
		}
	}
	expr := pattern
	if fold {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, invalid("pattern is not a valid regular expression (RE2 syntax): %v", err)
	}
	var filter []string
	if c.Has("glob") {
		g, err := c.String("glob")
		if err != nil {
			return nil, err
		}
		if filter, err = splitPattern("glob", g); err != nil {
			return nil, err
		}
	}
	limit := DefaultGrepMatches
	if c.Has("max_matches") {
		if limit, err = c.Int("max_matches"); err != nil {
			return nil, err
		}
		if limit < 1 || limit > MaxGrepMatches {
			return nil, invalid("max_matches must be between 1 and %d, got %d", MaxGrepMatches, limit)
		}
	}
	root, err := b.openRoot(c)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	client, dir, isDir, err := dirArg(root, c)
	if err != nil {
		return nil, err
	}
	hits := []grepHit{}
	truncated := false
	searched := 0
	// search answers false when the limit is reached.
	search := func(p string) bool {
		data, ok := b.textFile(root, filepath.FromSlash(p))
		if !ok {
			return true
		}
		searched++
		for n := 1; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !re.Match(line) {
				continue
			}
			if len(hits) == limit {
				truncated = true
				return false
			}
			hits = append(hits, grepHit{Path: p, Line: n, Text: cutLine(line)})
		}
		return true
	}
	if !isDir {
		search(filepath.ToSlash(dir))
	} else {
		err = walkFiles(ctx, root, dir, func(p, sub string) bool {
			if filter != nil {
				name := strings.Split(sub, "/")
				if len(filter) == 1 {
					name = name[len(name)-1:] // a bare name pattern matches at any depth
				}
				if !globMatch(filter, name) {
					return true
				}
			}
			return search(p)
		})
		if err != nil {
			return nil, walkErr(ctx, client, err)
		}
	}
	return map[string]any{"pattern": pattern, "path": client, "matches": hits, "count": len(hits),
		"truncated": truncated, "files_searched": searched}, nil
}

// textFile reads a file of at most max_file_size bytes that has no NUL
// byte in its first binaryProbe bytes; ok is false for any other.
func (b *Backend) textFile(root *os.Root, p string) ([]byte, bool) {
	data, _, err := readRegular(root, p, p, b.maxFile)
	if err != nil {
		return nil, false
	}
	if bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0 {
		return nil, false
	}
	return data, true
}

// cutLine returns line without a trailing \r, cut at MaxLineBytes (on a
// rune boundary) with "..." appended.
func cutLine(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) <= MaxLineBytes {
		return string(line)
	}
	cut := MaxLineBytes
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut]) + "..."
}

// edit replaces old_string by new_string in a file of the workspace: the
// exact string must occur once, or replace_all must be set.
func (b *Backend) edit(_ context.Context, c *sandbox.Call) (any, error) {
	oldS, err := c.String("old_string")
	if err != nil {
		return nil, err
	}
	newS, err := c.String("new_string")
	if err != nil {
		return nil, err
	}
	all := false
	if c.Has("replace_all") {
		if all, err = c.Bool("replace_all"); err != nil {
			return nil, err
		}
	}
	if oldS == "" {
		return nil, invalid("old_string is empty (code:write creates or replaces a whole file)")
	}
	if oldS == newS {
		return nil, invalid("old_string and new_string are the same: nothing to change")
	}
	root, p, r, err := b.open(c)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, st, err := readRegular(root, p, r, b.maxFile)
	if err != nil {
		return nil, err
	}
	text := string(data)
	n := strings.Count(text, oldS)
	switch {
	case n == 0:
		return nil, invalid("old_string not found in %s (it must match exactly, whitespace and line breaks included)", p)
	case n > 1 && !all:
		return nil, invalid("old_string occurs %d times in %s: add surrounding text to make it unique, or set replace_all to replace every occurrence", n, p)
	}
	if all {
		text = strings.ReplaceAll(text, oldS, newS)
	} else {
		text = strings.Replace(text, oldS, newS, 1)
	}
	if int64(len(text)) > b.maxFile {
		return nil, invalid("%s would be larger than %d bytes after the edit", p, b.maxFile)
	}
	if err := writeRegular(root, p, r, []byte(text), st.Mode().Perm()); err != nil {
		return nil, err
	}
	return map[string]any{"path": p, "replacements": n, "size": len(text)}, nil
}
