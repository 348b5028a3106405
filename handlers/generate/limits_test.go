package generate

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// lastContent is the content of the last message of a request body.
func lastContent(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	m, _ := msgs[len(msgs)-1].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

// runGenerates starts n concurrent generates of model "m" per run, each
// run with its own settings, and returns the error results.
func runGenerates(h *Handler, runs map[string]*configs.RunSettings, n int) []string {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for id, s := range runs {
		for range n {
			wg.Go(func() {
				env := handlers.Env{RunID: id, Settings: s}
				r := h.Handle(context.Background(), env, genReq(operations.GenerateRequest{Model: "m", Messages: userMsg(id)}))
				if r.Error != "" {
					mu.Lock()
					errs = append(errs, id+": "+r.Error)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errs
}

// TestServerLimitHoldsAcrossRuns: the operator's max_concurrency holds
// whatever the runs declare (a run asking for more, one asking for nothing,
// one asking for the same). Before the fix, each run's settings replaced
// the shared limiter and 8 requests were in flight instead of 2.
func TestServerLimitHoldsAcrossRuns(t *testing.T) {
	for _, keyBy := range []string{"model name", "base_url"} {
		t.Run(keyBy, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, _ int, _ map[string]any) {
				time.Sleep(30 * time.Millisecond)
				writeJSON(w, 200, textCompletion("ok"))
			})
			key := "test-model"
			if keyBy == "base_url" {
				key = fs.URL + "/v1/"
			}
			h, _ := newTestHandlerWith(t, map[string]string{"OPENAI_API_KEY": testKey}, func(o *Options) {
				o.ModelLimits = map[string]configs.ModelLimits{key: {MaxConcurrency: 2}}
			})
			runs := map[string]*configs.RunSettings{
				"capped":   liveSettings(fs, func(m *configs.Model) { m.MaxConcurrency = 2 }),
				"uncapped": liveSettings(fs, nil),
				"asks-5":   liveSettings(fs, func(m *configs.Model) { m.MaxConcurrency = 5 }),
			}
			if errs := runGenerates(h, runs, 4); len(errs) > 0 {
				t.Fatal(errs)
			}
			fs.mu.Lock()
			peak := fs.maxIn
			fs.mu.Unlock()
			if peak != 2 || fs.requests() != 12 {
				t.Fatalf("peak in flight = %d (want 2, the server's cap), requests = %d", peak, fs.requests())
			}
		})
	}
}

// TestRunCapIsItsOwn: a run's tighter max_concurrency holds for its own
// calls and does not slow another run's.
func TestRunCapIsItsOwn(t *testing.T) {
	var (
		mu     sync.Mutex
		in     = map[string]int{}
		peak   = map[string]int{}
		allIn  = make(chan struct{})
		closed bool
	)
	fs := newFakeServer(t, func(w http.ResponseWriter, _ int, body map[string]any) {
		run := lastContent(body)
		mu.Lock()
		in[run]++
		peak[run] = max(peak[run], in[run])
		if run == "free" && in[run] == 3 && !closed {
			closed = true
			close(allIn)
		}
		mu.Unlock()
		if run == "free" {
			// Hold until the free run's three calls are all in flight
			// at once; the timeout only ends a failing test.
			select {
			case <-allIn:
			case <-time.After(5 * time.Second):
			}
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		in[run]--
		mu.Unlock()
		writeJSON(w, 200, textCompletion("ok"))
	})
	h, _ := newTestHandlerWith(t, map[string]string{"OPENAI_API_KEY": testKey}, func(o *Options) {
		o.ModelLimits = map[string]configs.ModelLimits{"test-model": {MaxConcurrency: 4}}
	})
	runs := map[string]*configs.RunSettings{
		"tight": liveSettings(fs, func(m *configs.Model) { m.MaxConcurrency = 1 }),
		"free":  liveSettings(fs, nil),
	}
	start := time.Now()
	if errs := runGenerates(h, runs, 3); len(errs) > 0 {
		t.Fatal(errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if peak["tight"] != 1 || peak["free"] != 3 {
		t.Fatalf("peaks = %v, want tight 1 (its own cap) and free 3 (not slowed)", peak)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("took %s: the free run was held", d)
	}
	h.CloseRun(context.Background(), "tight")
	h.CloseRun(context.Background(), "free")
	h.mu.Lock()
	left := len(h.runLimiters)
	h.mu.Unlock()
	if left != 0 {
		t.Fatalf("run limiters after CloseRun: %d", left)
	}
}

// TestServerLimitKeys: how an operator's key matches a model.
func TestServerLimitKeys(t *testing.T) {
	limits := map[string]configs.ModelLimits{
		"gpt-4o-mini":             {MaxConcurrency: 2},
		"http://vllm:8000/v1/":    {MaxConcurrency: 8},
		"http://both:1/v1":        {MaxConcurrency: 3},
		"llama":                   {RequestsPerMinute: 60},
		"http://unlimited:1/v1":   {},
		"alias-chosen-by-the-run": {MaxConcurrency: 1},
	}
	tests := []struct {
		name     string
		decl     configs.Model
		key      string
		wantWhat []string // the limiters' origins, the run's first
		wantConc []int
	}{
		{name: "endpoint name, whatever the run calls it", key: "mini", decl: configs.Model{Name: "gpt-4o-mini", BaseURL: "https://api.openai.com/v1"},
			wantWhat: []string{"the server's models.gpt-4o-mini"}, wantConc: []int{2}},
		{name: "base_url, trailing slash ignored", key: "qwen", decl: configs.Model{BaseURL: "http://vllm:8000/v1"},
			wantWhat: []string{`the server's models["http://vllm:8000/v1/"]`}, wantConc: []int{8}},
		{name: "model name before base_url", key: "llama", decl: configs.Model{BaseURL: "http://both:1/v1"},
			wantWhat: []string{"the server's models.llama"}, wantConc: []int{0}},
		{name: "the run's alias is not the model", key: "alias-chosen-by-the-run", decl: configs.Model{Name: "other", BaseURL: "http://x:1/v1"}},
		{name: "a zero entry limits nothing", key: "u", decl: configs.Model{BaseURL: "http://unlimited:1/v1"}},
		{name: "run cap nested inside the server's", key: "mini", decl: configs.Model{Name: "gpt-4o-mini", MaxConcurrency: 1},
			wantWhat: []string{"models.mini", "the server's models.gpt-4o-mini"}, wantConc: []int{1, 2}},
	}
	h, _ := newTestHandlerWith(t, map[string]string{"OPENAI_API_KEY": testKey}, func(o *Options) { o.ModelLimits = limits })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &configs.RunSettings{Models: map[string]configs.Model{tt.key: tt.decl}}
			s.ApplyDefaults()
			m, err := h.resolve(s, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			var what []string
			var conc []int
			for _, l := range h.limiters("run", m) {
				what = append(what, l.what)
				conc = append(conc, l.maxConc)
			}
			if strings.Join(what, "|") != strings.Join(tt.wantWhat, "|") || len(conc) != len(tt.wantConc) {
				t.Fatalf("limiters = %q %v, want %q %v", what, conc, tt.wantWhat, tt.wantConc)
			}
			for i := range conc {
				if conc[i] != tt.wantConc[i] {
					t.Fatalf("max_concurrency = %v, want %v", conc, tt.wantConc)
				}
			}
		})
	}
}
