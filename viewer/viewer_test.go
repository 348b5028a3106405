package viewer_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flockrun/flock/viewer"
)

// TestHandler serves the page and its assets from the binary with a CSP
// that allows only the server's own origin, and nothing else.
func TestHandler(t *testing.T) {
	ts := httptest.NewServer(viewer.Handler())
	defer ts.Close()
	tests := []struct {
		path   string
		status int
		ctype  string
		has    string
	}{
		{"/", http.StatusOK, "text/html", `<script type="module" src="/ui/app.js">`},
		{"/ui/app.js", http.StatusOK, "javascript", "import {api, follow"},
		{"/ui/style.css", http.StatusOK, "text/css", ".transcript"},
		{"/ui/", http.StatusNotFound, "", ""},
		{"/ui/index.html", http.StatusNotFound, "", ""},
		{"/ui/../viewer.go", http.StatusNotFound, "", ""},
		{"/ui/nope.js", http.StatusNotFound, "", ""},
		{"/runs", http.StatusNotFound, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res, err := http.Get(ts.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("CSP %q", csp)
			}
			if tt.status != http.StatusOK {
				return
			}
			if ct := res.Header.Get("Content-Type"); !strings.Contains(ct, tt.ctype) {
				t.Errorf("Content-Type %q, want %s", ct, tt.ctype)
			}
			if !strings.Contains(string(b), tt.has) {
				t.Errorf("body lacks %q", tt.has)
			}
		})
	}
}

// TestNoRemoteAssets checks that the page loads nothing from elsewhere:
// the viewer works offline.
func TestNoRemoteAssets(t *testing.T) {
	ts := httptest.NewServer(viewer.Handler())
	defer ts.Close()
	paths := []string{"/"}
	files, err := os.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name() != "index.html" {
			paths = append(paths, "/ui/"+f.Name())
		}
	}
	if len(paths) < 8 {
		t.Fatalf("only %v in assets/", paths)
	}
	for _, p := range paths {
		res, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", p, res.StatusCode)
		}
		// The SVG namespace is a name, not an address the page loads.
		text := strings.ReplaceAll(string(b), "'http://www.w3.org/2000/svg'", "")
		for _, bad := range []string{"http://", "https://", "//cdn", "@import url("} {
			if strings.Contains(text, bad) {
				t.Errorf("%s refers to %q", p, bad)
			}
		}
	}
}

// TestAssetsListed: the handler lists every file it serves beneath /ui/
// (what the server routes and documents one by one), and each answers.
func TestAssetsListed(t *testing.T) {
	h, ok := viewer.Handler().(interface{ Assets() []string })
	if !ok {
		t.Fatal("the viewer's handler does not list its assets")
	}
	var want []string
	err := filepath.WalkDir("assets", func(name string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && name != filepath.Join("assets", "index.html") {
			rel, _ := filepath.Rel("assets", name)
			want = append(want, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Assets(); !slices.Equal(got, want) {
		t.Fatalf("Assets() = %v, want %v", got, want)
	}
	ts := httptest.NewServer(viewer.Handler())
	defer ts.Close()
	for _, name := range want {
		res, err := http.Get(ts.URL + "/ui/" + name)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET /ui/%s: %d", name, res.StatusCode)
		}
	}
}
