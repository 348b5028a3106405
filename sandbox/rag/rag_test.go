package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/flockrun/flock/internal/testkit"
)

func newTestEngine(t testing.TB, docs, data string) *Engine {
	t.Helper()
	e, err := NewEngine(map[string]any{"documents_dir": docs, "default_top_k": float64(3)}, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e
}

var tinyCorpus = map[string]string{
	"volcano.md": "# Volcanoes\n\nA volcano erupts lava and ash. Volcano eruptions shape islands.\n\n## Famous\n\nEtna is an active volcano in Sicily.\n",
	"ocean.txt":  "The ocean covers most of the planet.\n\nTides follow the moon, and the ocean is salty.",
	"page.html": `<html><head><title>Bread</title><style>.x{}</style><script>var volcano=1</script></head>
<body><nav>menu volcano</nav><h1>Bread</h1><p>Bread is baked from flour, water and yeast.</p>
<h2>Sourdough</h2><p>Sourdough uses a wild yeast starter.</p></body></html>`,
}

func TestIndexBuildAndSearch(t *testing.T) {
	docs, data := t.TempDir(), t.TempDir()
	testkit.WriteFiles(t, docs, tinyCorpus)
	e := newTestEngine(t, docs, data)
	ctx := context.Background()
	if e.Stats().Initialized {
		t.Fatal("initialized before warm-up")
	}
	if err := e.WarmUp(ctx); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if !st.Initialized || st.Index == nil || st.Index.Documents != 3 || !st.Index.Rebuilt {
		t.Fatalf("stats = %+v %+v", st, st.Index)
	}
	res, err := e.Search(ctx, "sourdough starter", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Context, "[Bread — Sourdough]\nSourdough uses a wild yeast starter.") {
		t.Fatalf("context = %q", res.Context)
	}
	// HTML script and nav text is not indexed.
	res, err = e.Search(ctx, "menu", 3)
	if err != nil || res.Context != "" {
		t.Fatalf("menu: %q, %v", res.Context, err)
	}
	// Several hits are separated as AgentFlow does.
	res, err = e.Search(ctx, "volcano ocean", 5)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(res.Context, "\n---\n"); n < 2 {
		t.Fatalf("want ≥3 passages, got %d separators: %q", n, res.Context)
	}
}

func TestIndexPersistsAcrossStarts(t *testing.T) {
	docs, data := t.TempDir(), t.TempDir()
	testkit.WriteFiles(t, docs, tinyCorpus)
	ctx := context.Background()
	first := newTestEngine(t, docs, data)
	if err := first.WarmUp(ctx); err != nil {
		t.Fatal(err)
	}
	builtAt := first.Stats().Index.BuiltAt
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// Touching a file changes its mtime but not its content: still no rebuild.
	now := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(docs, "ocean.txt"), now, now); err != nil {
		t.Fatal(err)
	}
	second := newTestEngine(t, docs, data)
	if err := second.WarmUp(ctx); err != nil {
		t.Fatal(err)
	}
	st := second.Stats().Index
	if st.Rebuilt || st.BuiltAt != builtAt {
		t.Fatalf("second start rebuilt: %+v (first built at %s)", st, builtAt)
	}
	ix, _ := second.index(ctx)
	if !usesBM25(t, ix) {
		t.Fatal("reopened index lost BM25 scoring")
	}
	res, err := second.Search(ctx, "tides moon", 1)
	if err != nil || !strings.Contains(res.Context, "Tides follow the moon") {
		t.Fatalf("reused index search: %q, %v", res.Context, err)
	}
}

func TestIndexRebuildsWhenFolderChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, docs string)
		query  string
		want   string
	}{
		{"edit", func(t *testing.T, docs string) {
			testkit.WriteFiles(t, docs, map[string]string{"ocean.txt": "Krill swarm in cold water."})
		}, "krill", "Krill swarm"},
		{"add", func(t *testing.T, docs string) {
			testkit.WriteFiles(t, docs, map[string]string{"sub/tea.md": "# Tea\n\nOolong is a tea.\n"})
		}, "oolong", "[Tea]\nOolong is a tea."},
		{"remove", func(t *testing.T, docs string) {
			if err := os.Remove(filepath.Join(docs, "ocean.txt")); err != nil {
				t.Fatal(err)
			}
		}, "tides", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, data := t.TempDir(), t.TempDir()
			testkit.WriteFiles(t, docs, tinyCorpus)
			ctx := context.Background()
			first := newTestEngine(t, docs, data)
			if err := first.WarmUp(ctx); err != nil {
				t.Fatal(err)
			}
			_ = first.Shutdown(ctx)
			tt.change(t, docs)
			second := newTestEngine(t, docs, data)
			if err := second.WarmUp(ctx); err != nil {
				t.Fatal(err)
			}
			if !second.Stats().Index.Rebuilt {
				t.Fatal("changed folder was not rebuilt")
			}
			res, err := second.Search(ctx, tt.query, 1)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && res.Context != "" || !strings.Contains(res.Context, tt.want) {
				t.Fatalf("context = %q, want %q", res.Context, tt.want)
			}
		})
	}
}

func TestBM25Ranking(t *testing.T) {
	docs, data := t.TempDir(), t.TempDir()
	filler := strings.Repeat("lorem ipsum dolor sit amet consectetur ", 20)
	testkit.WriteFiles(t, docs, map[string]string{
		// Same count of "quartz"; the short passage must win (length normalisation).
		"a.txt": "quartz crystal",
		"b.txt": "quartz " + filler,
		// "common" is everywhere; "rare" only here: rare outranks common.
		"c.txt": "common rare",
		"d.txt": "common common common",
		"e.txt": "common thing",
		// Term-frequency saturation: more "zinc" ranks higher at equal length.
		"f.txt": "zinc zinc zinc alpha beta gamma",
		"g.txt": "zinc delta alpha beta gamma omega",
	})
	e := newTestEngine(t, docs, data)
	ctx := context.Background()
	first := func(q string) string {
		t.Helper()
		ix, err := e.index(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := ix.Search(ctx, q, 5)
		if err != nil || len(hits) == 0 {
			t.Fatalf("%s: %v %v", q, hits, err)
		}
		return hits[0].Doc
	}
	for q, want := range map[string]string{"quartz": "a.txt", "common rare": "c.txt", "zinc": "f.txt"} {
		if got := first(q); got != want {
			t.Errorf("top hit for %q = %s, want %s", q, got, want)
		}
	}
	ix, _ := e.index(ctx)
	if !usesBM25(t, ix) {
		t.Fatal("index does not score with BM25")
	}
}

// usesBM25 reports whether a search's explanation has BM25's saturation term (bleve
// falls back to tf-idf silently when the mapping's scoring model is not bm25).
func usesBM25(t testing.TB, ix *Index) bool {
	t.Helper()
	req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery("quartz volcano"), 1, 0, true)
	res, err := ix.idx.Search(req)
	if err != nil || len(res.Hits) == 0 {
		t.Fatalf("explain search: %v", err)
	}
	b, _ := json.Marshal(res.Hits[0].Expl)
	return strings.Contains(string(b), "saturation(")
}

