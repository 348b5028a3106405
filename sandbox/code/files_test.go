package code_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

// workspace creates worker w's session with a small tree, a directory and
// a file outside the workspace, and symbolic links to them (out, s,
// rootlink). It returns the outside directory and the secret file.
func workspace(t *testing.T, e *env, w string) (string, string) {
	t.Helper()
	e.create(w)
	for p, c := range map[string]string{
		"a.py":            "def alpha():\n    return 1\n",
		"README.md":       "# Title\nSee alpha.\n",
		"src/b.py":        "import os\ndef beta():\n    return ALPHA\n",
		"src/deep/c.py":   "def gamma(): pass\n",
		"src/deep/d.txt":  "alpha beta gamma\n",
		"src/.hidden.py":  "def hidden(): pass\n",
		"src/empty/x.txt": "",
	} {
		if a := e.call(w, "code:write", map[string]any{"path": p, "content": c}); a.Code != 0 {
			t.Fatalf("write %s: %+v", p, a)
		}
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.py")
	if err := os.WriteFile(secret, []byte("def s3cret(): pass\nalpha = 's3cret'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if a := e.call(w, "code:bash", map[string]any{"command": "ln -s " + outside + " out; ln -s " + secret + " s.py; ln -s / rootlink"}); a.Code != 0 {
		t.Fatalf("symlinks: %+v", a)
	}
	return outside, secret
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// refused checks that a call answers 4000 (HTTP 400) and leaks neither the
// secret nor the server's directories.
func refused(t *testing.T, a answer, what string) {
	t.Helper()
	if a.status != 400 || a.Code != sandbox.CodeInvalidInput {
		t.Errorf("%s: %d %+v, want 4000", what, a.status, a)
	}
	if s := fmt.Sprint(a.Data) + a.Msg; strings.Contains(s, "s3cret") || strings.Contains(s, "root:") {
		t.Errorf("%s leaks: %+v", what, a)
	}
}

// TestGlob: code:glob lists the workspace's files matching a pattern
// ("**" spans directories), sorted, relative to the workspace; neither a
// pattern nor a path can reach outside it (.., absolute, symbolic links),
// and the list is bounded.
func TestGlob(t *testing.T) {
	e := newEnv(t, `{}`)
	workspace(t, e, "g")
	for _, c := range []struct {
		pattern, path string
		want          []string
	}{
		{"**/*.py", "", []string{"a.py", "src/.hidden.py", "src/b.py", "src/deep/c.py"}},
		{"*.py", "", []string{"a.py"}},
		{"src/*", "", []string{"src/.hidden.py", "src/b.py"}},
		{"**/*.txt", "src", []string{"src/deep/d.txt", "src/empty/x.txt"}},
		{"deep/?.py", "src", []string{"src/deep/c.py"}},
		{"*.go", "", []string{}},
	} {
		a := e.call("g", "code:glob", map[string]any{"pattern": c.pattern, "path": c.path})
		if a.Code != 0 || !reflect.DeepEqual(strs(a.field("matches")), c.want) || a.field("count") != float64(len(c.want)) || a.field("truncated") != false {
			t.Errorf("glob %q in %q = %+v, want %v", c.pattern, c.path, a, c.want)
		}
	}
	for _, c := range []struct{ pattern, path string }{
		{"../*", ""},
		{"src/../../*", ""},
		{"/etc/*", ""},
		{"*", ".."},
		{"*", "/etc"},
		{"*", "out"},
		{"*", "rootlink/etc"},
		{"[", ""},
		{"", ""},
	} {
		refused(t, e.call("g", "code:glob", map[string]any{"pattern": c.pattern, "path": c.path}), fmt.Sprintf("glob %q in %q", c.pattern, c.path))
	}
	// Links are listed only when they stay inside; nothing beneath them is.
	if a := e.call("g", "code:glob", map[string]any{"pattern": "**"}); a.Code != 0 || strings.Contains(fmt.Sprint(a.field("matches")), "out/") ||
		strings.Contains(fmt.Sprint(a.field("matches")), "s.py") || strings.Contains(fmt.Sprint(a.field("matches")), "rootlink") {
		t.Errorf("glob ** = %+v, lists a link out of the workspace or what is beneath it", a)
	}
	if a := e.call("g", "code:python", map[string]any{"code": "import os\nos.makedirs('many', exist_ok=True)\nfor i in range(1500): open(f'many/f{i:04}.txt', 'w').close()"}); a.Code != 0 {
		t.Fatalf("many files: %+v", a)
	}
	a := e.call("g", "code:glob", map[string]any{"pattern": "many/*.txt"})
	if m := strs(a.field("matches")); a.Code != 0 || len(m) != 1000 || a.field("truncated") != true || m[0] != "many/f0000.txt" || a.field("count") != float64(1000) {
		t.Fatalf("glob of 1500 files = %d matches, truncated %v, want the first 1000 and truncated", len(m), a.field("truncated"))
	}
}

type grepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func matches(t *testing.T, a answer) []grepMatch {
	t.Helper()
	b, _ := json.Marshal(a.field("matches"))
	var m []grepMatch
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("matches of %+v: %v", a, err)
	}
	return m
}

// TestGrep: code:grep searches the workspace's text files with a regular
// expression, answering path, line number and line; a glob filters file
// names, ignore_case folds case; files outside the workspace (links
// included) are never read, paths that leave it are refused, and the
// answer is bounded.
func TestGrep(t *testing.T) {
	e := newEnv(t, `{}`)
	workspace(t, e, "r")
	a := e.call("r", "code:grep", map[string]any{"pattern": `def (\w+)`})
	want := []grepMatch{
		{"a.py", 1, "def alpha():"}, {"src/.hidden.py", 1, "def hidden(): pass"},
		{"src/b.py", 2, "def beta():"}, {"src/deep/c.py", 1, "def gamma(): pass"},
	}
	if got := matches(t, a); a.Code != 0 || !reflect.DeepEqual(got, want) || a.field("truncated") != false {
		t.Fatalf("grep def = %+v, want %+v", a, want)
	}
	if got := matches(t, e.call("r", "code:grep", map[string]any{"pattern": "alpha", "glob": "*.md"})); !reflect.DeepEqual(got, []grepMatch{{"README.md", 2, "See alpha."}}) {
		t.Fatalf("grep alpha in *.md = %+v", got)
	}
	if got := matches(t, e.call("r", "code:grep", map[string]any{"pattern": "alpha", "path": "src", "ignore_case": true})); len(got) != 2 || got[0].Path != "src/b.py" || got[1].Path != "src/deep/d.txt" {
		t.Fatalf("grep -i alpha in src = %+v", got)
	}
	if got := matches(t, e.call("r", "code:grep", map[string]any{"pattern": "beta", "path": "src/deep/d.txt"})); len(got) != 1 || got[0].Line != 1 {
		t.Fatalf("grep in one file = %+v", got)
	}
	// The secret behind the links is never read.
	if a := e.call("r", "code:grep", map[string]any{"pattern": "s3cret"}); a.Code != 0 || len(matches(t, a)) != 0 {
		t.Fatalf("grep s3cret = %+v, read through a link out of the workspace", a)
	}
	for _, p := range []string{"..", "../..", "/etc/passwd", "/etc", "out", "s.py", "rootlink/etc/passwd", "out/secret.py", "nope"} {
		refused(t, e.call("r", "code:grep", map[string]any{"pattern": "root|s3cret", "path": p}), "grep in "+p)
	}
	bad := e.call("r", "code:grep", map[string]any{"pattern": "a(b"})
	refused(t, bad, "bad regexp")
	if !strings.Contains(bad.Msg, "pattern") {
		t.Errorf("bad regexp message = %q, want it to name pattern", bad.Msg)
	}
	refused(t, e.call("r", "code:grep", map[string]any{"pattern": "x", "glob": "["}), "bad glob")
	if a := e.call("r", "code:grep", map[string]any{"pattern": "x", "max_matches": "many"}); a.Code != sandbox.CodeInvalidParameterType {
		t.Errorf("max_matches of the wrong type = %+v, want 4004", a)
	}
	// Bounded: 100 matches by default, long lines cut, binary files skipped.
	long := strings.Repeat("x", 5000)
	if a := e.call("r", "code:python", map[string]any{"code": "open('big.txt','w').write(''.join(f'hit {i}\\n' for i in range(300)))\n" +
		"open('long.txt','w').write('hit " + long + "\\n')\nopen('bin.dat','wb').write(b'hit\\x00hit\\n')"}); a.Code != 0 {
		t.Fatalf("big files: %+v", a)
	}
	a = e.call("r", "code:grep", map[string]any{"pattern": "^hit", "path": "big.txt"})
	if m := matches(t, a); len(m) != 100 || a.field("truncated") != true || m[99].Line != 100 {
		t.Fatalf("grep in 300 lines = %d matches, truncated %v, want 100 and truncated", len(m), a.field("truncated"))
	}
	if m := matches(t, e.call("r", "code:grep", map[string]any{"pattern": "^hit", "path": "big.txt", "max_matches": 5})); len(m) != 5 {
		t.Fatalf("max_matches 5 = %d matches", len(m))
	}
	if m := matches(t, e.call("r", "code:grep", map[string]any{"pattern": "^hit x", "path": "long.txt"})); len(m) != 1 || len(m[0].Text) > 600 {
		t.Fatalf("long line = %+v, want it cut", m)
	}
	if m := matches(t, e.call("r", "code:grep", map[string]any{"pattern": "hit", "glob": "*.dat"})); len(m) != 0 {
		t.Fatalf("binary file searched: %+v", m)
	}
}

// TestEdit: code:edit replaces an exact string that occurs once (or every
// occurrence with replace_all), and otherwise says what failed; it cannot
// reach a file outside the workspace.
func TestEdit(t *testing.T) {
	e := newEnv(t, `{}`)
	_, secret := workspace(t, e, "d")
	edit := func(p, old, new string, all bool) answer {
		return e.call("d", "code:edit", map[string]any{"path": p, "old_string": old, "new_string": new, "replace_all": all})
	}
	if a := edit("a.py", "return 1", "return 2", false); a.Code != 0 || a.field("replacements") != float64(1) {
		t.Fatalf("edit: %+v", a)
	}
	if a := e.call("d", "code:read", map[string]any{"path": "a.py"}); a.field("content") != "def alpha():\n    return 2\n" {
		t.Fatalf("after edit: %+v", a)
	}
	a := edit("src/deep/d.txt", "a", "A", false)
	refused(t, a, "ambiguous edit")
	if !strings.Contains(a.Msg, "5 times") || !strings.Contains(a.Msg, "replace_all") || !strings.Contains(a.Msg, "src/deep/d.txt") {
		t.Errorf("ambiguous edit message = %q, want the count, the file and replace_all", a.Msg)
	}
	if a := edit("src/deep/d.txt", "a", "A", true); a.Code != 0 || a.field("replacements") != float64(5) {
		t.Fatalf("replace_all: %+v", a)
	}
	if a := e.call("d", "code:read", map[string]any{"path": "src/deep/d.txt"}); a.field("content") != "AlphA betA gAmmA\n" {
		t.Fatalf("after replace_all: %+v", a)
	}
	a = edit("a.py", "return 9", "x", false)
	refused(t, a, "edit of a missing string")
	if !strings.Contains(a.Msg, "not found") || !strings.Contains(a.Msg, "a.py") {
		t.Errorf("missing string message = %q", a.Msg)
	}
	refused(t, edit("a.py", "", "x", false), "empty old_string")
	refused(t, edit("a.py", "def", "def", false), "old_string = new_string")
	refused(t, edit("src", "a", "b", false), "edit of a directory")
	for _, p := range []string{"nope.py", "../a.py", "src/../../a.py", "/etc/passwd", secret, "s.py", "out/secret.py", "rootlink/etc/passwd"} {
		refused(t, edit(p, "s3cret", "pwned", true), "edit "+p)
	}
	if b, _ := os.ReadFile(secret); !strings.Contains(string(b), "s3cret") {
		t.Fatalf("the secret outside the workspace was edited: %q", b)
	}
	if a := e.call("d", "code:edit", map[string]any{"path": "a.py", "old_string": "x"}); a.Code != sandbox.CodeMissingRequiredField {
		t.Fatalf("missing new_string: %+v", a)
	}
}

// TestFileToolSchemas: the tools are listed with JSON schemas naming their
// required parameters.
func TestFileToolSchemas(t *testing.T) {
	e := newEnv(t, `{}`)
	for tool, req := range map[string][]string{
		"code:glob": {"pattern"},
		"code:grep": {"pattern"},
		"code:edit": {"path", "old_string", "new_string"},
	} {
		resp, err := http.Get(e.url + "/api/v1/tools/" + tool + "/schema")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var s struct {
			Parameters struct {
				Type     string         `json:"type"`
				Required []string       `json:"required"`
				Props    map[string]any `json:"properties"`
			} `json:"parameters"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.Parameters.Type != "object" || !reflect.DeepEqual(s.Parameters.Required, req) {
			t.Errorf("%s schema = %s, want required %v", tool, b, req)
		}
		for _, r := range req {
			if s.Parameters.Props[r] == nil {
				t.Errorf("%s schema has no property %s", tool, r)
			}
		}
	}
}
