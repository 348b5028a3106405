package external_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/state"
)

// BenchmarkGatewayOverhead measures one chat completion through the
// gateway (HTTP in, the call journaled in the session run with its
// commits, HTTP out) against the same request sent to the fake endpoint
// directly; the difference is the gateway's overhead per call. Through
// the gateway each call is paired with the same call sent directly, and
// it reports the added p50 and p99 (the gateway's less the endpoint's),
// the gateway's own p50 and p99, and the store's commits and logical bytes
// written per call.
//
// "gateway" sends the same short prompt each time; "gateway-agent" sends
// what an agent sends: a conversation that grows by the previous reply
// and a new user message each call (a 1 KB system prompt, ~200-byte turns,
// restarted every 32 calls), so bytes per call show how the prompt is
// journaled.
func BenchmarkGatewayOverhead(b *testing.B) {
	_, srv := newFakeOpenAI(b)
	b.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-bench")
	short := func(i int) []byte {
		raw, _ := json.Marshal(map[string]any{"model": "fake", "messages": []any{
			map[string]any{"role": "system", "content": "You are a benchmark."},
			map[string]any{"role": "user", "content": "call " + string(rune('a'+i%26))}}})
		return raw
	}
	system := strings.Repeat("You are a careful agent. ", 40)
	agent := func(i int) []byte {
		turn := i % 32
		msgs := []any{map[string]any{"role": "system", "content": system}}
		for t := 0; t <= turn; t++ {
			user := fmt.Sprintf("step %d of episode %d: %s", t, i/32, strings.Repeat("observation ", 15))
			msgs = append(msgs, map[string]any{"role": "user", "content": user})
			if t < turn {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": "echo: " + user})
			}
		}
		raw, _ := json.Marshal(map[string]any{"model": "fake", "messages": msgs})
		return raw
	}
	// send makes one call and returns its latency.
	client := &http.Client{}
	send := func(b *testing.B, url, token string, body []byte) time.Duration {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return d
	}
	pct := func(lat []time.Duration, p int) time.Duration {
		slices.Sort(lat)
		return lat[(len(lat)-1)*p/100]
	}
	// run sends b.N calls to url; with a session (gw), each is paired with
	// the same call sent to the endpoint directly, and the added p50 and
	// p99 are the gateway's less the endpoint's, measured side by side.
	run := func(b *testing.B, body func(int) []byte, gw *session, stats func() state.Stats) {
		var direct, through []time.Duration
		var before state.Stats
		if stats != nil {
			before = stats()
		}
		i := 0
		for b.Loop() {
			raw := body(i)
			direct = append(direct, send(b, srv.URL+"/v1/chat/completions", "sk-bench", raw))
			if gw != nil {
				through = append(through, send(b, gw.url+"/chat/completions", gw.token, raw))
			}
			i++
		}
		if i == 0 {
			return
		}
		lat := direct
		if gw != nil {
			lat = through
			b.ReportMetric(float64((pct(through, 50) - pct(direct, 50)).Microseconds()), "added-p50-µs")
			b.ReportMetric(float64((pct(through, 99) - pct(direct, 99)).Microseconds()), "added-p99-µs")
		}
		b.ReportMetric(float64(pct(lat, 50).Microseconds()), "p50-µs")
		b.ReportMetric(float64(pct(lat, 99).Microseconds()), "p99-µs")
		if stats != nil {
			after := stats()
			b.ReportMetric(float64(after.Commits-before.Commits)/float64(i), "commits/call")
			b.ReportMetric(float64(after.Txs-before.Txs)/float64(i), "txs/call")
			b.ReportMetric(float64(after.Bytes-before.Bytes)/float64(i), "journal-B/call")
		}
	}
	through := func(b *testing.B, body func(int) []byte) {
		f := newFlock(b)
		s := openSession(b, f, map[string]any{"model": "fake",
			"models": map[string]any{"fake": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0}}})
		sr, ok := f.app.Store.(state.StatsReporter)
		if !ok {
			b.Fatalf("the store %T reports no stats", f.app.Store)
		}
		run(b, body, s, sr.Stats)
	}
	b.Run("direct", func(b *testing.B) { run(b, short, nil, nil) })
	b.Run("gateway", func(b *testing.B) { through(b, short) })
	b.Run("direct-agent", func(b *testing.B) { run(b, agent, nil, nil) })
	b.Run("gateway-agent", func(b *testing.B) { through(b, agent) })
}
