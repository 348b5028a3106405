package sandboxapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
)

// TestErrorsAreEnvelopes: every error answer beneath /api/v1 is an
// AgentFlow envelope and nothing more ({code, message, data, meta}, the
// request id as meta.trace_id): a missing field of session/create (which
// carried a "status" key that is no part of the envelope), the server's
// refusals (token, origin, content type, body size), unrouted paths and
// the schema of an unknown tool.
func TestErrorsAreEnvelopes(t *testing.T) {
	const token = "envelope-token-0123456789"
	base := "http://" + start(t, `{}`, configs.Server{AuthToken: token, MaxBodyBytes: 1000})
	tests := []struct {
		name, method, path, body string
		header                   []string
		status, code             int
	}{
		{"missing field", "POST", "/api/v1/session/create", `{"worker_id":"w1"}`, nil, 400, 4002},
		{"missing worker", "POST", "/api/v1/execute", `{"action":"x"}`, nil, 400, 4002},
		{"malformed body", "POST", "/api/v1/execute", `{nope`, nil, 400, 4002},
		{"unknown tool schema", "GET", "/api/v1/tools/nope/schema", "", nil, 404, 4002},
		{"unknown route", "GET", "/api/v1/nope", "", nil, 404, 4002},
		{"wrong method", "GET", "/api/v1/execute", "", nil, 405, 4002},
		{"no token", "POST", "/api/v1/session/list", `{"worker_id":"w1"}`, []string{"Authorization", ""}, 401, 4001},
		{"foreign origin", "POST", "/api/v1/session/list", `{"worker_id":"w1"}`, []string{"Origin", "http://evil.example"}, 403, 4001},
		{"not JSON", "POST", "/api/v1/session/list", `worker_id=w1`, []string{"Content-Type", "text/plain"}, 415, 4002},
		{"too large", "POST", "/api/v1/execute", `{"worker_id":"w1","action":"x","params":{"p":"` + strings.Repeat("a", 2000) + `"}}`, nil, 413, 4002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer "+token)
			for i := 0; i+1 < len(tt.header); i += 2 {
				req.Header.Set(tt.header[i], tt.header[i+1])
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			var env map[string]json.RawMessage
			if err := json.Unmarshal(raw, &env); err != nil {
				t.Fatalf("%d, not JSON: %q", res.StatusCode, raw)
			}
			var keys []string
			for k := range env {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if want := []string{"code", "data", "message", "meta"}; !slices.Equal(keys, want) {
				t.Errorf("keys %v, want the envelope's %v: %s", keys, want, raw)
			}
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Data    any    `json:"data"`
				Meta    struct {
					TraceID string `json:"trace_id"`
				} `json:"meta"`
			}
			_ = json.Unmarshal(raw, &e)
			if res.StatusCode != tt.status || e.Code != tt.code || e.Message == "" || e.Data != nil {
				t.Errorf("%d %s, want status %d, code %d, a message and no data", res.StatusCode, raw, tt.status, tt.code)
			}
			if id := res.Header.Get("X-Request-ID"); id == "" || e.Meta.TraceID != id {
				t.Errorf("meta.trace_id %q, X-Request-ID %q", e.Meta.TraceID, id)
			}
		})
	}
}
