package rag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"

	"github.com/flockrun/flock/sandbox/internal/textdoc"
)

// indexFormat names everything besides the documents that decides the index's
// content; a change of it rebuilds every persisted index.
const indexFormat = "flock-rag-1;analyzer=en;scoring=bm25;fields=title,text,doc"

// manifestVersion is the schema version of manifest.json.
const manifestVersion = 1

const (
	indexDirName    = "index"
	buildDirName    = "index.building"
	manifestName    = "manifest.json"
	indexBatchItems = 256
)

// manifest records what a persisted index was built from. The index is reused when
// the format, the passage size and the (path, sha256) list of the folder are equal.
type manifest struct {
	Version      int            `json:"version"`
	Format       string         `json:"format"`
	PassageChars int            `json:"passage_chars"`
	Files        []manifestFile `json:"files"`
	Documents    int            `json:"documents"`
	Passages     int            `json:"passages"`
	BuiltAt      time.Time      `json:"built_at"`
	BuildMillis  int64          `json:"build_ms"`
}

// manifestFile is one document file; Size and ModTime let an unchanged file skip
// re-hashing (as git's index does).
type manifestFile struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	SHA256  string `json:"sha256"`
}

// Index is an opened BM25 index over a folder's passages. Search is safe for
// concurrent use; Close must not race with Search (the Backend guarantees it).
type Index struct {
	idx   bleve.Index
	man   manifest
	built bool // this Open built the index (false: reused the persisted one)
}

// IndexOptions say where the documents are and where the index lives.
type IndexOptions struct {
	DocumentsDir string
	DataDir      string
	PassageChars int
}

// OpenIndex opens the index persisted in opts.DataDir, rebuilding it first when the
// documents folder changed since it was built (or it is missing or unreadable).
func OpenIndex(ctx context.Context, opts IndexOptions) (*Index, error) {
	files, err := textdoc.List(opts.DocumentsDir)
	if err != nil {
		return nil, err
	}
	old, _ := readManifest(opts.DataDir)
	cur, err := hashFiles(ctx, opts.DocumentsDir, files, old)
	if err != nil {
		return nil, err
	}
	if old != nil && sameContent(old, cur, opts.PassageChars) {
		idx, err := bleve.Open(filepath.Join(opts.DataDir, indexDirName))
		if err == nil {
			m := *old
			m.Files = cur
			if !sameStat(old.Files, cur) {
				// Touched but unchanged files: record the new mtimes so the next
				// start skips hashing them.
				_ = writeManifest(opts.DataDir, &m)
			}
			return &Index{idx: idx, man: m}, nil
		}
	}
	return buildIndex(ctx, opts, cur)
}

func buildIndex(ctx context.Context, opts IndexOptions, files []manifestFile) (*Index, error) {
	start := time.Now()
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("rag index: %w", err)
	}
	// The manifest goes first: a crash mid-build leaves no manifest, so the next
	// start rebuilds.
	if err := os.Remove(filepath.Join(opts.DataDir, manifestName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("rag index: %w", err)
	}
	docs, err := textdoc.Load(opts.DocumentsDir)
	if err != nil {
		return nil, err
	}
	passages := splitPassages(docs, opts.PassageChars)
	tmp := filepath.Join(opts.DataDir, buildDirName)
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("rag index: %w", err)
	}
	idx, err := bleve.New(tmp, newMapping())
	if err != nil {
		return nil, fmt.Errorf("rag index: create: %w", err)
	}
	if err := indexPassages(ctx, idx, passages); err != nil {
		_ = idx.Close()
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := idx.Close(); err != nil {
		return nil, fmt.Errorf("rag index: close: %w", err)
	}
	final := filepath.Join(opts.DataDir, indexDirName)
	if err := os.RemoveAll(final); err != nil {
		return nil, fmt.Errorf("rag index: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("rag index: %w", err)
	}
	idx, err = bleve.Open(final)
	if err != nil {
		return nil, fmt.Errorf("rag index: open: %w", err)
	}
	m := manifest{
		Version:      manifestVersion,
		Format:       indexFormat,
		PassageChars: opts.PassageChars,
		Files:        files,
		Documents:    len(docs),
		Passages:     len(passages),
		BuiltAt:      time.Now().UTC(),
		BuildMillis:  time.Since(start).Milliseconds(),
	}
	if err := writeManifest(opts.DataDir, &m); err != nil {
		_ = idx.Close()
		return nil, err
	}
	return &Index{idx: idx, man: m, built: true}, nil
}

func indexPassages(ctx context.Context, idx bleve.Index, passages []Passage) error {
	b := idx.NewBatch()
	for _, p := range passages {
		if err := b.Index(p.ID, p); err != nil {
			return fmt.Errorf("rag index: passage %s: %w", p.ID, err)
		}
		if b.Size() >= indexBatchItems {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := idx.Batch(b); err != nil {
				return fmt.Errorf("rag index: %w", err)
			}
			b = idx.NewBatch()
		}
	}
	if b.Size() > 0 {
		if err := idx.Batch(b); err != nil {
			return fmt.Errorf("rag index: %w", err)
		}
	}
	return nil
}

// newMapping indexes title and text with the English analyzer (stemming, stop words)
// and scores with BM25; doc is stored, not analyzed.
func newMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bleveindex.BM25Scoring
	im.DefaultAnalyzer = en.AnalyzerName
	dm := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = true
	text.IncludeTermVectors = false
	dm.AddFieldMappingsAt("title", text)
	dm.AddFieldMappingsAt("text", text)
	kw := bleve.NewKeywordFieldMapping()
	kw.Store = true
	kw.Index = false
	dm.AddFieldMappingsAt("doc", kw)
	im.DefaultMapping = dm
	return im
}

