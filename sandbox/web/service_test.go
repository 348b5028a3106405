package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/sandbox"
	_ "github.com/flockrun/flock/sandbox/web"
)

const secret = "serper-KEY-abc123"

// TestHTTP drives web:search and web:visit through the sandbox service over
// real HTTP, against local fake providers; the key comes from ${VAR}.
func TestHTTP(t *testing.T) {
	var searches atomic.Int64
	serper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		searches.Add(1)
		if r.Header.Get("X-API-KEY") != secret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		var req struct{ Q string }
		json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"organic":[{"title":"About %s","link":"https://x.example/","snippet":"s"}]}`, req.Q)
	}))
	defer serper.Close()
	reader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# Page %s", strings.TrimPrefix(r.URL.Path, "/"))
	}))
	defer reader.Close()

	doc := fmt.Sprintf(`{"apis": {"web": {"search_url": %q, "reader_url": %q, "serper_api_key": "${MY_SERPER}", "retries": 0, "allow_hosts": ["127.0.0.1"]}}}`, serper.URL, reader.URL+"/")
	svc := testsandbox.Open(t, doc, map[string]string{"MY_SERPER": secret})
	url := testsandbox.Serve(t, svc, configs.Server{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	client := &http.Client{Timeout: 20 * time.Second}

	tests := []struct {
		name   string
		body   string
		status int
		code   int
		want   string
	}{
		{"search", `{"worker_id":"w1","action":"web:search","params":{"query":"flock"}}`, 200, 0,
			`"result":"A Google search for 'flock' found 1 results:\n\n## Web Results\n1. [About flock](https://x.example/)\n\ns"`},
		{"search cached", `{"worker_id":"w2","action":"web:search","params":{"query":"flock"}}`, 200, 0, `About flock`},
		{"visit", `{"worker_id":"w1","action":"web:visit","params":{"urls":["https://example.org/a"],"goal":"g"}}`, 200, 0,
			`"warning":null`},
		{"visit bad url", `{"worker_id":"w1","action":"web:visit","params":{"urls":"file:///etc/passwd"}}`, 400, 4000, `not an http(s) URL`},
		{"missing query", `{"worker_id":"w1","action":"web:search","params":{}}`, 400, 4003, `query`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Post(url+"/api/v1/execute", "application/json", bytes.NewReader([]byte(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var env struct {
				Code int `json:"code"`
				Meta struct {
					Tool      string  `json:"tool"`
					SessionID *string `json:"session_id"`
				} `json:"meta"`
			}
			if err := json.Unmarshal(raw, &env); err != nil {
				t.Fatalf("%d %s: %v", resp.StatusCode, raw, err)
			}
			if resp.StatusCode != tt.status || env.Code != tt.code || !strings.Contains(string(raw), tt.want) {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
			if env.Code == 0 && env.Meta.SessionID != nil {
				t.Fatalf("a stateless call got a session: %s", raw)
			}
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the key is in the answer: %s", raw)
			}
		})
	}
	if searches.Load() != 1 {
		t.Fatalf("the provider saw %d searches, want 1 (the repeat is cached)", searches.Load())
	}
}

func TestServiceConfigErrorNamesThePath(t *testing.T) {
	t.Setenv("SERPER_API_KEY", "")
	cfg, err := sandbox.ParseConfig([]byte(`{"apis": {"web": {"content_limit": "lots", "serper_api_key": "k"}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, err = sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "apis.web.content_limit: want a whole number") {
		t.Fatalf("err = %v", err)
	}
	cfg, _ = sandbox.ParseConfig([]byte(`{"apis": {"web": {}}}`), func(string) (string, bool) { return "", false })
	_, err = sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "apis.web.serper_api_key: not set") {
		t.Fatalf("err = %v", err)
	}
}
