package viewer

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// csp confines the viewer's pages to the server's own origin: scripts,
// styles, images and fetches from it alone (no CDN, no inline script),
// and no framing by other sites.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// Handler serves the viewer: GET / is the single page (index.html), GET
// /ui/NAME its assets. Any other path is 404. Every answer carries a
// Content-Security-Policy that allows only the server's own origin and
// forbids framing, and no-cache, so that a new binary's assets are used at
// once.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		p := r.URL.Path
		switch {
		case p == "/" || p == "":
			serveIndex(w, r, sub)
		case strings.HasPrefix(p, "/ui/"):
			name := path.Clean(strings.TrimPrefix(p, "/ui"))
			if name == "/" || name == "/index.html" || strings.HasSuffix(name, "/") {
				http.NotFound(w, r)
				return
			}
			r2 := r.Clone(r.Context())
			r2.URL.Path = name
			files.ServeHTTP(w, r2)
		default:
			http.NotFound(w, r)
		}
	})
}

// serveIndex writes index.html (FileServer would redirect "/index.html").
func serveIndex(w http.ResponseWriter, r *http.Request, sub fs.FS) {
	b, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		http.Error(w, "viewer: index.html missing from the build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