// Hit is one search result.
type Hit struct {
	Passage
	Score float64 `json:"score"`
}

// Search returns the topK passages best matching q by BM25 over title and
// text; passages of equal score in the order of their ids. The tie-break
// is ours because bleve's own (the order documents were numbered in)
// follows the order its concurrent analysis of a batch finished in, which
// changes from one build of the same documents to the next: the same
// search must give the same passages, in the same order, every time.
func (ix *Index) Search(ctx context.Context, q string, topK int) ([]Hit, error) {
	text := bleve.NewMatchQuery(q)
	text.SetField("text")
	title := bleve.NewMatchQuery(q)
	title.SetField("title")
	title.SetBoost(0.5)
	req := bleve.NewSearchRequestOptions(query.NewDisjunctionQuery([]query.Query{text, title}), topK, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	req.Fields = []string{"title", "text", "doc"}
	res, err := ix.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("rag search: %w", err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		hit := Hit{Passage: Passage{ID: h.ID}, Score: h.Score}
		hit.Title, _ = h.Fields["title"].(string)
		hit.Text, _ = h.Fields["text"].(string)
		hit.Doc, _ = h.Fields["doc"].(string)
		hits = append(hits, hit)
	}
	return hits, nil
}

// Built reports whether this Open built the index rather than reusing the persisted one.
func (ix *Index) Built() bool { return ix.built }

// Close closes the index files.
func (ix *Index) Close() error { return ix.idx.Close() }

// formatContext renders hits as AgentFlow does: "[title]\ntext" joined by "\n---\n".
func formatContext(hits []Hit) string {
	parts := make([]string, len(hits))
	for i, h := range hits {
		parts[i] = "[" + h.Title + "]\n" + h.Text
	}
	return strings.Join(parts, "\n---\n")
}

func sameContent(m *manifest, files []manifestFile, passageChars int) bool {
	if m.Version != manifestVersion || m.Format != indexFormat || m.PassageChars != passageChars || len(m.Files) != len(files) {
		return false
	}
	for i := range files {
		if m.Files[i].Path != files[i].Path || m.Files[i].SHA256 != files[i].SHA256 {
			return false
		}
	}
	return true
}

func sameStat(a, b []manifestFile) bool {
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

// hashFiles returns the manifest entries of files, reusing old's hash of a file whose
// size and mtime are unchanged.
func hashFiles(ctx context.Context, dir string, files []textdoc.File, old *manifest) ([]manifestFile, error) {
	prev := map[string]manifestFile{}
	if old != nil {
		for _, f := range old.Files {
			prev[f.Path] = f
		}
	}
	out := make([]manifestFile, len(files))
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		mf := manifestFile{Path: f.Path, Size: f.Size, ModTime: f.ModTime}
		if p, ok := prev[f.Path]; ok && p.Size == f.Size && p.ModTime == f.ModTime && p.SHA256 != "" {
			mf.SHA256 = p.SHA256
		} else {
			sum, err := hashFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
			if err != nil {
				return nil, err
			}
			mf.SHA256 = sum
		}
		out[i] = mf
	}
	return out, nil
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("documents folder: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("documents folder: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func readManifest(dataDir string) (*manifest, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, manifestName))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// writeManifest replaces manifest.json atomically.
func writeManifest(dataDir string, m *manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("rag manifest: %w", err)
	}
	tmp := filepath.Join(dataDir, manifestName+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("rag manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, manifestName)); err != nil {
		return fmt.Errorf("rag manifest: %w", err)
	}
	return nil
}
