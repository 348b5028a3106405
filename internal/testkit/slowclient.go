package testkit

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// Trickle is a slow HTTP client, the attacker of a listener's read
// timeouts: it connects to addr (host:port), writes head at once, then
// one byte every 50 ms (the attack's pace, not a synchronisation) until
// the server closes the connection or DefaultTimeout passes. closed
// reports whether the server closed it; answer is what the server wrote.
func Trickle(tb testing.TB, addr, head string) (closed bool, answer string) {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writer := make(chan struct{})
	go func() { // owned: Trickle waits for it before returning
		defer close(writer)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(DefaultTimeout))
	b, err := io.ReadAll(c)
	cancel()
	<-writer
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	return !timedOut, string(b)
}

// SlowRequest is the head of a request to trickle (Trickle).
type SlowRequest struct {
	Name, Head string
}

// SlowRequests are the requests of the slow-client attack on a listener
// of flock's (issue 23.5): a trickled header, a trickled body on the
// public /health (large, and small enough that net/http reads what the
// handler left), bodies on routes that need the token sent without it,
// and a chunked body sent with token that a handler reads.
func SlowRequests(token string) []SlowRequest {
	return []SlowRequest{
		{"header", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "},
		{"body of /health", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n"},
		// Under 256 KiB, net/http reads what the handler left of the
		// body, to keep the connection: that read is what was held.
		{"small body of /health", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n"},
		{"small body without a token", "POST /runs/x/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{"},
		{"body without a token", "POST /api/v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"},
		{"chunked body read by the handler", "POST /api/v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer " + token + "\r\nTransfer-Encoding: chunked\r\n\r\n10000000\r\n"},
	}
}

// CheckCutOff trickles each of SlowRequests(token) to the listener at
// addr (host:port) and fails tb, going on with the others, for each whose
// connection the listener did not close; it logs what the listener
// answered before closing.
func CheckCutOff(tb testing.TB, addr, token string) {
	tb.Helper()
	for _, c := range SlowRequests(token) {
		closed, answer := Trickle(tb, addr, c.Head)
		if !closed {
			tb.Errorf("trickled %s: the connection is still open after %v", c.Name, DefaultTimeout)
		}
		tb.Logf("%s: %.60q", c.Name, answer)
	}
}
