package selector

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flockrun/flock/synthesis/trajectory"
)

// defaultTree is a tree of AgentFlow's default shape (max_depth 5,
// branching 2 below depth_threshold 3: 2+4+8+8+8 = 30 action nodes, 8
// leaves), each observation about 600 characters of distinct words.
func defaultTree() trajectory.Tree {
	t := trajectory.Tree{Seed: trajectory.Seed{ID: src}, Nodes: []trajectory.Node{{ID: "0"}}}
	tools := []string{"rag:search", "text2sql:execute", "text2sql:list_tables", "doc:read"}
	var grow func(parent string, depth int)
	k := 0
	grow = func(parent string, depth int) {
		if depth == 5 {
			return
		}
		n := 1
		if depth < 3 {
			n = 2
		}
		for i := range n {
			id := fmt.Sprintf("%s.%d", parent, i)
			var b strings.Builder
			for w := 0; b.Len() < 600; w++ {
				fmt.Fprintf(&b, "word%d_%d ", k, w%37)
			}
			k++
			t.Nodes = append(t.Nodes, trajectory.Node{ID: id, ParentID: parent, Depth: depth + 1, Tool: tools[k%len(tools)], Observation: b.String()})
			grow(id, depth+1)
		}
	}
	grow("0", 0)
	return t
}

func BenchmarkSelect30Nodes(b *testing.B) {
	tr := defaultTree()
	if len(tr.Nodes) != 31 {
		b.Fatalf("tree has %d nodes, want 31", len(tr.Nodes))
	}
	opts := Options{MinDepth: 3, MaxDepth: 5, MaxSelected: 3, SimilarityThreshold: af, Tools: offered}
	b.ReportAllocs()
	for b.Loop() {
		if got := Select(tr, opts); len(got) != 3 {
			b.Fatalf("selected %d", len(got))
		}
	}
}
