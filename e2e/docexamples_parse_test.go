package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestDocExamplesParse checks how TestDocExamples reads a document: the
// directives above a fence, the errors that keep an example from being
// silently left out, and the script a block becomes.
func TestDocExamplesParse(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		err      string // a part of the error; "" for none
		blocks   int
	}{
		{"plain blocks", "text\n\n```sh\nflock version\n```\n\n```json\n{}\n```\n", "", 2},
		{"directives", "<!-- doc-test: skip: needs a key -->\n<!-- doc-test: let X=echo 1 -->\n```sh\nflock run X\n```\n", "", 1},
		{"directive away from a fence", "<!-- doc-test: skip: why -->\ntext\n```sh\nls\n```\n", "must be right above a code fence", 1},
		{"unknown directive", "<!-- doc-test: ignore -->\n```sh\nls\n```\n", `unknown directive "ignore"`, 1},
		{"skip without a reason", "<!-- doc-test: skip: -->\n```sh\nls\n```\n", "skip needs a reason", 1},
		{"skip-line without a reason", "<!-- doc-test: skip-line ls -->\n```sh\nls\n```\n", "want skip-line PREFIX: REASON", 1},
		{"indented command", "text\n\n    flock sandbox --config x.json\n", "fence it as ```sh", 0},
		{"indented command after an indented line", "text\n\n    # start it\n    ./flock serve\n", "fence it as ```sh", 0},
		{"indented text is fine", "- item\n    continued text\n", "", 0},
		{"unclosed fence", "```sh\nls\n", "unclosed code fence", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := parseMarkdown("x.md", []byte(tc.md))
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if len(blocks) != tc.blocks {
				t.Fatalf("%d blocks, want %d", len(blocks), tc.blocks)
			}
		})
	}

	md := "<!-- doc-test: server flock sandbox --config c.json -->\n" +
		"<!-- doc-test: skip-line ./flock run --resume: needs an interrupted run -->\n" +
		"<!-- doc-test: let ID=echo abc -->\n" +
		"```sh\n" +
		"./flock serve --cluster --addr 127.0.0.1:8081 &   # node 1\n" +
		"./flock serve --cluster --addr 127.0.0.1:8082 &\n" +
		"curl -s localhost:8081/runs/ID\n" +
		"./flock run --resume ID\n" +
		"cat > f.txt <<'EOF'\n" +
		"ID stays & here\n" +
		"EOF\n" +
		"```\n"
	blocks, err := parseMarkdown("x.md", []byte(md))
	if err != nil || len(blocks) != 1 {
		t.Fatalf("%d blocks, %v", len(blocks), err)
	}
	script, err := blocks[0].script()
	if err != nil {
		t.Fatal(err)
	}
	body := script[len(docPrelude):]
	want := "flock sandbox --config c.json &\n__doc_pid1=$!\n" +
		"__doc_wait $__doc_pid1 18890\n" +
		"./flock serve --cluster --addr 127.0.0.1:8081 &\n__doc_pid2=$!\n" +
		"./flock serve --cluster --addr 127.0.0.1:8082 &\n__doc_pid3=$!\n" +
		"__doc_wait $__doc_pid2 8081\n" + // both nodes start before either is waited for
		"__doc_wait $__doc_pid3 8082\n" +
		"ID=$(echo abc)\n" +
		"curl -s localhost:8081/runs/${ID}\n" +
		": 'doc-test: not run: needs an interrupted run'\n" +
		"cat > f.txt <<'EOF'\n" +
		"${ID} stays & here\n" +
		"EOF\n"
	if body != want {
		t.Fatalf("script:\n%s\nwant:\n%s", body, want)
	}
	if _, err := (docBlock{text: "./flock run --workflow x &\n", lang: "sh"}).script(); err == nil || !strings.Contains(err.Error(), "give it --addr") {
		t.Fatalf("a background command with no port: %v", err)
	}
}

// TestFlockCommands: the flock invocations TestDocCommandFlags checks.
func TestFlockCommands(t *testing.T) {
	text := "flock runs pause RUN_ID; flock runs resume RUN_ID   # two\n" +
		"OTEL_X=1 ./flock serve --log-format json &\n" +
		"go run . run --task \"a; b | c\" --quiet\n" +
		"go run ./bench -quick\n" +
		"ls /tmp/flock-tutorial && (flock version)\n" +
		"cat > f <<'EOF'\nflock serve --not-a-command\nEOF\n"
	got := flockCommands(text)
	want := [][]string{{"runs", "pause", "RUN_ID"}, {"runs", "resume", "RUN_ID"}, {"serve", "--log-format", "json"},
		{"run", "--task", "a; b | c", "--quiet"}, {"version"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("flockCommands:\n got %q\nwant %q", got, want)
	}
}

var mdLinkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks: every relative link of README.md and docs/*.md names a
// file or directory of the repository.
func TestDocLinks(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mds, _ := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	for _, p := range append(mds, filepath.Join(repo, "README.md")) {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLinkRE.FindAllStringSubmatch(string(src), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
				rel, _ := filepath.Rel(repo, p)
				t.Errorf("%s: link to %s: %v", rel, m[1], err)
			}
		}
	}
}
