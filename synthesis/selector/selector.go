package selector

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/flockrun/flock/synthesis/trajectory"
)

// Defaults.
const (
	// DefaultSimilarityThreshold is AgentFlow's path_similarity_threshold,
	// for callers to apply when the setting is absent (Select takes the
	// threshold as given).
	DefaultSimilarityThreshold = 0.7
	// DefaultMinDepth is the least path length Select takes when MinDepth
	// is zero.
	DefaultMinDepth = 1
)

// DefaultWeights are AgentFlow's: 40 depth, 30 richness, 30 diversity.
var DefaultWeights = Weights{Depth: 40, Richness: 30, Diversity: 30}

// Weights weigh the three parts of a score. The zero value means
// DefaultWeights; any other value is used as given, so Weights{Depth: 1}
// ranks by depth alone.
type Weights struct {
	Depth     float64 `json:"depth"`
	Richness  float64 `json:"richness"`
	Diversity float64 `json:"diversity"`
}

// Options are the selector's settings, AgentFlow's synthesis config keys.
type Options struct {
	// MinDepth is min_depth: shorter paths are not candidates. Zero or less
	// means DefaultMinDepth.
	MinDepth int `json:"min_depth"`
	// MaxDepth is the sampler's max_depth, the depth that scores 1. Zero or
	// less means the longest candidate's length.
	MaxDepth int `json:"max_depth"`
	// MaxSelected is max_selected_traj. Zero or less selects every candidate
	// that survives dedup.
	MaxSelected int `json:"max_selected_traj"`
	// SimilarityThreshold is path_similarity_threshold: a candidate whose
	// Similarity to a picked path is above it is skipped. It is used as
	// given, as AgentFlow does: 0 skips any path that shares a shingle with
	// a picked one, 1 or more turns dedup off. Callers apply
	// DefaultSimilarityThreshold when the setting is absent.
	SimilarityThreshold float64 `json:"path_similarity_threshold"`
	// Tools are the concrete tools offered to the sampler, wildcards
	// expanded ("rag:search", not "rag:*"); duplicates count once.
	Tools []string `json:"tools"`
	// Weights weigh the score's parts; the zero value means DefaultWeights.
	Weights Weights `json:"weights"`
}

// Validate reports an option that Select would otherwise have to guess
// about: a negative or non-finite weight, a negative or NaN threshold, MinDepth above MaxDepth, or a wildcard in
// Tools. The error wraps ErrInvalidOptions and names the option.
func (o Options) Validate() error {
	for _, w := range []struct {
		name string
		v    float64
	}{{"weights.depth", o.Weights.Depth}, {"weights.richness", o.Weights.Richness}, {"weights.diversity", o.Weights.Diversity}} {
		if w.v < 0 || math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			return fmt.Errorf("%w: %s is %v, want a finite number >= 0", ErrInvalidOptions, w.name, w.v)
		}
	}
	if o.SimilarityThreshold < 0 || math.IsNaN(o.SimilarityThreshold) {
		return fmt.Errorf("%w: path_similarity_threshold is %v, want a number >= 0", ErrInvalidOptions, o.SimilarityThreshold)
	}
	if o.MaxDepth > 0 && o.MinDepth > o.MaxDepth {
		return fmt.Errorf("%w: min_depth %d is above max_depth %d", ErrInvalidOptions, o.MinDepth, o.MaxDepth)
	}
	for i, t := range o.Tools {
		if t == "" || strings.Contains(t, "*") {
			return fmt.Errorf("%w: tools[%d] is %q, want a concrete tool name (expand wildcards first)", ErrInvalidOptions, i, t)
		}
	}
	return nil
}

// Scored is a candidate path with its score. Depth, Richness and Diversity
// are the parts in [0, 1]; Score is their weighted sum.
type Scored struct {
	Path      trajectory.Path `json:"path"`
	Score     float64         `json:"score"`
	Depth     float64         `json:"depth"`
	Richness  float64         `json:"richness"`
	Diversity float64         `json:"diversity"`
}

