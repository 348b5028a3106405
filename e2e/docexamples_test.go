package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// The documentation's shell examples are run by TestDocExamples. Every
// fenced block of README.md and docs/*.md whose language is sh, bash or
// shell is run, or carries a directive saying why not. Directives are HTML
// comments on the lines right above the opening fence (invisible on the
// rendered page), one per comment:
//
//	<!-- doc-test: skip: REASON -->            the block is not run
//	<!-- doc-test: skip-line PREFIX: REASON --> its lines starting with PREFIX are not run
//	<!-- doc-test: server COMMAND -->           COMMAND runs in the background before the block
//	<!-- doc-test: background PREFIX -->        its lines starting with PREFIX run in the background
//	<!-- doc-test: let NAME=SHELL -->           the word NAME in the block stands for $(SHELL)
//	<!-- doc-test: file PATH -->                (any language) the block is the content of PATH
//	<!-- doc-test: writes PATH...: REASON -->   the document adds these files to the checkout
//
// A line ending in " &" runs in the background too. After a run of
// background lines the harness waits until each one's HTTP port answers
// (its --addr, else flock serve's 46397 or flock sandbox's 18890), so the
// next line can talk to it. A `file` block is written to PATH in the copy
// before the next block runs; when PATH is a file of the repository, the
// block must be its content (JSON and YAML compared as data), so the page
// shows what ships.
//
// What a document leaves in the checkout must be git-ignored (data
// directories, rollout results, binaries), unless a `writes` directive
// names it (a tutorial's new package) or a `file` block wrote it.
//
// The usage lines of a shipped YAML file (the first run of comment lines
// indented "#   " in its leading comment) are a block too.
//
// How a document runs: the repository's files (git ls-files, tracked and
// untracked but not ignored) are copied to a temporary directory, which is
// mounted over the checkout's own path in a new mount, network and PID
// namespace (bubblewrap), with a private /tmp. So the commands see a fresh
// checkout at the path Go's build cache knows (go build and go run reuse the
// cache of the test's own build), the documented ports (46397, 18890,
// 8081...) are free and private, and every process a block started dies with
// the block. A document's blocks run in order in one copy, like a reader
// following it. `flock` on the PATH is the binary TestMain built; a block
// that says ./flock uses what the document built. curl fails on HTTP errors
// (--fail-with-body is added), and every block runs under set -euo
// pipefail, so a wrong example fails the test.
//
// TestDocCommandFlags checks every flock command of those blocks, the ones
// not run included, against the binary's -h: the command exists and has
// each flag the line gives. TestDocLinks checks the documents' relative
// links.

// docBlock is a code block of a document, with its directives.
type docBlock struct {
	file string // path relative to the repository
	line int    // the opening fence's line (1-based)
	lang string
	text string

	skip       string // reason the block is not run
	skipLines  []prefixReason
	servers    []string // commands started before the block
	background []string // prefixes of lines run in the background
	lets       []letVar
	writeFile  string   // path the block is the content of
	writes     []string // paths the document adds to the checkout
}

type prefixReason struct{ prefix, reason string }

type letVar struct{ name, expr string }

func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// shell reports whether the block is a shell example.
func (b docBlock) shell() bool {
	switch b.lang {
	case "sh", "bash", "shell":
		return true
	}
	return false
}

var directiveRE = regexp.MustCompile(`^<!--\s*doc-test:\s*(.*?)\s*-->$`)

