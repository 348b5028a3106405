package jetstream

import (
	"fmt"
	"testing"
)

// TestMarksFindTheStart: however many messages a log has, the marks stay
// bounded and the start they give for any position is at or before the
// message holding it and as close as the thinning allows for recent ones.
func TestMarksFindTheStart(t *testing.T) {
	// Message i (stream sequence 10*i) holds items 3i+1 .. 3i+3.
	var ms marks
	const msgs = 5000
	for i := range uint64(msgs) {
		ms.add(mark{First: 3*i + 1, Seq: 10 * i})
		if n := len(ms.Recent) + len(ms.Sparse); n > recentMarks+sparseMarks {
			t.Fatalf("%d marks after %d messages", n, i+1)
		}
	}
	for _, list := range [][]mark{ms.Recent, ms.Sparse} {
		for i := 1; i < len(list); i++ {
			if list[i].First <= list[i-1].First || list[i].Seq <= list[i-1].Seq {
				t.Fatalf("marks out of order at %d: %v", i, list[i-1:i+1])
			}
		}
	}
	tests := []struct {
		name     string
		after    uint64
		maxSkips uint64 // messages read before the one holding after+1
	}{
		{"start", 0, 0},
		{"tail", 3*msgs - 1, 0},
		{"one message back", 3*msgs - 4, 0},
		{"ten messages back", 3*msgs - 30, 1},
		{"middle", 3 * msgs / 2, msgs / 16},
		{"early", 100, 34},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := ms.startFor(tt.after)
			holder := tt.after / 3 * 10 // sequence of the message holding after+1
			if start > holder {
				t.Fatalf("start %d is past the message holding item %d (%d)", start, tt.after+1, holder)
			}
			if skips := (holder - start) / 10; skips > tt.maxSkips {
				t.Fatalf("start %d skips %d messages before item %d, want at most %d", start, skips, tt.after+1, tt.maxSkips)
			}
		})
	}
	if got := (&marks{}).startFor(7); got != 0 {
		t.Fatalf("no marks: start %d", got)
	}
	t.Log(fmt.Sprint(len(ms.Recent)+len(ms.Sparse), " marks (stride ", ms.Stride, " items) for ", msgs, " messages"))
}
