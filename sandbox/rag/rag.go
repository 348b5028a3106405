package rag

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/flockrun/flock/phases/settings"
	"github.com/flockrun/flock/sandbox"
)

// BackendVersion is reported by rag:stats.
const BackendVersion = "flock-bm25-1"

// Config is the backend's section (resources.rag.config or apis.rag).
type Config struct {
	// DocumentsDir is the folder of .txt, .md and .html documents (required). A
	// relative path is taken from the server's working directory.
	DocumentsDir string
	// DefaultTopK is the number of passages when a call gives no top_k (5).
	DefaultTopK int
	// MaxTopK caps top_k (50); a larger value is an invalid-input error.
	MaxTopK int
	// PassageChars bounds a passage's length in characters (1000).
	PassageChars int
}

// section is the config section as written, for the settings decoder.
type section struct {
	DocumentsDir string         `json:"documents_dir"`
	DefaultTopK  *sandbox.Count `json:"default_top_k" default:"5" min:"1" max:"2147483647"`
	MaxTopK      *sandbox.Count `json:"max_top_k" default:"50" min:"1" max:"2147483647"`
	PassageChars *sandbox.Count `json:"passage_chars" default:"1000" min:"100" max:"2147483647"`
}

// Validate requires documents_dir and default_top_k within max_top_k.
func (s section) Validate() error {
	if strings.TrimSpace(s.DocumentsDir) == "" {
		return settings.Errorf("documents_dir", "%w", ErrMissingSetting)
	}
	if *s.DefaultTopK > *s.MaxTopK {
		return settings.Errorf("default_top_k", "above max_top_k %d: %w", s.MaxTopK.Int(), ErrBadSetting)
	}
	return nil
}

// parseConfig reads the section with decode (Env.Decode, or
// sandbox.DecodeConfig of a map); errors are *sandbox.ConfigError naming
// the key, a bad value's wrapping ErrBadSetting.
func parseConfig(decode func(any) error) (Config, error) {
	var s section
	if err := decode(&s); err != nil {
		return Config{}, sandbox.Classify(err, ErrMissingSetting, ErrBadSetting)
	}
	return Config{
		DocumentsDir: filepath.Clean(s.DocumentsDir),
		DefaultTopK:  int(s.DefaultTopK.Int()),
		MaxTopK:      int(s.MaxTopK.Int()),
		PassageChars: int(s.PassageChars.Int()),
	}, nil
}

// Engine holds the configuration and, once warmed up, the index. Tool calls made
// before warm-up completes wait for it (bounded by the call's context): the first
// call warms up if nobody did. A failed warm-up does not stick: the next call retries.
type Engine struct {
	cfg     Config
	dataDir string
	logger  *slog.Logger

	token chan struct{} // a one-slot semaphore held while opening the index

	mu  sync.RWMutex
	idx *Index // guarded by mu; nil until warmed up
}

// NewEngine validates cfg (the backend's config section) and returns an engine that
// keeps its index beneath dataDir. It touches no file.
func NewEngine(cfg map[string]any, dataDir string, logger *slog.Logger) (*Engine, error) {
	return newEngine(func(v any) error { return sandbox.DecodeConfig(cfg, v) }, dataDir, logger)
}

// newEngine is NewEngine of the section decode reads.
func newEngine(decode func(any) error, dataDir string, logger *slog.Logger) (*Engine, error) {
	c, err := parseConfig(decode)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: c, dataDir: dataDir, logger: logger, token: make(chan struct{}, 1)}, nil
}

// WarmUp opens the index, building it when the folder changed. It is idempotent.
func (e *Engine) WarmUp(ctx context.Context) error {
	_, err := e.index(ctx)
	return err
}

// index returns the open index, opening it first when needed. The returned index
// stays valid while the caller holds e.mu's read lock; callers use withIndex.
func (e *Engine) index(ctx context.Context) (*Index, error) {
	e.mu.RLock()
	idx := e.idx
	e.mu.RUnlock()
	if idx != nil {
		return idx, nil
	}
	select {
	case e.token <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.token }()
	e.mu.RLock()
	idx = e.idx
	e.mu.RUnlock()
	if idx != nil {
		return idx, nil
	}
	idx, err := OpenIndex(ctx, IndexOptions{DocumentsDir: e.cfg.DocumentsDir, DataDir: e.dataDir, PassageChars: e.cfg.PassageChars})
	if err != nil {
		return nil, err
	}
	if idx.Built() {
		e.logger.Info("rag index built", "documents", idx.man.Documents, "passages", idx.man.Passages, "build_ms", idx.man.BuildMillis)
	} else {
		e.logger.Info("rag index reused", "documents", idx.man.Documents, "passages", idx.man.Passages)
	}
	e.mu.Lock()
	e.idx = idx
	e.mu.Unlock()
	return idx, nil
}

