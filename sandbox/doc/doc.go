// Package doc is the sandbox backend "doc": keyword search over the headings and
// paragraphs of local documents and reading them by section id, with AgentFlow's tool
// names doc:search and doc:read.
//
// # Configuration
//
// The section is apis.doc or resources.doc.config:
//
//   - documents_dir (required): the folder of .md, .html and .txt documents (see
//     sandbox/internal/textdoc), relative to the server's working directory.
//   - max_search_results (10): results per keyword when a call gives none.
//   - max_text_token (20000): doc:read clips its text to this many characters.
//
// A document's id is its path in the folder without extension ("singers" for
// singers.md); a section id is "<document id>#<n>", n counting the document's
// sections from 1. The folder is re-read when a file's size or mtime changes.
//
// # Differences from AgentFlow
//
// AgentFlow's doc tools read a pre-parsed document from seed_path, a server directory
// the request names. flock never reads a path from a request: doc:search takes an
// optional doc_id among the configured documents, and a seed_path, when sent, is only
// matched against the configured ids (the id itself, or its base name without
// extension); an unknown one is 4000. doc:read needs no VLM: goal is accepted and
// unused, max_image_num is ignored, and max_text_token clips in characters.
//
// # Results
//
// Both tools answer {result: text, inputs: params}. doc:search's text has, per
// keyword, "A Document search for `kw` found N results:" and a <Search_Result> block of
// <Result section_id document type heading> elements (XML-escaped, best first:
// occurrence count, headings weighted three times; every word of the keyword must
// occur). doc:read's text is each section headed "[id] title — heading"; unknown ids
// are listed at the end, and if none is known the call is 4000.
package doc
