package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := schema[key].([]any)
		if !ok {
			continue
		}
		var errs []error
		for _, alt := range alts {
			err := validate(doc, alt.(map[string]any), v, at)
			if err == nil {
				break
			}
			errs = append(errs, err)
		}
		if len(errs) == len(alts) {
			return fmt.Errorf("%s: fits none of %s: %w", at, key, errors.Join(errs...))
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, enum)
	}
	typ, _ := schema["type"].(string)
	if types, ok := schema["type"].([]any); ok {
		if v == nil && slices.Contains(types, "null") {
			return nil
		}
		typ, _ = types[0].(string)
	}
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