// parseDirective applies one directive's text to b.
func parseDirective(b *docBlock, d string) error {
	verb, rest, _ := strings.Cut(d, " ")
	rest = strings.TrimSpace(rest)
	switch strings.TrimSuffix(verb, ":") {
	case "skip":
		if rest == "" {
			return fmt.Errorf("skip needs a reason")
		}
		b.skip = rest
	case "skip-line":
		p, r, ok := strings.Cut(rest, ": ")
		if !ok || strings.TrimSpace(p) == "" || strings.TrimSpace(r) == "" {
			return fmt.Errorf("want skip-line PREFIX: REASON, got %q", d)
		}
		b.skipLines = append(b.skipLines, prefixReason{strings.TrimSpace(p), strings.TrimSpace(r)})
	case "server":
		if rest == "" {
			return fmt.Errorf("server needs a command")
		}
		b.servers = append(b.servers, rest)
	case "background":
		if rest == "" {
			return fmt.Errorf("background needs a line prefix")
		}
		b.background = append(b.background, rest)
	case "let":
		name, expr, ok := strings.Cut(rest, "=")
		if !ok || !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(name) || expr == "" {
			return fmt.Errorf("want let NAME=SHELL (NAME in capitals), got %q", d)
		}
		b.lets = append(b.lets, letVar{name, expr})
	case "writes":
		paths, reason, ok := strings.Cut(rest, ": ")
		if !ok || strings.TrimSpace(paths) == "" || strings.TrimSpace(reason) == "" {
			return fmt.Errorf("want writes PATH...: REASON, got %q", d)
		}
		b.writes = append(b.writes, strings.Fields(paths)...)
	case "file":
		if rest == "" || filepath.IsAbs(rest) || strings.Contains(rest, "..") {
			return fmt.Errorf("file needs a path inside the repository, got %q", rest)
		}
		b.writeFile = rest
	default:
		return fmt.Errorf("unknown directive %q (skip, skip-line, server, background, let, file, writes)", verb)
	}
	return nil
}

var shellStartRE = regexp.MustCompile(`^(\./flock|flock|go|curl|apt-get|make|sudo|python3)( |$)`)

// parseMarkdown returns a document's fenced code blocks with their
// directives. It refuses directives that are not right above a fence and
// shell commands in indented code blocks, which the test could not run.
func parseMarkdown(file string, src []byte) ([]docBlock, error) {
	var blocks []docBlock
	var pending []string // directives of the next fence
	var errs []string
	lines := strings.Split(string(src), "\n")
	prevBlank := true
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if m := directiveRE.FindStringSubmatch(trimmed); m != nil {
			pending = append(pending, m[1])
			continue
		}
		if indent, fence, info, ok := openFence(line); ok {
			b := docBlock{file: file, line: i + 1, lang: strings.Fields(info + " x")[0]}
			if info == "" {
				b.lang = ""
			}
			for _, d := range pending {
				if err := parseDirective(&b, d); err != nil {
					errs = append(errs, fmt.Sprintf("%s:%d: %v", file, i+1, err))
				}
			}
			pending = nil
			var body []string
			closed := false
			for i++; i < len(lines); i++ {
				l := lines[i]
				if strings.TrimSpace(l) == fence || (strings.HasPrefix(strings.TrimSpace(l), fence) && strings.Trim(strings.TrimSpace(l), fence[:1]) == "") {
					closed = true
					break
				}
				// Fences inside a list item are indented; so is their body.
				if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
					l = l[indent:]
				}
				body = append(body, l)
			}
			if !closed {
				errs = append(errs, fmt.Sprintf("%s:%d: unclosed code fence", file, b.line))
			}
			b.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, b)
			prevBlank = false
			continue
		}
		if len(pending) > 0 {
			errs = append(errs, fmt.Sprintf("%s:%d: a doc-test directive must be right above a code fence", file, i))
			pending = nil
		}
		// An indented code block (four spaces after a blank line) that
		// holds a command: the test cannot see it.
		if prevBlank && strings.HasPrefix(line, "    ") && shellStartRE.MatchString(trimmed) {
			errs = append(errs, fmt.Sprintf("%s:%d: shell command in an indented code block; fence it as ```sh so the doc test runs it: %q", file, i+1, trimmed))
		}
		prevBlank = trimmed == "" || (prevBlank && strings.HasPrefix(line, "    "))
	}
	if len(errs) > 0 {
		return blocks, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return blocks, nil
}

// openFence reports whether line opens a fenced code block: its
// indentation, the fence (``` or ~~~, three or more) and the info string.
func openFence(line string) (indent int, fence, info string, ok bool) {
	t := strings.TrimLeft(line, " ")
	indent = len(line) - len(t)
	if indent > 3 && !strings.HasPrefix(strings.TrimSpace(line), "```") {
		return 0, "", "", false
	}
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return indent, strings.Repeat(c, n), strings.TrimSpace(t[n:]), true
		}
	}
	return 0, "", "", false
}

// yamlUsage is the usage block of a shipped YAML file: the first run of
// lines indented "#   " in its leading comment, without the "#   ".
func yamlUsage(file string, src []byte) (docBlock, bool) {
	sc := bufio.NewScanner(bytes.NewReader(src))
	var body []string
	start, n := 0, 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if !strings.HasPrefix(l, "#") {
			break
		}
		if strings.HasPrefix(l, "#   ") {
			if start == 0 {
				start = n
			}
			body = append(body, strings.TrimPrefix(l, "#   "))
			continue
		}
		if start != 0 {
			break
		}
	}
	if start == 0 {
		return docBlock{}, false
	}
	return docBlock{file: file, line: start, lang: "sh", text: strings.Join(body, "\n") + "\n"}, true
}

