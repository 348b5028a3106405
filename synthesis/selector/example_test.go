package selector_test

import (
	"fmt"

	"github.com/flockrun/flock/synthesis/selector"
	"github.com/flockrun/flock/synthesis/trajectory"
)

func ExampleSelect() {
	tree := trajectory.Tree{
		Seed: trajectory.Seed{ID: "src_0000_1a2b3c4d", Content: "Eiffel Tower"},
		Nodes: []trajectory.Node{
			{ID: "0", Children: []string{"0.0", "0.1"}},
			{ID: "0.0", ParentID: "0", Depth: 1, Tool: "rag:search", Observation: "The Eiffel Tower is in Paris."},
			{ID: "0.1", ParentID: "0", Depth: 1, Tool: "text2sql:execute", Observation: "height_m: 330"},
		},
	}
	for _, s := range selector.Select(tree, selector.Options{MaxDepth: 2, SimilarityThreshold: selector.DefaultSimilarityThreshold, Tools: []string{"rag:search", "text2sql:execute"}}) {
		fmt.Printf("%s %.1f (depth %.2f richness %.2f diversity %.2f)\n", s.Path.ID, s.Score, s.Depth, s.Richness, s.Diversity)
	}
	// Output:
	// src_0000_1a2b3c4d_traj_0 65.0 (depth 0.50 richness 1.00 diversity 0.50)
	// src_0000_1a2b3c4d_traj_1 35.0 (depth 0.50 richness 0.00 diversity 0.50)
}
