package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/state"
)

// TestCrossSiteStartRunsNothing drives the attack of issue 9: a web page
// POSTs /start_workflow with a text/plain or form body (no CORS preflight
// needed) to a server on loopback without a token. The script workflow's
// command would create a marker file. None of the forged requests may
// create a run; the same body sent as a client sends it (JSON, no Origin)
// does run the command, which shows the marker would have appeared.
func TestCrossSiteStartRunsNothing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	a := testapp.Open(t, configs.Server{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "data")})
	srv, err := server.New(a.Config, a.Executor, a.Executor.Store(), nil)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	base := testkit.Serve(t, srv)
	body, _ := json.Marshal(map[string]any{"workflow": "script",
		"settings": map[string]any{"commands": []string{"touch " + marker}}})
	post := func(contentType, origin, payload string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/start_workflow", strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	runs := func() []state.Run {
		t.Helper()
		rs, _, err := a.Store.Runs(ctx, state.RunFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}

	forged := []struct {
		name, contentType, origin, payload string
		status                             int
	}{
		{"text/plain from a foreign page", "text/plain;charset=UTF-8", "https://evil.example", string(body), 403},
		{"form from a foreign page", "application/x-www-form-urlencoded", "https://evil.example", string(body) + "=", 403},
		{"multipart from a sandboxed frame", "multipart/form-data; boundary=b", "null", string(body), 403},
		{"JSON from a foreign page", "application/json", "https://evil.example", string(body), 403},
		{"text/plain without Origin", "text/plain", "", string(body), 415},
		{"form without Origin", "application/x-www-form-urlencoded", "", string(body) + "=", 415},
	}
	for _, f := range forged {
		t.Run(f.name, func(t *testing.T) {
			code, msg := post(f.contentType, f.origin, f.payload)
			if code != f.status {
				t.Fatalf("status %d, want %d: %s", code, f.status, msg)
			}
			if rs := runs(); len(rs) != 0 {
				t.Fatalf("a forged request started run %s", rs[0].ID)
			}
		})
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker exists after forged requests: %v", err)
	}

	// The control: a programmatic client starts the same run, and its
	// command runs.
	code, msg := post("application/json", "", string(body))
	if code != http.StatusCreated {
		t.Fatalf("JSON start without Origin: status %d: %s", code, msg)
	}
	testkit.CheckFor(t, testkit.DefaultTimeout, func() error {
		rs := runs()
		if len(rs) != 1 || !rs[0].Status.Terminal() {
			return fmt.Errorf("control run did not finish: %+v", rs)
		}
		if rs[0].Status != state.StatusSucceeded {
			t.Fatalf("control run %s: %s (%s)", rs[0].ID, rs[0].Status, rs[0].Error)
		}
		return nil
	})
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the control run did not create the marker: %v", err)
	}
}
