package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the serving goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeDebugLog serves with --log-level debug and a token from the
// environment: the one logger the command builds logs the HTTP layer's
// request lines, and the token is in none of them.
func TestServeDebugLog(t *testing.T) {
	const token = "canary-cli-token-5e1f0a9d73c2"
	t.Setenv("FLOCK_AUTH_TOKEN", token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--log-level", "debug"}, &out, &errb)
	}()
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for base == "" {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s%s", code, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen: %s%s", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, auth := range []string{"Bearer " + token, "Bearer not-" + token, ""} {
		req, err := http.NewRequest(http.MethodGet, base+"/runs?after=x", nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	logs := errb.String()
	if !strings.Contains(logs, "level=DEBUG msg=\"http request\"") || !strings.Contains(logs, "status=401") {
		t.Fatalf("no debug request lines on stderr:\n%s", logs)
	}
	if strings.Contains(out.String()+logs, token) {
		t.Fatalf("the token reached the output:\n%s\n%s", out.String(), logs)
	}
}
