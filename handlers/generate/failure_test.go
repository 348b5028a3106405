package generate

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/keyring"
	"github.com/flockrun/flock/operations"
)

// TestFailureCodes checks each kind of endpoint failure: those that cannot
// get better (the host does not resolve, the port refuses, TLS fails, 401,
// 403, 404, 400, a quota spent, a 429 whose Retry-After the run may not
// wait) fail after exactly one request with a code an agent ends its run
// on and a one-line error naming the model, the host and the cause;
// transient ones are retried and, when they last, end with a code an
// agent goes on after.
func TestFailureCodes(t *testing.T) {
	status := func(code int, header, body string) func(w http.ResponseWriter, n int) {
		return func(w http.ResponseWriter, _ int) {
			if header != "" {
				k, v, _ := strings.Cut(header, ": ")
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}
	}
	tests := []struct {
		name string
		// endpoint, when set, replaces the fake server's base URL
		// ("refused" and "tls" are made by the test).
		endpoint string
		reply    func(w http.ResponseWriter, n int)
		code     operations.Code
		requests int // requests the fake endpoint answered
		want     []string
	}{
		{name: "dns", endpoint: "http://flock-no-such-host.invalid/v1", code: operations.CodeModelError,
			want: []string{"cannot resolve host flock-no-such-host.invalid", "after 1 attempt, not retried"}},
		{name: "refused", endpoint: "refused", code: operations.CodeModelError,
			want: []string{"connection refused", "after 1 attempt, not retried", "nothing listens at 127.0.0.1:"}},
		{name: "tls", endpoint: "tls", code: operations.CodeModelError,
			want: []string{"TLS failure", "after 1 attempt, not retried", "certificate"}},
		{name: "https to plain http", endpoint: "https", reply: func(w http.ResponseWriter, _ int) { writeJSON(w, 200, textCompletion("ok")) },
			code: operations.CodeModelError, want: []string{"TLS failure", "answers plain HTTP: base_url should start with http://"}},
		{name: "401", reply: status(401, "", `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`),
			code: operations.CodeModelError, requests: 1,
			want: []string{"HTTP 401 (the endpoint refused the API key in $OPENAI_API_KEY)", "not retried", "Incorrect API key provided"}},
		{name: "403", reply: status(403, "", `{"error":{"message":"no access","type":"permission_error"}}`),
			code: operations.CodeModelError, requests: 1, want: []string{"HTTP 403", `may not use model "test-model"`}},
		{name: "404", reply: status(404, "", `{"error":{"message":"The model test-model does not exist","type":"NotFoundError"}}`),
			code: operations.CodeModelError, requests: 1, want: []string{`HTTP 404 (no model "test-model" or no chat completions at base_url)`, "does not exist"}},
		{name: "400", reply: status(400, "", `{"error":{"message":"bad field\n  messages","type":"BadRequestError"}}`),
			code: operations.CodeModelError, requests: 1, want: []string{"HTTP 400 (the endpoint rejected the request)", "bad field messages"}},
		{name: "429 beyond the wait bound", reply: status(429, "Retry-After: 3600", `{"error":{"message":"slow down","type":"rate_limit"}}`),
			code: operations.CodeRateLimited, requests: 1,
			want: []string{"HTTP 429", "the endpoint asked to wait 3600 s, more than models.m.max_retry_wait_s (60 s) allows"}},
		{name: "quota spent", reply: status(429, "", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`),
			code: operations.CodeRateLimited, requests: 1, want: []string{"quota is spent", "not retried"}},
		{name: "429 through the retries", reply: status(429, "", `{"error":{"message":"slow down","type":"rate_limit"}}`),
			code: operations.CodeRateLimited, requests: 4, want: []string{"HTTP 429", "after 4 attempts"}},
		{name: "500 through the retries", reply: status(500, "", `{"error":{"message":"boom","type":"server_error"}}`),
			code: operations.CodeUnavailable, requests: 4, want: []string{"HTTP 500", "after 4 attempts", "boom"}},
		{name: "500 then 200", reply: func(w http.ResponseWriter, n int) {
			if n == 1 {
				writeJSON(w, 500, apiError("boom"))
				return
			}
			writeJSON(w, 200, textCompletion("ok"))
		}, requests: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			fs := newFakeServer(t, func(w http.ResponseWriter, n int, _ map[string]any) {
				hits.Add(1)
				tt.reply(w, n)
			})
			base := fs.URL + "/v1"
			switch tt.endpoint {
			case "":
			case "refused":
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				base = "http://" + l.Addr().String() + "/v1"
				l.Close()
			case "tls":
				ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					hits.Add(1)
					writeJSON(w, 200, textCompletion("ok"))
				}))
				ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
				ts.StartTLS()
				t.Cleanup(ts.Close)
				base = ts.URL + "/v1"
			case "https":
				base = strings.Replace(fs.URL, "http://", "https://", 1) + "/v1"
			default:
				base = tt.endpoint
			}
			h, logs := newTestHandler(t, map[string]string{"OPENAI_API_KEY": testKey})
			s := liveSettings(fs, func(m *configs.Model) { m.BaseURL = base })
			r := handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi")})
			if got := int(hits.Load()); got != tt.requests {
				t.Errorf("the endpoint answered %d requests, want %d", got, tt.requests)
			}
			if tt.want == nil {
				if g := mustGen(t, r); g.Outputs[0].Content != "ok" || r.Code != "" {
					t.Fatalf("result %+v", r)
				}
				return
			}
			if r.Code != tt.code || r.Code.Fatal() != tt.code.Fatal() {
				t.Errorf("code %q, want %q", r.Code, tt.code)
			}
			host := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
			host = strings.TrimSuffix(host, "/v1")
			want := append([]string{`model "m" at ` + host + ": "}, tt.want...)
			for _, w := range want {
				if !strings.Contains(r.Error, w) {
					t.Errorf("error %q lacks %q", r.Error, w)
				}
			}
			if strings.ContainsAny(r.Error, "\n\r") || strings.Contains(r.Error, testKey) {
				t.Errorf("error not one clean line: %q", r.Error)
			}
			if tt.requests <= 1 && strings.Contains(logs.String(), "generate: retrying") {
				t.Errorf("retried:\n%s", logs.String())
			}
		})
	}
}

// TestRefusedKeyFromConfigFile checks that a 401 or 403 for a key the
// person at the terminal wrote in a config file (api_key: held under a
// keyring name) says so, rather than naming the keyring's generated
// variable, which the user never set and cannot look up.
func TestRefusedKeyFromConfigFile(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   string
	}{
		{401, "HTTP 401 (the endpoint refused the API key given in the config file)"},
		{403, `HTTP 403 (the API key given in the config file may not use model "test-model")`},
	} {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
				writeJSON(w, tt.status, apiError("Incorrect API key provided"))
			})
			name := keyring.NewName()
			h, _ := newTestHandler(t, map[string]string{name: testKey})
			s := liveSettings(fs, func(m *configs.Model) { m.APIKeyEnv = name })
			r := handle(t, h, s, operations.GenerateRequest{Model: "m", Messages: userMsg("hi")})
			if r.Code != operations.CodeModelError {
				t.Fatalf("code %q, want %q (%s)", r.Code, operations.CodeModelError, r.Error)
			}
			if !strings.Contains(r.Error, tt.want) || strings.Contains(r.Error, keyring.Prefix) || strings.Contains(r.Error, testKey) {
				t.Errorf("error %q: want %q, and neither the keyring's name nor the key", r.Error, tt.want)
			}
		})
	}
}