// docDocuments lists the documents the test reads, each with its blocks.
func docDocuments(t *testing.T, repo string) map[string][]docBlock {
	t.Helper()
	docs := map[string][]docBlock{}
	mds, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	mds = append([]string{filepath.Join(repo, "README.md")}, mds...)
	for _, p := range mds {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, p)
		blocks, err := parseMarkdown(rel, src)
		if err != nil {
			t.Error(err)
		}
		docs[rel] = blocks
	}
	ymls, err := filepath.Glob(filepath.Join(repo, "configs", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ymls {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, p)
		if b, ok := yamlUsage(rel, src); ok {
			docs[rel] = []docBlock{b}
		}
	}
	return docs
}

// unit is one logical command line of a block (continuation lines joined)
// or a heredoc's line, which is passed on as it is.
type unit struct {
	text    string // as written, possibly several lines
	command bool   // a command line (not a heredoc body)
}

var heredocRE = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// splitUnits cuts a block's text into command lines and heredoc bodies.
func splitUnits(text string) []unit {
	var out []unit
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		cmd := lines[i]
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		out = append(out, unit{text: cmd, command: true})
		if m := heredocRE.FindStringSubmatch(cmd); m != nil {
			var body []string
			for i++; i < len(lines); i++ {
				body = append(body, lines[i])
				if strings.TrimSpace(lines[i]) == m[1] {
					break
				}
			}
			out = append(out, unit{text: strings.Join(body, "\n")})
		}
	}
	return out
}

// stripComment removes a trailing shell comment (a # after a blank,
// outside quotes) and trailing blanks.
func stripComment(s string) string {
	var quote rune
	prev := ' '
	for i, c := range s {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (prev == ' ' || prev == '\t'):
			return strings.TrimRight(s[:i], " \t")
		}
		prev = c
	}
	return strings.TrimRight(s, " \t")
}

var addrRE = regexp.MustCompile(`--addr[ =]\S*:(\d+)\b`)

// serverPort is the port a background command listens on.
func serverPort(cmd string) (int, error) {
	if m := addrRE.FindStringSubmatch(cmd); m != nil {
		return strconv.Atoi(m[1])
	}
	words := strings.Fields(cmd)
	for i, w := range words {
		if w == "flock" || strings.HasSuffix(w, "/flock") {
			switch {
			case i+1 < len(words) && words[i+1] == "sandbox":
				return 18890, nil
			case i+1 < len(words) && (words[i+1] == "serve" || strings.HasPrefix(words[i+1], "-")):
				return 46397, nil
			}
		}
	}
	return 0, fmt.Errorf("cannot tell the port of background command %q: give it --addr HOST:PORT", cmd)
}

// docPrelude is the start of every block's script.
const docPrelude = `set -euo pipefail
curl() { command curl --fail-with-body "$@"; }
__doc_wait() { # PID PORT: until something answers HTTP on PORT
	local -; set +x
	local i
	for ((i = 0; i < 1200; i++)); do
		if command curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$2/"; then return 0; fi
		if ! kill -0 "$1" 2>/dev/null; then echo "doc-test: the background command (pid $1) ended before port $2 answered" >&2; return 1; fi
		sleep 0.05
	done
	echo "doc-test: nothing answered on port $2 within 60 s" >&2
	return 1
}
set -x
`

