// Package selector picks the root-to-leaf paths of a trajectory tree that
// are worth synthesising questions from. It is a pure package: Select is a
// deterministic function of the tree and the options (no clock, randomness
// or map order), so a resumed run selects exactly what the first one did.
//
// # Candidates
//
// A candidate is a root-to-leaf path, root excluded, whose length (the
// depth of its leaf) is at least MinDepth and which has at least one call
// that succeeded with a non-blank observation: a path of failed or empty
// calls offers nothing to ground a question in, and would only spend the
// synthesizer's attempts. A leaf is a node that no other
// node of the tree names as its parent or lists as a child. Candidates are
// numbered in tree order (node ids compared component by component, so
// "0.2" before "0.10"), whatever order the nodes were created in, and the
// i-th is given the trajectory id "<source_id>_traj_<i>". The id does not
// depend on which other paths get picked.
//
// # Score
//
// Each candidate gets three parts in [0, 1] and a weighted sum of them
// (AgentFlow's weights 40/30/30 by default):
//
//   - Depth: len(path) / MaxDepth, capped at 1. MaxDepth is the sampler's
//     max_depth; AgentFlow divides by a hard-coded 5 instead.
//   - Richness: the mean observation length of the path in runes, with
//     whitespace runs counted as one rune and a failed call's error text
//     counted as 0 (an error is not information), min-max normalised
//     across this tree's candidates: the richest gets 1, the poorest 0,
//     and when all are equal every candidate gets 0 (as AgentFlow).
//   - Diversity: the distinct tools that succeeded on the path divided by
//     the number of distinct concrete tools offered (Options.Tools, with
//     wildcards already expanded by the caller), capped at 1. AgentFlow
//     divides by the count of configured patterns, so "rag:*" counted as
//     one tool. With no tools given, the divisor is the number of distinct
//     tools that succeeded anywhere in the candidates.
//
// # Dedup
//
// Candidates are taken greedily by score (ties by candidate number); one
// whose Similarity to any already-picked path exceeds SimilarityThreshold
// is skipped, until MaxSelected are picked. The threshold is taken as
// given, as AgentFlow takes it: 0 skips any overlap and 1 turns dedup off;
// the caller applies DefaultSimilarityThreshold (0.7) when the setting is
// absent. Explain returns the same
// picks with every skipped candidate and its reason ("duplicate", with the
// picked path it repeats and the similarity, or "limit").
//
// Similarity is the Jaccard index of the two paths' sets of word 3-shingles
// over their observations, computed exactly (the sets are small: a tree
// has tens of nodes, so MinHash's approximation buys nothing). Words are
// maximal runs of letters and digits, lowercased, so case, punctuation and
// layout (JSON vs plain text of the same rows) do not matter. Shingles are
// taken within one observation and never span two. Three words is short
// enough that the brief observations of tools such as text2sql (a count, a
// few rows) still yield several shingles, and long enough that two
// observations sharing only common words ("the number of") do not look
// alike; an observation of fewer than three words is one shingle. Sibling
// paths share their prefix nodes, so two siblings whose last observations
// are nearly the same collapse, while siblings that learned different
// things survive. AgentFlow compared node-id sets instead, which measures
// only the shared prefix. Two paths with no words at all have similarity 0:
// nothing shows they repeat each other.
package selector
