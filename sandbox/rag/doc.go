// Package rag is the sandbox backend "rag": BM25 search over a folder of local
// documents, with AgentFlow's tools rag:search, rag:batch_search and rag:stats.
//
// # Configuration
//
// The section is resources.rag.config or apis.rag:
//
//		"apis": {"rag": {"documents_dir": "configs/sandbox/docs", "default_top_k": 5}}
//
//	  - documents_dir (required): the folder of .txt, .md/.markdown and .html/.htm files,
//	    read recursively (hidden entries and symbolic links skipped); relative to the
//	    server's working directory. Clients never name a path.
//	  - default_top_k (5): passages when a call gives no top_k.
//	  - max_top_k (50): the largest top_k a call may ask for (else 4000).
//	  - passage_chars (1000): the longest passage, in characters.
//
// # Index
//
// Documents are parsed by sandbox/internal/textdoc (HTML reduced to text) and cut into
// passages: the paragraphs of one section, up to passage_chars. Passages are indexed
// with bleve (English analyzer, BM25 scoring via the mapping's ScoringModel) in
// <data dir>/index, next to manifest.json, which lists each file's path, size, mtime
// and SHA-256. A start reuses the index when the manifest's (path, hash) list, the
// passage size and the index format are unchanged; a touched but unchanged file is
// re-hashed, not re-indexed. Otherwise the index is built into index.building and
// renamed into place, and the manifest is written last, so an interrupted build is
// redone at the next start.
//
// # Warm-up
//
// WarmUp opens or builds the index. A call that arrives before warm-up finished waits
// for it (within the call's timeout) rather than answering 5011, and the first call
// warms up a backend nobody warmed; 5011 is answered only when the index cannot be
// opened (for example a missing folder), with the reason, and the next call tries
// again. rag:stats never warms up: it reports initialized false until then.
//
// # Results
//
// rag:search answers {query, context}: the passages as "[title]\ntext" joined by
// "\n---\n" (AgentFlow's format), the title being "Document title — Section heading".
// Passages are ranked by BM25 score, passages of equal score by their id
// ("singers.md#1"), so a search of the same folder gives the same passages in the same
// order every time (bleve's own tie-break follows the order its concurrent analysis of
// a batch finished in, which changes from one build of the index to the next).
// rag:batch_search answers {count, contexts} with one context per query in order; when
// some queries fail (a blank one) it answers 5010, when all fail 5009, with data
// {count, contexts, errors:[{index, query, error}]} and "" for a failed query's context.
// rag:stats answers {initialized, backend_version, index:{documents, passages, files,
// scoring, built_at, build_ms, rebuilt, default_top_k}}.
package rag