func TestBatchSearchPartialFailure(t *testing.T) {
	docs, data := t.TempDir(), t.TempDir()
	testkit.WriteFiles(t, docs, tinyCorpus)
	e := newTestEngine(t, docs, data)
	ctx := context.Background()
	res, err := e.BatchSearch(ctx, []string{"volcano", "  ", "yeast"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 3 || len(res.Contexts) != 3 || res.Contexts[1] != "" || len(res.Errors) != 1 || res.Errors[0].Index != 1 {
		t.Fatalf("batch = %+v", res)
	}
	if !strings.Contains(res.Contexts[0], "volcano") || !strings.Contains(res.Contexts[2], "yeast") {
		t.Fatalf("contexts = %q", res.Contexts)
	}
}

func TestCallsWaitForOneWarmUp(t *testing.T) {
	docs, data := t.TempDir(), t.TempDir()
	testkit.WriteFiles(t, docs, tinyCorpus)
	e := newTestEngine(t, docs, data)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Search(ctx, "volcano", 1)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !e.Stats().Initialized {
		t.Fatal("not initialized after calls")
	}
}

func TestWarmUpFailureDoesNotStick(t *testing.T) {
	parent, data := t.TempDir(), t.TempDir()
	docs := filepath.Join(parent, "docs")
	e := newTestEngine(t, docs, data)
	ctx := context.Background()
	_, err := e.Search(ctx, "volcano", 1)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing folder: %v", err)
	}
	testkit.WriteFiles(t, docs, tinyCorpus)
	if _, err := e.Search(ctx, "volcano", 1); err != nil {
		t.Fatalf("after the folder appeared: %v", err)
	}
}

// TestConfigErrors: a missing documents_dir, a bad number and a default
// above the cap are refused naming the key, with the package's sentinels;
// absent keys take their defaults.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  map[string]any
		want string
		is   error
	}{
		{"missing dir", map[string]any{}, "documents_dir: required setting is missing", ErrMissingSetting},
		{"bad top_k", map[string]any{"documents_dir": "x", "default_top_k": 0.5}, "default_top_k: want a whole number from 1 to 2147483647, got 0.5", ErrBadSetting},
		{"top_k above max", map[string]any{"documents_dir": "x", "default_top_k": 9.0, "max_top_k": 3.0}, "default_top_k: above max_top_k 3: invalid setting", ErrBadSetting},
		{"top_k above default max", map[string]any{"documents_dir": "x", "default_top_k": 51.0}, "default_top_k: above max_top_k 50: invalid setting", ErrBadSetting},
		{"tiny passages", map[string]any{"documents_dir": "x", "passage_chars": 10.0}, "passage_chars: want a whole number from 100 to 2147483647, got 10", ErrBadSetting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewEngine(tt.cfg, t.TempDir(), nil)
			if err == nil || err.Error() != tt.want || !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %q (%v)", err, tt.want, tt.is)
			}
		})
	}
	e, err := NewEngine(map[string]any{"documents_dir": "x/"}, t.TempDir(), nil)
	if err != nil || e.cfg != (Config{DocumentsDir: "x", DefaultTopK: 5, MaxTopK: 50, PassageChars: 1000}) {
		t.Fatalf("defaults: %+v %v", e, err)
	}
}

// TestTiesInPassageOrder: passages that score the same come back in the
// order of their ids, whatever order bleve analysed them in (it analyses a
// batch's documents concurrently and numbers them as they finish, so its
// own tie-break changes from one build to the next), and a top_k that
// cuts through the ties keeps the same ones. A search is a pure function
// of the documents and the query.
func TestTiesInPassageOrder(t *testing.T) {
	docs := t.TempDir()
	corpus := map[string]string{}
	var ids []string
	for i := 0; i < 16; i++ {
		name := fmt.Sprintf("d%02d.txt", i)
		corpus[name] = "The harbour arena holds the summer concert."
		ids = append(ids, name+"#1")
	}
	testkit.WriteFiles(t, docs, corpus)
	ctx := context.Background()
	for build := 0; build < 4; build++ {
		ix, err := OpenIndex(ctx, IndexOptions{DocumentsDir: docs, DataDir: t.TempDir(), PassageChars: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{16, 5} {
			hits, err := ix.Search(ctx, "harbour concert", k)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.ID)
			}
			if want := strings.Join(ids[:k], " "); strings.Join(got, " ") != want {
				t.Fatalf("build %d, top %d: %v, want %s", build, k, got, want)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