// Skip reasons.
const (
	// SkipDuplicate: the candidate is too similar to a path already picked.
	SkipDuplicate = "duplicate"
	// SkipLimit: MaxSelected paths were picked before its turn.
	SkipLimit = "limit"
)

// Skipped is a candidate Select did not pick, and why.
type Skipped struct {
	Scored
	// Reason is SkipDuplicate or SkipLimit.
	Reason string `json:"reason"`
	// DuplicateOf and Similarity name, for a duplicate, the first picked
	// path it was too similar to and how similar.
	DuplicateOf string  `json:"duplicate_of,omitempty"`
	Similarity  float64 `json:"similarity,omitempty"`
}

// Selection is every candidate's fate: the picked paths best first, and
// the others in rank order with the reason.
type Selection struct {
	Picked  []Scored  `json:"picked"`
	Skipped []Skipped `json:"skipped"`
}

// Select returns the paths of tree picked for synthesis, best first: the
// candidates ranked by Candidates, taken greedily, skipping one whose
// Similarity to a path already picked is above the threshold, until
// MaxSelected are picked. It never fails: a tree without candidates
// selects nothing, and a node whose parent chain does not reach the root
// is not on any path.
func Select(tree trajectory.Tree, opts Options) []Scored {
	return Explain(tree, opts).Picked
}

// Explain is Select with the candidates it did not pick and why, for
// reports and tests.
func Explain(tree trajectory.Tree, opts Options) Selection {
	ranked := Candidates(tree, opts)
	threshold := opts.SimilarityThreshold
	var (
		sel      Selection
		shingles []shingleSet
	)
candidates:
	for _, c := range ranked {
		if opts.MaxSelected > 0 && len(sel.Picked) >= opts.MaxSelected {
			sel.Skipped = append(sel.Skipped, Skipped{Scored: c, Reason: SkipLimit})
			continue
		}
		s := shinglesOf(c.Path)
		if threshold < 1 {
			for i, p := range shingles {
				if sim := jaccard(s, p); sim > threshold {
					sel.Skipped = append(sel.Skipped, Skipped{Scored: c, Reason: SkipDuplicate, DuplicateOf: sel.Picked[i].Path.ID, Similarity: sim})
					continue candidates
				}
			}
		}
		sel.Picked = append(sel.Picked, c)
		shingles = append(shingles, s)
	}
	return sel
}

