package doc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bundled is the README's offline documents folder.
const bundled = "../../configs/sandbox/docs"

func newBundled(t testing.TB) *Engine {
	t.Helper()
	e, err := NewEngine(map[string]any{"documents_dir": bundled, "max_search_results": 3.0})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSearchBundled(t *testing.T) {
	e := newBundled(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		keywords []string
		docID    string
		want     []string
		absent   []string
	}{
		{"heading counts most", []string{"somerset park"}, "", []string{
			"A Document search for `somerset park` found 2 results:",
			`<Result section_id="stadiums#3" document="stadiums" type="heading" heading="Somerset Park">Somerset Park</Result>`,
		}, nil},
		{"html list item", []string{"bleeding love"}, "", []string{`section_id="concerts#2"`, "tribute evening"}, nil},
		{"html script and nav are not text", []string{"not indexed", "tickets"}, "", []string{
			"A Document search for `not indexed` found 0 results:",
			"A Document search for `tickets` found",
			`section_id="concerts#3"`,
		}, []string{"Home"}},
		{"restricted to one document", []string{"french"}, "stadiums", []string{"found 0 results"}, nil},
		{"clipped to max results", []string{"the"}, "", []string{"(showing 3)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Search(ctx, tt.keywords, 0, tt.docID)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in\n%s", w, got)
				}
			}
		})
	}
}

func TestSearchErrors(t *testing.T) {
	e := newBundled(t)
	ctx := context.Background()
	if _, err := e.Search(ctx, []string{"x"}, 0, "../../etc/passwd"); !errors.Is(err, ErrUnknownDocument) {
		t.Fatalf("path as document id: %v", err)
	}
	if _, err := e.Search(ctx, []string{" "}, 0, ""); !errors.Is(err, ErrEmptyKeyword) {
		t.Fatalf("blank keyword: %v", err)
	}
}

func TestRead(t *testing.T) {
	e := newBundled(t)
	ctx := context.Background()
	got, err := e.Read(ctx, []string{"singers#6", "nope#1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "[singers#6] Singers — John Nizinik\n\nJohn Nizinik is a French tenor") ||
		!strings.HasSuffix(got, "[unknown section ids: nope#1]") {
		t.Fatalf("read = %q", got)
	}
	got, err = e.Read(ctx, []string{"singers#2", "singers#3"}, 40)
	if err != nil || !strings.HasSuffix(got, "[truncated at 40 characters]") || strings.Contains(got, "Timbaland") {
		t.Fatalf("clipped read = %q, %v", got, err)
	}
	if _, err := e.Read(ctx, []string{"singers#0", "singers#99", "singers"}, 0); !errors.Is(err, ErrUnknownSection) {
		t.Fatalf("unknown ids: %v", err)
	}
}

func TestReloadsWhenFolderChanges(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.md")
	if err := os.WriteFile(p, []byte("# A\n\nfirst version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(map[string]any{"documents_dir": dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got, err := e.Read(ctx, []string{"a#1"}, 0); err != nil || !strings.Contains(got, "first version") {
		t.Fatalf("%q %v", got, err)
	}
	if err := os.WriteFile(p, []byte("# A\n\nsecond, longer version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Read(ctx, []string{"a#1"}, 0); err != nil || !strings.Contains(got, "second, longer version") {
		t.Fatalf("%q %v", got, err)
	}
}

// TestConfigErrors: a missing documents_dir and a bad number are refused
// naming the key, with the package's sentinels.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]any
		want string
		is   error
	}{
		{map[string]any{}, "documents_dir: required setting is missing", ErrMissingSetting},
		{map[string]any{"documents_dir": " "}, "documents_dir: required setting is missing", ErrMissingSetting},
		{map[string]any{"documents_dir": "x", "max_search_results": 0.0}, "max_search_results: want a whole number from 1 to 2147483647, got 0", ErrBadSetting},
		{map[string]any{"documents_dir": "x", "max_text_token": "big"}, "max_text_token: want a whole number from 1 to 2147483647", ErrBadSetting},
		{map[string]any{"documents_dir": 3.0}, "documents_dir: want a string, got JSON number", ErrBadSetting},
	} {
		_, err := NewEngine(tc.cfg)
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("NewEngine(%v) = %v, want %q (%v)", tc.cfg, err, tc.want, tc.is)
		}
	}
	e, err := NewEngine(map[string]any{"documents_dir": "x/"})
	if err != nil || e.cfg != (Config{DocumentsDir: "x", MaxSearchResults: 10, MaxTextToken: 20000}) {
		t.Errorf("defaults: %+v %v", e, err)
	}
}