// withIndex runs fn on the open index under the read lock, so Shutdown cannot close
// it underneath.
func (e *Engine) withIndex(ctx context.Context, fn func(*Index) error) error {
	if _, err := e.index(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.idx == nil {
		return ErrNotReady
	}
	return fn(e.idx)
}

// Shutdown closes the index. A later call opens it again.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.idx == nil {
		return nil
	}
	err := e.idx.Close()
	e.idx = nil
	return err
}

// SearchResult is rag:search's data.
type SearchResult struct {
	Query   string `json:"query"`
	Context string `json:"context"`
}

// Search returns the top passages for query as AgentFlow's context text.
func (e *Engine) Search(ctx context.Context, q string, topK int) (SearchResult, error) {
	if strings.TrimSpace(q) == "" {
		return SearchResult{Query: q}, fmt.Errorf("query: %w", ErrEmptyQuery)
	}
	var res SearchResult
	err := e.withIndex(ctx, func(ix *Index) error {
		hits, err := ix.Search(ctx, q, topK)
		if err != nil {
			return err
		}
		res = SearchResult{Query: q, Context: formatContext(hits)}
		return nil
	})
	return res, err
}

// BatchResult is rag:batch_search's data. Contexts has one entry per query, in order;
// a failed query's entry is "" and Errors says why.
type BatchResult struct {
	Count    int          `json:"count"`
	Contexts []string     `json:"contexts"`
	Errors   []BatchError `json:"errors,omitempty"`
}

// BatchError is one failed query of a batch.
type BatchError struct {
	Index int    `json:"index"`
	Query string `json:"query"`
	Error string `json:"error"`
}

// BatchSearch searches each query. A backend that cannot warm up fails the whole
// call; a bad query fails only its entry.
func (e *Engine) BatchSearch(ctx context.Context, queries []string, topK int) (BatchResult, error) {
	res := BatchResult{Count: len(queries), Contexts: make([]string, len(queries))}
	err := e.withIndex(ctx, func(ix *Index) error {
		for i, q := range queries {
			if err := ctx.Err(); err != nil {
				return err
			}
			if strings.TrimSpace(q) == "" {
				res.Errors = append(res.Errors, BatchError{Index: i, Query: q, Error: "query is empty"})
				continue
			}
			hits, err := ix.Search(ctx, q, topK)
			if err != nil {
				res.Errors = append(res.Errors, BatchError{Index: i, Query: q, Error: err.Error()})
				continue
			}
			res.Contexts[i] = formatContext(hits)
		}
		return nil
	})
	return res, err
}

// Stats is rag:stats's data.
type Stats struct {
	Initialized    bool        `json:"initialized"`
	BackendVersion string      `json:"backend_version"`
	Index          *IndexStats `json:"index,omitempty"`
}

// IndexStats describes the open index.
type IndexStats struct {
	Documents   int    `json:"documents"`
	Passages    int    `json:"passages"`
	Files       int    `json:"files"`
	Scoring     string `json:"scoring"`
	BuiltAt     string `json:"built_at"`
	BuildMillis int64  `json:"build_ms"`
	// Rebuilt is true when this process built the index, false when it reused the
	// one persisted by an earlier start.
	Rebuilt     bool `json:"rebuilt"`
	DefaultTopK int  `json:"default_top_k"`
}

// Stats reports the index without warming up.
func (e *Engine) Stats() Stats {
	e.mu.RLock()
	defer e.mu.RUnlock()
	s := Stats{Initialized: e.idx != nil, BackendVersion: BackendVersion}
	if e.idx != nil {
		m := e.idx.man
		s.Index = &IndexStats{
			Documents: m.Documents, Passages: m.Passages, Files: len(m.Files), Scoring: "bm25",
			BuiltAt: m.BuiltAt.Format("2006-01-02T15:04:05Z"), BuildMillis: m.BuildMillis,
			Rebuilt: e.idx.built, DefaultTopK: e.cfg.DefaultTopK,
		}
	}
	return s
}

// asInt accepts JSON numbers that are whole and Go ints.
func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n != float64(int(n)) {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}
