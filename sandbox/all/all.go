// Package all links every sandbox backend into the binary: each backend
// package under sandbox/ is blank-imported here (one line each), and app/
// imports this package. A backend engineer adds exactly one import line.
package all

import (
	_ "github.com/flockrun/flock/sandbox/bashbox"
	_ "github.com/flockrun/flock/sandbox/browser"
	_ "github.com/flockrun/flock/sandbox/code"
	_ "github.com/flockrun/flock/sandbox/desktop"
	_ "github.com/flockrun/flock/sandbox/doc"
	_ "github.com/flockrun/flock/sandbox/mcp"
	_ "github.com/flockrun/flock/sandbox/rag"
	_ "github.com/flockrun/flock/sandbox/text2sql"
	_ "github.com/flockrun/flock/sandbox/web"
)