// Candidates returns every candidate path of tree scored, best first; ties
// keep candidate order. It is Select without dedup and without the
// MaxSelected cap, for inspection and reports.
func Candidates(tree trajectory.Tree, opts Options) []Scored {
	paths := candidatePaths(tree, opts.MinDepth)
	if len(paths) == 0 {
		return nil
	}
	w := opts.Weights
	if w == (Weights{}) {
		w = DefaultWeights
	}
	maxDepth := opts.MaxDepth
	if maxDepth <= 0 {
		for _, p := range paths {
			maxDepth = max(maxDepth, len(p.Nodes))
		}
	}
	offered := distinct(opts.Tools)
	if offered == 0 {
		used := map[string]bool{}
		for _, p := range paths {
			for _, n := range p.Nodes {
				if !n.Failed && n.Tool != "" {
					used[n.Tool] = true
				}
			}
		}
		offered = len(used)
	}

	out := make([]Scored, len(paths))
	rich := make([]float64, len(paths))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, p := range paths {
		rich[i] = meanObservation(p)
		lo, hi = min(lo, rich[i]), max(hi, rich[i])
		out[i] = Scored{
			Path:      p,
			Depth:     min(float64(len(p.Nodes))/float64(maxDepth), 1),
			Diversity: diversity(p, offered),
		}
	}
	for i := range out {
		if hi > lo {
			out[i].Richness = (rich[i] - lo) / (hi - lo)
		}
		out[i].Score = w.Depth*out[i].Depth + w.Richness*out[i].Richness + w.Diversity*out[i].Diversity
	}
	slices.SortStableFunc(out, func(a, b Scored) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out
}

// candidatePaths returns the root-to-leaf paths of tree, root excluded, at
// least minDepth long and with an informative node, in tree order, each
// with its trajectory id.
func candidatePaths(tree trajectory.Tree, minDepth int) []trajectory.Path {
	if minDepth <= 0 {
		minDepth = DefaultMinDepth
	}
	byID := make(map[string]int, len(tree.Nodes))
	for i, n := range tree.Nodes {
		if _, dup := byID[n.ID]; !dup {
			byID[n.ID] = i
		}
	}
	inner := make(map[string]bool, len(tree.Nodes))
	for _, n := range tree.Nodes {
		if n.ParentID != "" {
			inner[n.ParentID] = true
		}
		for _, c := range n.Children {
			if _, ok := byID[c]; ok {
				inner[n.ID] = true
			}
		}
	}
	var leaves []int
	for id, i := range byID {
		if !inner[id] {
			leaves = append(leaves, i)
		}
	}
	slices.SortFunc(leaves, func(a, b int) int { return compareIDs(tree.Nodes[a].ID, tree.Nodes[b].ID) })

	var paths []trajectory.Path
	for _, leaf := range leaves {
		nodes, ok := chain(tree, byID, leaf)
		if !ok || len(nodes) < minDepth || !slices.ContainsFunc(nodes, informative) {
			continue
		}
		paths = append(paths, trajectory.Path{
			ID:       fmt.Sprintf("%s_traj_%d", tree.Seed.ID, len(paths)),
			SourceID: tree.Seed.ID,
			Nodes:    nodes,
		})
	}
	return paths
}

// informative reports whether n is a call that succeeded with a non-blank
// observation, something a question can be grounded in.
func informative(n trajectory.Node) bool {
	return !n.Failed && strings.TrimSpace(n.Observation) != ""
}

// chain walks from the leaf up to the root and returns the nodes below the
// root, root first. ok is false when the chain breaks (a missing parent) or
// loops.
func chain(tree trajectory.Tree, byID map[string]int, leaf int) (nodes []trajectory.Node, ok bool) {
	for i, steps := leaf, 0; ; steps++ {
		if steps > len(tree.Nodes) {
			return nil, false
		}
		n := tree.Nodes[i]
		if n.ParentID == "" {
			// n is the root; a root alone is no path.
			slices.Reverse(nodes)
			return nodes, true
		}
		nodes = append(nodes, n)
		p, found := byID[n.ParentID]
		if !found {
			return nil, false
		}
		i = p
	}
}

// compareIDs orders node ids component by component, numerically where both
// components are numbers ("0.2" < "0.10"), and a prefix first.
func compareIDs(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		var c int
		if errX == nil && errY == nil {
			c = x - y
		} else {
			c = strings.Compare(as[i], bs[i])
		}
		if c != 0 {
			return c
		}
	}
	return len(as) - len(bs)
}

// meanObservation is the mean observation length of p in runes, whitespace
// runs counting one and failed calls counting 0.
func meanObservation(p trajectory.Path) float64 {
	total := 0
	for _, n := range p.Nodes {
		if !n.Failed {
			total += compactLen(n.Observation)
		}
	}
	return float64(total) / float64(len(p.Nodes))
}

// compactLen is the rune count of s with leading and trailing whitespace
// dropped and each inner whitespace run counted as one rune.
func compactLen(s string) int {
	n, space := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = n > 0
			continue
		}
		if space {
			n++
			space = false
		}
		n++
	}
	return n
}

// diversity is the share of offered tools that succeeded on p, capped at 1.
func diversity(p trajectory.Path, offered int) float64 {
	if offered == 0 {
		return 0
	}
	var tools []string
	for _, n := range p.Nodes {
		if !n.Failed && n.Tool != "" {
			tools = append(tools, n.Tool)
		}
	}
	return min(float64(distinct(tools))/float64(offered), 1)
}

func distinct(xs []string) int {
	seen := make(map[string]bool, len(xs))
	for _, x := range xs {
		if x != "" {
			seen[x] = true
		}
	}
	return len(seen)
}
