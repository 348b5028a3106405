package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server/servertest"
)

// TestOwnAddressesRefusedWhateverAllowed is the attack of issue 23.6:
// allow_hosts ["127.0.0.1"], the documented way to read a local page,
// also let web:visit read flock's own API and viewer. flock's listen
// addresses are refused (4001 naming them) whatever the allow list says:
// as a page URL, as the reader itself, allowed by address, by name or by
// allow_private. Other local pages stay readable.
func TestOwnAddressesRefusedWhateverAllowed(t *testing.T) {
	flock := servertest.StartSandbox(t).String()
	port := flock[strings.LastIndex(flock, ":")+1:]
	reader := newFakeReader(t, "local page")
	for _, allow := range []map[string]any{
		{"allow_hosts": []any{"127.0.0.1"}},
		{"allow_hosts": []any{"127.0.0.0/8", "localhost"}},
		{"allow_private": true},
	} {
		cfg := map[string]any{"serper_api_key": "k", "search_url": reader.srv.URL, "reader_url": reader.srv.URL + "/", "retries": 0.0}
		for k, v := range allow {
			cfg[k] = v
		}
		b := provision(t, cfg, nil)
		for _, page := range []string{"http://" + flock + "/health", "http://localhost:" + port + "/api/v1/tools", "http://127.0.0.1:" + port + "/"} {
			before := reader.hits.Load()
			_, err := callTool(t, b, "web:visit", `{"urls":"`+page+`"}`)
			if err == nil || codeOf(t, err) != sandbox.CodeBusinessFailure || !strings.Contains(err.Error(), port) || !strings.Contains(err.Error(), "flock's own") {
				t.Errorf("%v: visit %s = %v, want 4001 naming flock's own address", allow, page, err)
			}
			if reader.hits.Load() != before {
				t.Errorf("%v: the reader was asked for %s", allow, page)
			}
		}
		// The reader pointed at flock itself: refused as it connects.
		cfg["reader_url"] = "http://" + flock + "/api/v1/tools?x="
		b = provision(t, cfg, nil)
		_, err := callTool(t, b, "web:visit", `{"urls":"https://example.org/"}`)
		if err == nil || codeOf(t, err) != sandbox.CodeBusinessFailure || !strings.Contains(err.Error(), "flock's own") {
			t.Errorf("%v: a reader at flock's own address = %v, want 4001", allow, err)
		}
		// A local page that is not flock's is read.
		cfg["reader_url"] = reader.srv.URL + "/"
		b = provision(t, cfg, nil)
		out, err := callTool(t, b, "web:visit", `{"urls":"http://`+strings.TrimPrefix(reader.srv.URL, "http://")+`/page"}`)
		if err != nil || !strings.Contains(out, "local page") {
			t.Errorf("%v: a local page = %s %v", allow, out, err)
		}
	}
	// flock itself answers on that address, so the refusal is what kept
	// the tool from reading it.
	resp, err := http.Get("http://" + flock + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("flock's /health: %v %v", resp, err)
	}
	resp.Body.Close()
}
