package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/server/sandboxapi"
	"github.com/flockrun/flock/viewer"
)

const routesToken = "routes-test-token-0123456789"

// TestOpenAPICoversEveryRoute walks the route table of every kind of
// server flock runs (the API alone, with the model gateway, with the
// operator routes, all that flock serve mounts, and flock sandbox's) and
// checks GET /openapi.json against it both ways: every route echo serves
// is documented with its method, its path parameters and a schema for
// every response; every documented operation is a route echo chooses for
// its path (no literal path that answers 404, as /ui/* was), and a real
// request to it answers a status the document lists, with a body its
// schema describes.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	kinds := []struct {
		name  string
		build func(t *testing.T, cfg configs.Server) *server.Server
	}{
		{"api", func(t *testing.T, cfg configs.Server) *server.Server {
			_, srv := apiServer(t, cfg)
			return srv
		}},
		{"api with gateway", func(t *testing.T, cfg configs.Server) *server.Server {
			a, srv := apiServer(t, cfg)
			srv.MountGateway(a.Gateway)
			return srv
		}},
		{"api with operator routes", func(t *testing.T, cfg configs.Server) *server.Server {
			a, srv := apiServer(t, cfg)
			mountOperator(t, a, srv, false)
			return srv
		}},
		{"flock serve", func(t *testing.T, cfg configs.Server) *server.Server {
			// What cli/serve.go mounts, with a sandbox config.
			a, srv := apiServer(t, cfg)
			srv.Mount("/metrics", a.Metrics.Handler())
			srv.MountGateway(a.Gateway)
			srv.MountUI(viewer.Handler())
			srv.MountGroup(sandboxapi.New(sandboxService(t), sandboxapi.Options{}))
			mountOperator(t, a, srv, true)
			return srv
		}},
		{"sandbox", func(t *testing.T, cfg configs.Server) *server.Server {
			srv, err := sandboxapi.NewServer(cfg, sandboxService(t), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return srv
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			srv := k.build(t, configs.Server{Addr: "127.0.0.1:0", DataDir: t.TempDir(), AuthToken: routesToken})
			base := testkit.Serve(t, srv)
			var doc map[string]any
			if status, body := call(t, base, http.MethodGet, "/openapi.json"); status != http.StatusOK || json.Unmarshal(body, &doc) != nil {
				t.Fatalf("GET /openapi.json: %d %s", status, body)
			}
			checkRefs(t, doc)
			if doc["security"] == nil {
				t.Errorf("a server with a token documents no security")
			}
			paths, _ := doc["paths"].(map[string]any)

			// Every route echo serves is documented.
			routes := server.RouteTable(srv)
			sort.Strings(routes)
			for _, r := range routes {
				method, path, _ := strings.Cut(r, " ")
				item, _ := paths[path].(map[string]any)
				op, ok := item[strings.ToLower(method)].(map[string]any)
				if !ok {
					t.Errorf("%s: served but not in /openapi.json", r)
					continue
				}
				checkDocumented(t, r, op)
			}

			// Every documented operation is served.
			for path, item := range paths {
				for method, op := range item.(map[string]any) {
					method = strings.ToUpper(method)
					name := method + " " + path
					if strings.ContainsAny(path, "*:") {
						t.Errorf("%s: a wildcard or echo parameter is a literal in OpenAPI", name)
					}
					if !slices.Contains(routes, name) {
						t.Errorf("%s: in /openapi.json but not a route", name)
						continue
					}
					concrete := paramRE.ReplaceAllString(path, "x")
					if got := server.RouteOf(srv, method, concrete); got != path {
						t.Errorf("%s %s: echo routes it to %q, want %s", method, concrete, got, path)
						continue
					}
					checkAnswer(t, doc, base, method, concrete, name, op.(map[string]any))
				}
			}
		})
	}
}

// paramRE matches a path parameter of an OpenAPI path.
var paramRE = regexp.MustCompile(`\{[^}/]+\}`)

