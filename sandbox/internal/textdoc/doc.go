// Package textdoc reads a folder of local documents (.md, .markdown, .txt, .html,
// .htm) into titled sections of plain-text paragraphs. It is shared by the sandbox's
// rag and doc backends, which index and search what it returns.
//
// # Parsing
//
// Markdown is split at ATX headings (# to ######); blank lines separate paragraphs and
// fenced code blocks stay one paragraph. HTML is reduced to text: h1–h6 start sections,
// p, li, pre, blockquote, td/th rows and div text become paragraphs, and script, style,
// nav, header, footer, noscript and template contents are dropped. Plain text has one
// section whose paragraphs are separated by blank lines. A document's title is its
// first level-1 heading (or HTML <title>), else its file name without extension.
//
// # Caveats
//
// Load follows no symbolic links and reads only regular files beneath the folder; ids
// are slash-separated relative paths without extension, so "a.md" and "a.html" in one
// folder collide and the second is reported as an error.
package textdoc
