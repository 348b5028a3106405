package external_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"testing"
	"time"
)

// BenchmarkGatewayOverhead measures one chat completion through the
// gateway (HTTP in, a journaled generate op of the session run with its
// commits, HTTP out) against the same request sent to the fake endpoint
// directly; the difference is the gateway's overhead per call. It reports
// p50 and p99 latencies besides ns/op.
func BenchmarkGatewayOverhead(b *testing.B) {
	_, srv := newFakeOpenAI(b)
	b.Setenv("FLOCK_TEST_PROVIDER_KEY", "sk-bench")
	body := func(i int) []byte {
		raw, _ := json.Marshal(map[string]any{"model": "fake", "messages": []any{
			map[string]any{"role": "system", "content": "You are a benchmark."},
			map[string]any{"role": "user", "content": "call " + string(rune('a'+i%26))}}})
		return raw
	}
	run := func(b *testing.B, url, token string) {
		client := &http.Client{}
		lat := make([]time.Duration, 0, b.N)
		i := 0
		for b.Loop() {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body(i)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(start))
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
			i++
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, srv.URL+"/v1/chat/completions", "sk-bench") })
	b.Run("gateway", func(b *testing.B) {
		f := newFlock(b)
		s := openSession(b, f, map[string]any{"model": "fake",
			"models": map[string]any{"fake": map[string]any{"base_url": srv.URL + "/v1", "api_key_env": "FLOCK_TEST_PROVIDER_KEY", "max_retries": 0}}})
		run(b, s.url+"/chat/completions", s.token)
	})
}