// script turns a block into the bash script the test runs.
func (b docBlock) script() (string, error) {
	var sb strings.Builder
	sb.WriteString(docPrelude)
	var waits []string
	npid := 0
	flush := func() {
		for _, w := range waits {
			sb.WriteString(w + "\n")
		}
		waits = nil
	}
	background := func(cmd string) error {
		port, err := serverPort(cmd)
		if err != nil {
			return err
		}
		npid++
		fmt.Fprintf(&sb, "%s &\n__doc_pid%d=$!\n", cmd, npid)
		waits = append(waits, fmt.Sprintf("__doc_wait $__doc_pid%d %d", npid, port))
		return nil
	}
	for _, s := range b.servers {
		if err := background(s); err != nil {
			return "", err
		}
	}
	flush()
	lets := map[string]bool{}
	skipping := false // the heredoc of a skipped line is skipped too
	for _, u := range splitUnits(b.text) {
		orig := strings.TrimSpace(stripComment(u.text))
		if !u.command && skipping {
			continue
		}
		if skipping = u.command && b.skipped(orig, &sb); skipping || orig == "" {
			continue
		}
		text := u.text
		for _, l := range b.lets {
			re := regexp.MustCompile(`\b` + l.name + `\b`)
			if !re.MatchString(text) {
				continue
			}
			if u.command && !lets[l.name] {
				flush()
				fmt.Fprintf(&sb, "%s=$(%s)\n", l.name, l.expr)
				lets[l.name] = true
			}
			text = re.ReplaceAllLiteralString(text, "${"+l.name+"}")
		}
		if !u.command {
			sb.WriteString(text + "\n")
			continue
		}
		cmd := strings.TrimSpace(stripComment(text))
		bg := strings.HasSuffix(cmd, "&") && !strings.HasSuffix(cmd, "&&")
		for _, p := range b.background {
			bg = bg || strings.HasPrefix(orig, p)
		}
		if bg {
			if err := background(strings.TrimSpace(strings.TrimSuffix(cmd, "&"))); err != nil {
				return "", err
			}
			continue
		}
		flush()
		sb.WriteString(text + "\n")
	}
	flush()
	return sb.String(), nil
}

// skipped reports whether a skip-line directive covers the command line
// cmd, and if so writes a no-op saying why in its place.
func (b docBlock) skipped(cmd string, sb *strings.Builder) bool {
	for _, s := range b.skipLines {
		if strings.HasPrefix(cmd, s.prefix) {
			fmt.Fprintf(sb, ": %s\n", shellQuote("doc-test: not run: "+s.reason))
			return true
		}
	}
	return false
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// gitArgs are the arguments that point git at the repository: its own
// .git, or, for a copy of the sources without one (a CI tarball), an empty
// repository whose work tree it is, so that .gitignore still applies.
func gitArgs(t *testing.T, repo string) []string {
	t.Helper()
	if exec.Command("git", "-C", repo, "rev-parse", "--is-inside-work-tree").Run() == nil {
		return []string{"-C", repo}
	}
	dir := filepath.Join(t.TempDir(), "git")
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return []string{"-C", repo, "--git-dir", filepath.Join(dir, ".git"), "--work-tree", repo}
}

// repoFiles lists the repository's files that a fresh checkout would have,
// plus new ones not yet committed (not the ignored ones).
func repoFiles(t *testing.T, repo string) []string {
	t.Helper()
	out, err := exec.Command("git", append(gitArgs(t, repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard")...).Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

// copyRepo copies files of repo into dir, keeping their modes.
func copyRepo(t *testing.T, repo, dir string, files []string) {
	t.Helper()
	for _, f := range files {
		src := filepath.Join(repo, f)
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dst); err != nil {
				t.Fatal(err)
			}
			continue
		}
		in, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
		if err != nil {
			in.Close()
			t.Fatal(err)
		}
		_, err = io.Copy(out, in)
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sameContent compares a block with a shipped file: as data for JSON and
// YAML, as text otherwise.
func sameContent(path string, block, file []byte) error {
	switch filepath.Ext(path) {
	case ".json", ".yaml", ".yml":
		var a, b any
		unmarshal := yaml.Unmarshal // YAML is a superset of JSON
		if err := unmarshal(block, &a); err != nil {
			return fmt.Errorf("the block does not parse: %v", err)
		}
		if err := unmarshal(file, &b); err != nil {
			return fmt.Errorf("%s does not parse: %v", path, err)
		}
		if !reflect.DeepEqual(normalize(a), normalize(b)) {
			return fmt.Errorf("the block is not the content of %s", path)
		}
		return nil
	}
	if !bytes.Equal(bytes.TrimSpace(block), bytes.TrimSpace(file)) {
		return fmt.Errorf("the block is not the content of %s", path)
	}
	return nil
}

// normalize makes decoded YAML and JSON comparable (numbers as float64,
// maps keyed by string).
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// docEnv is the environment of the blocks: the test's, without flock's
// own variables and API keys, with the built flock first on the PATH.
func docEnv(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "FLOCK_"), strings.HasPrefix(k, "OTEL_"), strings.HasSuffix(k, "_API_KEY"),
			strings.HasSuffix(k, "_TOKEN"), k == "TMPDIR", k == "PATH", k == "PWD", k == "OLDPWD":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+bin+":"+os.Getenv("PATH"), "TMPDIR=/tmp")
}

// requireDocTools skips (or, under scripts/test.sh, fails) when a tool
// the harness needs is missing.
func requireDocTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bwrap", "bash", "curl", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
				t.Fatalf("%s is required (scripts/test.sh installs it): %v", tool, err)
			}
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
}

// TestDocExamples runs the shell examples of README.md, docs/*.md and the
// shipped YAML files, as described at the top of this file.
func TestDocExamples(t *testing.T) {
	t.Parallel() // after the other tests of the package: TestPlugin* warm the plugin build cache the tutorial uses
	requireDocTools(t)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	docs := docDocuments(t, repo)
	files := repoFiles(t, repo)
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		blocks := docs[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runDocument(t, repo, files, blocks)
		})
	}
}

