package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
)

// openAPIEnv is an env with a token and a mounted path, and its document.
func openAPIEnv(t *testing.T) (*env, map[string]any) {
	t.Helper()
	e := newEnvSetup(t, envSetup{server: func(s *Server) {
		s.Mount("/metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "up 1") }))
	}}, func(c *configs.Server) { c.AuthToken = "a-token-of-sixteen-bytes" })
	var doc map[string]any
	e.getJSON(t, "/openapi.json", &doc)
	return e, doc
}

// TestOpenAPIMatchesRoutes checks the document against the router: every
// echo route is documented with its method and every documented operation
// is a route; path parameters match; every error response has the error
// body's schema; every $ref resolves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e, doc := openAPIEnv(t)
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v", doc["openapi"])
	}
	var routes []string
	for _, r := range e.srv.e.Router().Routes() {
		path := r.Path
		for _, p := range r.Parameters {
			path = strings.Replace(path, ":"+p, "{"+p+"}", 1)
		}
		routes = append(routes, r.Method+" "+path)
	}
	var documented []string
	paths := doc["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			checkOperation(t, doc, strings.ToUpper(method)+" "+path, op.(map[string]any))
		}
	}
	sort.Strings(routes)
	sort.Strings(documented)
	if !slices.Equal(routes, documented) {
		t.Errorf("routes and document differ:\nroutes     %v\ndocumented %v", routes, documented)
	}
	if !slices.Contains(documented, "GET /metrics") || !slices.Contains(documented, "GET /openapi.json") {
		t.Errorf("documented = %v, want the mounted /metrics and /openapi.json", documented)
	}
	if doc["security"] == nil {
		t.Errorf("a server with a token documents no security")
	}
	// Every schema named anywhere resolves.
	b, _ := json.Marshal(doc)
	for _, part := range strings.Split(string(b), `"$ref":"`)[1:] {
		ref := part[:strings.IndexByte(part, '"')]
		if resolveMap(doc, ref) == nil {
			t.Errorf("$ref %s does not resolve", ref)
		}
	}
}

// checkOperation checks one operation's parameters and responses.
func checkOperation(t *testing.T, doc map[string]any, name string, op map[string]any) {
	t.Helper()
	path := strings.SplitN(name, " ", 2)[1]
	var inPath []string
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		p := p.(map[string]any)
		if p["in"] == "path" {
			inPath = append(inPath, p["name"].(string))
		}
	}
	if want := pathParams(path); !slices.Equal(inPath, want) {
		t.Errorf("%s: path parameters %v, want %v", name, inPath, want)
	}
	responses := op["responses"].(map[string]any)
	var success bool
	for code, r := range responses {
		content, _ := r.(map[string]any)["content"].(map[string]any)
		if code[0] == '2' {
			success = true
			continue
		}
		schema, _ := content["application/json"].(map[string]any)["schema"].(map[string]any)
		if schema["$ref"] != "#/components/schemas/Error" {
			t.Errorf("%s: response %s has no Error schema: %v", name, code, r)
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
	if path != "/health" && responses["401"] == nil {
		t.Errorf("%s: 401 undocumented on a server with a token", name)
	}
}

// TestOpenAPIDescribesResponses validates real answers of every JSON route
// against the document's schemas: required fields present, no field the
// document does not name, types and enums as documented.
func TestOpenAPIDescribesResponses(t *testing.T) {
	e, doc := openAPIEnv(t)
	id := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)
	wait := e.start(t, "test.wait", "")
	check := func(method, path, docPath string, status int) {
		t.Helper()
		r := e.do(t, method, path, nil)
		if r.status != status {
			t.Fatalf("%s %s = %d %s", method, path, r.status, r.body)
		}
		item, _ := doc["paths"].(map[string]any)[docPath].(map[string]any)
		op, ok := item[strings.ToLower(method)].(map[string]any)
		if !ok {
			t.Fatalf("%s %s undocumented", method, docPath)
		}
		resp, ok := op["responses"].(map[string]any)[fmt.Sprint(status)].(map[string]any)
		if !ok {
			t.Fatalf("%s %s: status %d undocumented", method, docPath, status)
		}
		schema := resp["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		if err := validate(doc, schema, v, "$"); err != nil {
			t.Errorf("%s %s: %v\n%s", method, path, err, r.body)
		}
	}
	check("GET", "/health", "/health", 200)
	check("GET", "/runs", "/runs", 200)
	check("GET", "/runs/"+id, "/runs/{id}", 200)
	check("GET", "/runs/"+id+"/entries", "/runs/{id}/entries", 200)
	check("GET", "/runs/"+id+"/ops", "/runs/{id}/ops", 200)
	check("GET", "/workflows", "/workflows", 200)
	check("GET", "/runs/nope", "/runs/{id}", 404)
	check("GET", "/runs?limit=x", "/runs", 400)
	check("POST", "/runs/"+wait+"/pause", "/runs/{id}/pause", 200)
	check("POST", "/runs/"+wait+"/resume", "/runs/{id}/resume", 200)
	check("POST", "/runs/"+wait+"/cancel", "/runs/{id}/cancel", 200)
	check("POST", "/runs/"+wait+"/cancel", "/runs/{id}/cancel", 409)

	// Each event's data is an Event.
	evSchema := map[string]any{"$ref": "#/components/schemas/Event"}
	for _, ev := range e.openEvents(t, id, "").readAll(t) {
		b, _ := json.Marshal(ev.data)
		var v any
		_ = json.Unmarshal(b, &v)
		if err := validate(doc, evSchema, v, "$"); err != nil {
			t.Errorf("event %d: %v", ev.id, err)
		}
	}
}

// validate checks v against the subset of JSON Schema the document uses.
func validate(doc, schema map[string]any, v any, at string) error {
	if ref, ok := schema["$ref"].(string); ok {
		target := resolveMap(doc, ref)
		if target == nil {
			return fmt.Errorf("%s: $ref %s does not resolve", at, ref)
		}
		return validate(doc, target, v, at)
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, enum)
	}
	typ, _ := schema["type"].(string)
	if typ == "" || v == nil && (typ == "array" || typ == "object") {
		return nil // any JSON; a nil slice or map encodes as null
	}
	switch typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", at, v)
		}
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Errorf("%s: required %q missing", at, r)
			}
		}
		for k, x := range m {
			sub, ok := props[k].(map[string]any)
			if !ok {
				if ap, ok := schema["additionalProperties"].(map[string]any); ok {
					sub = ap
				} else if props != nil {
					return fmt.Errorf("%s: field %q is not in the schema", at, k)
				}
			}
			if sub != nil {
				if err := validate(doc, sub, x, at+"."+k); err != nil {
					return err
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", at, v)
		}
		items, _ := schema["items"].(map[string]any)
		for i, x := range a {
			if err := validate(doc, items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %T, want a string", at, v)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok || typ == "integer" && f != float64(int64(f)) {
			return fmt.Errorf("%s: %v, want an %s", at, v, typ)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want a boolean", at, v)
		}
	}
	return nil
}

// resolveMap follows a local $ref ("#/components/schemas/Run").
func resolveMap(doc map[string]any, ref string) map[string]any {
	var cur any = doc
	for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	m, _ := cur.(map[string]any)
	return m
}
