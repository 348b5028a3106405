package testsandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
)

// TestServeBehindToken opens a service whose config names a variable of
// env and serves it with a token: /ready answers, a session call without
// the token is refused and with it is answered.
func TestServeBehindToken(t *testing.T) {
	svc := Open(t, `{"server": {"data_dir": "${DIR}"}}`, map[string]string{"DIR": t.TempDir()})
	url := Serve(t, svc, configs.Server{Addr: "127.0.0.1:0", AuthToken: "test-token-0123456789"})
	get := func(path, token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+path, strings.NewReader(`{"worker_id": "w"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/api/v1/session/list", ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code := get("/api/v1/session/list", "test-token-0123456789"); code != http.StatusOK {
		t.Errorf("with the token: %d, want 200", code)
	}
}

// TestOpenFailsOnUnsetVariable: a config naming a variable env lacks fails
// the test, naming the variable.
func TestOpenFailsOnUnsetVariable(t *testing.T) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Open(r, `{"server": {"data_dir": "${NO_SUCH_DIR}"}}`, nil)
	}()
	<-done
	if !strings.Contains(r.msg, "NO_SUCH_DIR") {
		t.Fatalf("failure %q does not name the variable", r.msg)
	}
}

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestPostReadsTheEnvelope: Post returns the status and envelope of an
// answer (a refused action), and fails the test on an answer that is not
// an envelope.
func TestPostReadsTheEnvelope(t *testing.T) {
	url := Serve(t, Open(t, `{}`, nil), configs.Server{Addr: "127.0.0.1:0"})
	status, env := Post(t, nil, url+"/api/v1/execute", map[string]any{"worker_id": "w", "action": "nosuch:tool"})
	if status < 400 || env.Code == 0 || env.Message == "" {
		t.Fatalf("unknown action = %d %+v, want a refusal", status, env)
	}
	text := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "not an envelope") }))
	defer text.Close()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Post(r, nil, text.URL+"/x", map[string]any{})
	}()
	<-done
	if !strings.Contains(r.msg, text.URL+"/x") || !strings.Contains(r.msg, "not an envelope") {
		t.Fatalf("failure %q does not name the URL and the body", r.msg)
	}
}
