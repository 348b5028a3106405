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
// once. The handler lists its assets (Assets), so that the server routes
// and documents each.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	return &handler{sub: sub, files: http.FileServerFS(sub)}
}

// handler is the viewer's http.Handler.
type handler struct {
	sub   fs.FS
	files http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
	p := r.URL.Path
	switch {
	case p == "/" || p == "":
		serveIndex(w, r, h.sub)
	case strings.HasPrefix(p, "/ui/"):
		name := path.Clean(strings.TrimPrefix(p, "/ui"))
		if name == "/" || name == "/index.html" || strings.HasSuffix(name, "/") {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = name
		h.files.ServeHTTP(w, r2)
	default:
		http.NotFound(w, r)
	}
}

// Assets returns the names the handler serves at /ui/NAME, sorted: every
// file of the embedded assets (a file in a directory by its slash path)
// but index.html (the page, served at /).
func (h *handler) Assets() []string {
	var names []string
	err := fs.WalkDir(h.sub, ".", func(name string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && name != "index.html" {
			names = append(names, name)
		}
		return err
	})
	if err != nil {
		panic(err) // the embedded tree is readable
	}
	return names
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
