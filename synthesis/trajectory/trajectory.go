// Package trajectory holds the data of AgentFlow-style synthesis that every
// part of it shares: seeds, the trajectory tree a sampler grows for a seed,
// the root-to-leaf paths a selector picks from it, and the QA pairs a
// synthesizer writes from a path. It is a leaf package (standard library
// only) so that the sampler, the selector and the synthesizer can each
// depend on it without depending on one another.
//
// Depth follows AgentFlow: the root holds the seed at depth 0 and has no
// action; each action node is one deeper than its parent. A path excludes
// the root and runs from depth 1 to a leaf.
package trajectory

import (
	"encoding/json"
)

// Seed is one line of the seeds file.
type Seed struct {
	// ID is the source id, "src_0007_1a2b3c4d" (index and content hash).
	ID      string         `json:"source_id"`
	Index   int            `json:"index"`
	Content string         `json:"content"`
	Kwargs  map[string]any `json:"kwargs,omitempty"`
}

// Node is one action of a tree, or its root.
type Node struct {
	// ID names the node by its place in the tree: "0" is the root, "0.1"
	// its second child, "0.1.0" that child's first child.
	ID       string   `json:"node_id"`
	ParentID string   `json:"parent_id,omitempty"`
	Children []string `json:"children_ids,omitempty"`
	Depth    int      `json:"depth"`
	// Intent is what the model said it wanted to learn or do.
	Intent string `json:"intent,omitempty"`
	// Tool and Params are the action taken ("rag:search", canonical JSON).
	Tool   string          `json:"tool,omitempty"`
	Params json.RawMessage `json:"parameters,omitempty"`
	// Observation is the tool result as text; a failed call's error text
	// when Failed is set.
	Observation string `json:"observation,omitempty"`
	Failed      bool   `json:"failed,omitempty"`
	// Ended, when set on a node, says why the sampler grew no child
	// below it although depth allowed one ("duplicate", "model_error").
	Ended string `json:"ended,omitempty"`
}

// Tree is the whole trajectory tree of one seed, nodes in the order they
// were created (the root first).
type Tree struct {
	Seed  Seed   `json:"seed"`
	Nodes []Node `json:"nodes"`
}

// Node returns the node with the given id, or nil.
func (t *Tree) Node(id string) *Node {
	for i := range t.Nodes {
		if t.Nodes[i].ID == id {
			return &t.Nodes[i]
		}
	}
	return nil
}

// Path is one root-to-leaf path of a tree, root excluded.
type Path struct {
	// ID is "<source_id>_traj_<i>".
	ID       string `json:"trajectory_id"`
	SourceID string `json:"source_id"`
	Nodes    []Node `json:"nodes"`
}

// Leaf returns the last node of the path.
func (p Path) Leaf() Node { return p.Nodes[len(p.Nodes)-1] }

// Hop is one reasoning step of a QA pair.
type Hop struct {
	Hop      int    `json:"hop"`
	Fact     string `json:"fact"`
	Evidence string `json:"evidence"`
	Output   string `json:"output"`
}

// QA is what the synthesizer writes from a path.
type QA struct {
	Question       string `json:"question"`
	Answer         string `json:"answer"`
	ReasoningSteps []Hop  `json:"reasoning_steps"`
}