// checkDocumented checks one operation: its path parameters are the
// route's, and every response has a schema for each of its media types
// (a stream's events, x-event-schema).
func checkDocumented(t *testing.T, name string, op map[string]any) {
	t.Helper()
	_, path, _ := strings.Cut(name, " ")
	var want, got []string
	for _, m := range paramRE.FindAllString(path, -1) {
		want = append(want, strings.Trim(m, "{}"))
	}
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		if p := p.(map[string]any); p["in"] == "path" {
			got = append(got, p["name"].(string))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: path parameters %v, want %v", name, got, want)
	}
	responses, _ := op["responses"].(map[string]any)
	success := false
	for code, r := range responses {
		success = success || code[0] == '2'
		content, _ := r.(map[string]any)["content"].(map[string]any)
		if len(content) == 0 {
			t.Errorf("%s: response %s has no content", name, code)
		}
		for media, c := range content {
			c, _ := c.(map[string]any)
			schema, _ := c["schema"].(map[string]any)
			if media == "text/event-stream" {
				schema, _ = c["x-event-schema"].(map[string]any)
			}
			if schema == nil {
				t.Errorf("%s: response %s (%s) has no schema", name, code, media)
			}
		}
	}
	if !success {
		t.Errorf("%s: no success response", name)
	}
	for _, code := range []string{"403", "500"} {
		if responses[code] == nil {
			t.Errorf("%s: response %s undocumented", name, code)
		}
	}
	if _, public := op["security"]; !public && responses["401"] == nil {
		t.Errorf("%s: needs the token but documents no 401", name)
	}
}

// checkAnswer makes a real request of the operation (a POST with the body
// {}) and checks that its status is documented and its JSON body fits
// the status's schema.
func checkAnswer(t *testing.T, doc map[string]any, base, method, path, name string, op map[string]any) {
	t.Helper()
	status, body := call(t, base, method, path)
	resp, ok := op["responses"].(map[string]any)[fmt.Sprint(status)].(map[string]any)
	if !ok {
		t.Errorf("%s %s: status %d is not documented: %.300s", method, path, status, body)
		return
	}
	content, _ := resp["content"].(map[string]any)
	js, ok := content["application/json"].(map[string]any)
	if !ok {
		return
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("%s %s: %d, not JSON: %.300s", method, path, status, body)
		return
	}
	if err := server.ValidateJSON(doc, js["schema"].(map[string]any), v); err != nil {
		t.Errorf("%s %s: %d does not fit its schema: %v\n%.300s", method, path, status, err, body)
	}
}

// call makes a request with the token (a POST with the JSON body {}) and
// returns the status and body; a stream is read for at most a second.
func call(t *testing.T, base, method, path string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+routesToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// checkRefs checks that every $ref of doc resolves.
func checkRefs(t *testing.T, doc map[string]any) {
	t.Helper()
	b, _ := json.Marshal(doc)
	for _, m := range regexp.MustCompile(`"\$ref":"#/components/schemas/([^"]+)"`).FindAllStringSubmatch(string(b), -1) {
		schemas, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
		if schemas[m[1]] == nil {
			t.Errorf("$ref %s does not resolve", m[1])
		}
	}
}

// apiServer is flock serve's app and a server of its API.
func apiServer(t *testing.T, cfg configs.Server) (*app.App, *server.Server) {
	t.Helper()
	a := testapp.Open(t, cfg)
	srv, err := server.New(a.Config, a.Executor, a.Executor.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return a, srv
}

func mountOperator(t *testing.T, a *app.App, srv *server.Server, sandbox bool) {
	t.Helper()
	err := srv.MountOperator(server.Operator{Token: "operator-token-0123456789", Keys: a.Keys, DataDir: a.Config.DataDir, Sandbox: sandbox})
	if err != nil {
		t.Fatal(err)
	}
}

// sandboxService is a sandbox service of no backend.
func sandboxService(t *testing.T) *sandbox.Service {
	t.Helper()
	return testsandbox.Open(t, `{}`, nil)
}
