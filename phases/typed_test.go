package phases_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/flockrun/flock/phases"
)

type testSettings struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

var errNoName = errors.New("name is required")

// counting returns a parse function that counts its calls.
func counting(n *int) func(json.RawMessage) (testSettings, error) {
	return func(doc json.RawMessage) (testSettings, error) {
		*n++
		var s testSettings
		if err := json.Unmarshal(doc, &s); err != nil {
			return s, err
		}
		if s.Name == "" {
			return s, errNoName
		}
		return s, nil
	}
}

func TestTypedParsesOncePerDocument(t *testing.T) {
	var parses int
	typed := phases.NewTyped(counting(&parses))
	phase := typed.Phase(func(in phases.Input, s *testSettings) (phases.Output, error) {
		out := phases.Output{Next: s.Name}
		s.Name = "changed by the phase" // must not reach the next call
		return out, nil
	})
	call := func(doc string) string {
		t.Helper()
		// A fresh slice each time: the cache keys on the bytes, not the slice.
		out, err := phase(phases.Input{Run: phases.RunInfo{Settings: json.RawMessage(doc)}})
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		return out.Next
	}
	for i := 0; i < 3; i++ {
		if got := call(`{"name":"a"}`); got != "a" {
			t.Fatalf("call %d: %q, want a", i, got)
		}
	}
	if parses != 1 {
		t.Fatalf("parsed %d times, want once", parses)
	}
	if got := call(`{"name":"b"}`); got != "b" || parses != 2 {
		t.Fatalf("second document: %q after %d parses", got, parses)
	}
	if got := call(`{"name": "a"}`); got != "a" || parses != 3 {
		t.Fatalf("a document differing in a space is parsed on its own: %q after %d parses", got, parses)
	}
}

func TestTypedErrorsAreNotCached(t *testing.T) {
	var parses int
	typed := phases.NewTyped(counting(&parses))
	phase := typed.Phase(func(phases.Input, *testSettings) (phases.Output, error) {
		t.Fatal("phase called with bad settings")
		return phases.Output{}, nil
	})
	for i := 1; i <= 2; i++ {
		_, err := phase(phases.Input{Run: phases.RunInfo{Settings: json.RawMessage(`{}`)}})
		if !errors.Is(err, errNoName) || parses != i {
			t.Fatalf("call %d: err %v after %d parses", i, err, parses)
		}
	}
}

func TestTypedCacheIsBounded(t *testing.T) {
	var parses int
	typed := phases.NewTyped(counting(&parses))
	doc := func(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"name":"n%d"}`, i)) }
	const n = 300 // more than the cache holds
	for i := 0; i < n; i++ {
		if s, err := typed.Settings(doc(i)); err != nil || s.Name != fmt.Sprintf("n%d", i) {
			t.Fatalf("doc %d: %+v %v", i, s, err)
		}
	}
	if _, err := typed.Settings(doc(n - 1)); err != nil || parses != n {
		t.Fatalf("the newest document was parsed again (%d parses)", parses)
	}
	if _, err := typed.Settings(doc(0)); err != nil || parses != n+1 {
		t.Fatalf("the oldest document is still cached (%d parses)", parses)
	}
}

func TestTypedConcurrent(t *testing.T) {
	var mu sync.Mutex
	parses := 0
	typed := phases.NewTyped(func(doc json.RawMessage) (testSettings, error) {
		mu.Lock()
		parses++
		mu.Unlock()
		var s testSettings
		return s, json.Unmarshal(doc, &s)
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				name := fmt.Sprintf("n%d", i%10)
				s, err := typed.Settings(json.RawMessage(`{"name":"` + name + `","tags":["x"]}`))
				if err != nil || s.Name != name || len(s.Tags) != 1 {
					errs <- fmt.Errorf("%s: %+v %v", name, s, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
