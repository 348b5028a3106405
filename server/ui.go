package server

import (
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v5"
)

// UIPrefix is the path under which MountUI serves the viewer's assets.
const UIPrefix = "/ui/"

// AssetLister is implemented by a viewer handler (MountUI) that says which
// names it serves beneath /ui/: package viewer's handler does.
type AssetLister interface {
	// Assets returns the names of the assets, each served at /ui/NAME.
	Assets() []string
}

// MountUI serves h, the browser viewer (package viewer), at GET / and its
// assets beneath /ui/, behind the same guard (Host, Origin) as the API
// but without the bearer token: the pages and scripts hold no data, and
// they call the API with the token the user types into their login form.
// When h lists its assets (AssetLister), each is a route of its own and
// any other path beneath /ui/ is the API's 404; otherwise every
// /ui/NAME goes to h. Call it before Start.
func (s *Server) MountUI(h http.Handler) {
	wrapped := echo.WrapHandler(h)
	paths := []string{"/"}
	if l, ok := h.(AssetLister); ok {
		for _, a := range l.Assets() {
			paths = append(paths, UIPrefix+a)
		}
	} else {
		paths = append(paths, UIPrefix+":asset")
	}
	for _, p := range paths {
		s.e.GET(p, wrapped)
		s.public[p] = true
	}
	s.ui = append(s.ui, paths...)
}

// uiRoutes documents the viewer's routes.
func (s *Server) uiRoutes() []Route {
	var out []Route
	for _, p := range s.ui {
		r := Route{Method: http.MethodGet, Path: p, Status: http.StatusOK, Public: true}
		switch {
		case p == "/":
			r.ID, r.Summary = "uiPage", "The browser viewer's page (package viewer); needs no token."
			r.Content = []Content{{"text/html", ""}}
		case strings.HasPrefix(p, UIPrefix+":"):
			r.Path, r.ID = UIPrefix+"{asset}", "uiAsset"
			r.Summary = "An asset of the browser viewer (a script or a style sheet); needs no token."
			r.PathParams = []Param{{Name: "asset", Type: "string", Doc: "the asset's file name"}}
			r.Content = []Content{{"*/*", ""}}
		default:
			r.ID, r.Summary = operationID("ui", strings.TrimPrefix(p, UIPrefix)), "An asset of the browser viewer; needs no token."
			media, _, _ := mime.ParseMediaType(mime.TypeByExtension(path.Ext(p)))
			if media == "" {
				media = "application/octet-stream"
			}
			r.Content = []Content{{media, ""}}
		}
		out = append(out, r)
	}
	return out
}
