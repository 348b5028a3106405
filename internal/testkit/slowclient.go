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