// runDocument runs a document's blocks in order in one copy of the
// repository.
func runDocument(t *testing.T, repo string, files []string, blocks []docBlock) {
	var runnable bool
	for _, b := range blocks {
		runnable = runnable || (b.shell() && b.skip == "") || b.writeFile != ""
	}
	if !runnable {
		for _, b := range blocks {
			if b.shell() {
				t.Logf("%s: not run: %s", b.where(), b.skip)
			}
		}
		return
	}
	root := t.TempDir()
	work, tmp, bin := filepath.Join(root, "repo"), filepath.Join(root, "tmp"), filepath.Join(root, "tmp", ".flock-bin")
	for _, d := range []string{work, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyRepo(t, repo, work, files)
	// ./flock is in place as after `go build -o flock .` (see TestMain), so
	// that a document's go build finds it up to date instead of linking
	// again; a document that changes the sources gets a real build.
	copyRepo(t, filepath.Dir(binary), work, []string{filepath.Base(binary)})
	if err := os.Link(binary, filepath.Join(bin, "flock")); err != nil {
		copyRepo(t, filepath.Dir(binary), bin, []string{filepath.Base(binary)})
	}
	for i, b := range blocks {
		if b.writeFile != "" {
			dst := filepath.Join(work, b.writeFile)
			if shipped, err := os.ReadFile(filepath.Join(repo, b.writeFile)); err == nil {
				if err := sameContent(b.writeFile, []byte(b.text), shipped); err != nil {
					t.Errorf("%s: %v", b.where(), err)
				}
			} else if err := os.WriteFile(dst, []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if !b.shell() {
			continue
		}
		if b.skip != "" {
			t.Logf("%s: not run: %s", b.where(), b.skip)
			continue
		}
		script, err := b.script()
		if err != nil {
			t.Errorf("%s: %v", b.where(), err)
			continue
		}
		name := fmt.Sprintf("block-%d.sh", i)
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out, err := runBlock(t, repo, work, tmp, bin, "/tmp/"+name)
		if err != nil {
			t.Errorf("%s: %v\n--- block:\n%s--- output (last 60 lines):\n%s", b.where(), err, b.text, tail(out, 60))
			continue
		}
		t.Logf("%s: ran in %.1fs", b.where(), time.Since(start).Seconds())
	}
	checkLeftovers(t, repo, work, files, blocks)
}

// checkLeftovers fails the test for each file the document's commands
// added to the checkout that is not git-ignored, not written by a file
// block and not under a path of a writes directive.
func checkLeftovers(t *testing.T, repo, work string, files []string, blocks []docBlock) {
	t.Helper()
	known := map[string]bool{}
	for _, f := range files {
		known[f] = true
	}
	var allowed []string
	for _, b := range blocks {
		if b.writeFile != "" {
			known[b.writeFile] = true
		}
		allowed = append(allowed, b.writes...)
	}
	var added []string
	err := filepath.WalkDir(work, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(work, p)
		for _, a := range allowed {
			if rel == filepath.Clean(a) || strings.HasPrefix(rel, strings.TrimSuffix(a, "/")+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if !d.IsDir() && !known[rel] {
			added = append(added, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(added) == 0 {
		return
	}
	cmd := exec.Command("git", append(gitArgs(t, repo), "check-ignore", "--no-index", "--stdin")...)
	cmd.Stdin = strings.NewReader(strings.Join(added, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState.ExitCode() != 1 { // 1: none is ignored
		t.Fatalf("git check-ignore: %v", err)
	}
	ignored := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		ignored[l] = true
	}
	var left []string
	for _, a := range added {
		if !ignored[a] {
			left = append(left, a)
		}
	}
	if len(left) > 0 {
		t.Errorf("the examples left files in the checkout that git does not ignore (write them elsewhere or add them to .gitignore): %q", left)
	}
}

// runBlock runs a script in the namespace described at the top of this
// file and returns its combined output.
func runBlock(t *testing.T, repo, work, tmp, bin, script string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	// /tmp first: a checkout beneath /tmp is then mounted over the private one.
	cmd := exec.CommandContext(ctx, "bwrap", "--dev-bind", "/", "/", "--bind", tmp, "/tmp", "--bind", work, repo,
		"--unshare-net", "--unshare-pid", "--die-with-parent", "--chdir", repo, "--", "bash", script)
	cmd.Env = docEnv("/tmp/" + filepath.Base(bin))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out: %w", err)
	}
	return out.String(), err
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// flockCallRE finds invocations of flock in a command line: the binary
// (flock, ./flock or go run .) at the start of a command, after
// environment assignments, and its arguments up to the end of the command.
var flockCallRE = regexp.MustCompile(`(?:^|[;&|(]\s*)(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\./flock|flock|go run \.)((?:\s+[^;&|)#\s]+)*)`)

// shellWords splits s into words, honouring single and double quotes (no
// expansion).
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, c := range s {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n' || c == '\\':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// flockCommands lists the flock command lines of a block, skipped or not:
// each as its words after the binary.
func flockCommands(text string) [][]string {
	var out [][]string
	for _, u := range splitUnits(text) {
		if !u.command {
			continue
		}
		line := strings.ReplaceAll(stripComment(u.text), "\\\n", " ")
		// Quoted strings may hold ; & |: cut the line on them only outside quotes.
		for _, m := range flockCallRE.FindAllStringSubmatchIndex(line, -1) {
			rest := line[m[2]:]
			if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
				continue // another binary: flock-x, go run ./bench
			}
			out = append(out, commandWords(rest))
		}
	}
	return out
}

// commandWords is the words of rest up to the end of its command (a ;,
// &, | or # outside quotes).
func commandWords(rest string) []string {
	var quote rune
	for i, c := range rest {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';' || c == '&' || c == '|' || c == '#' || c == ')':
			return shellWords(rest[:i])
		}
	}
	return shellWords(rest)
}

// TestDocCommandFlags: every flock command of the documents' shell blocks,
// the ones not run included, names a command flock has and only flags that
// command lists in its -h.
func TestDocCommandFlags(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	helps := map[string]string{}
	help := func(cmd []string) string {
		key := strings.Join(cmd, " ")
		if h, ok := helps[key]; ok {
			return h
		}
		out, _ := exec.Command(binary, append(append([]string{}, cmd...), "-h")...).CombinedOutput()
		helps[key] = string(out)
		return helps[key]
	}
	nested := map[string]bool{"db": true, "runs": true}
	checked := 0
	for _, blocks := range docDocuments(t, repo) {
		for _, b := range blocks {
			if !b.shell() {
				continue
			}
			for _, words := range flockCommands(b.text) {
				var cmd []string
				if len(words) > 0 && !strings.HasPrefix(words[0], "-") {
					cmd = append(cmd, words[0])
					if nested[words[0]] && len(words) > 1 && !strings.HasPrefix(words[1], "-") {
						cmd = append(cmd, words[1])
					}
				}
				h := help(cmd)
				if strings.Contains(h, "unknown command") || strings.Contains(h, "unknown runs command") || strings.Contains(h, "unknown db command") {
					t.Errorf("%s: flock %s: %s", b.where(), strings.Join(cmd, " "), strings.TrimSpace(h))
					continue
				}
				for _, w := range words {
					if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
						continue
					}
					name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
					if !regexp.MustCompile(`(^|[\s\[])--?` + regexp.QuoteMeta(name) + `\b`).MatchString(h) {
						t.Errorf("%s: flock %s has no flag %s (flock %s -h)", b.where(), strings.Join(cmd, " "), w, strings.Join(cmd, " "))
					}
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d flock commands found in the documents", checked)
	}
	t.Logf("%d flock commands checked", checked)
}
