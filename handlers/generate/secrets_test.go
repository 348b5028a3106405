package generate

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/operations"
)

// TestKeyNeverLeaks makes requests fail in every way, with servers that
// echo the Authorization header back, and checks that the key appears
// neither in the result nor in the logs.
func TestKeyNeverLeaks(t *testing.T) {
	echo := func(r *http.Request) string { return "you sent " + r.Header.Get("Authorization") }
	tests := []struct {
		name    string
		handler http.HandlerFunc
		closed  bool
	}{
		{"401 echoing the key", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 401, apiError("Incorrect API key provided: "+echo(r)))
		}, false},
		{"500 after retries", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 500, apiError(echo(r)))
		}, false},
		{"503 html page", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(503)
			_, _ = w.Write([]byte("<html>" + echo(r) + "</html>"))
		}, false},
		{"malformed body", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("<html>" + echo(r) + "</html>"))
		}, false},
		{"zero choices", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"choices": []any{}, "note": echo(r)})
		}, false},
		{"connection refused", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sawKey := false
			fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {})
			fs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sawKey = sawKey || strings.Contains(r.Header.Get("Authorization"), testKey)
				tt.handler(w, r)
			})
			s := liveSettings(fs, func(m *configs.Model) { m.APIKeyEnv = "MY_SECRET_KEY" })
			if tt.closed {
				fs.Close()
			}
			h, logs := newTestHandler(t, map[string]string{"MY_SECRET_KEY": testKey})
			r := handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi")})
			if r.Error == "" {
				t.Fatal("expected an error result")
			}
			if !tt.closed && !sawKey {
				t.Fatal("server never saw the key: the test proves nothing")
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), testKey) {
				t.Errorf("key in result: %s", b)
			}
			if strings.Contains(logs.String(), testKey) {
				t.Errorf("key in logs: %s", logs.String())
			}
			t.Logf("error: %s", r.Error)
		})
	}
}
