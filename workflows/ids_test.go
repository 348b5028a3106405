package workflows

import (
	"testing"
	"time"
)

func TestNewRunIDOrdered(t *testing.T) {
	now := time.Now()
	prev := NewRunID(now)
	for i := 0; i < 5000; i++ {
		id := NewRunID(now) // the same millisecond every time
		if id <= prev || len(id) != 16 || !validRunID(id) {
			t.Fatalf("id %q after %q", id, prev)
		}
		prev = id
	}
	if later := NewRunID(now.Add(time.Second)); later <= prev {
		t.Fatalf("a later id %q sorts before %q", later, prev)
	}
}
