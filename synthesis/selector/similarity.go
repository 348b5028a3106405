package selector

import (
	"hash/fnv"
	"unicode"

	"github.com/flockrun/flock/synthesis/trajectory"
)

// ShingleSize is the number of words in a shingle; see the package doc for
// why three.
const ShingleSize = 3

// shingleSet is a set of hashed shingles.
type shingleSet map[uint64]struct{}

// Similarity is the content similarity of two paths: the Jaccard index of
// their sets of word 3-shingles over the observations, in [0, 1]. Words are
// runs of letters and digits, lowercased; shingles never span two
// observations; an observation of one or two words is one shingle. Paths
// with no words at all have similarity 0. Shingles are compared by 64-bit
// FNV-1a hashes, so a collision could only make two paths look more alike.
func Similarity(a, b trajectory.Path) float64 {
	return jaccard(shinglesOf(a), shinglesOf(b))
}

func jaccard(a, b shingleSet) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	both := 0
	for h := range a {
		if _, ok := b[h]; ok {
			both++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}

func shinglesOf(p trajectory.Path) shingleSet {
	set := shingleSet{}
	for _, n := range p.Nodes {
		addShingles(set, words(n.Observation))
	}
	return set
}

func addShingles(set shingleSet, ws []string) {
	if len(ws) == 0 {
		return
	}
	k := min(ShingleSize, len(ws))
	for i := 0; i+k <= len(ws); i++ {
		h := fnv.New64a()
		for j, w := range ws[i : i+k] {
			if j > 0 {
				h.Write([]byte{0})
			}
			h.Write([]byte(w))
		}
		set[h.Sum64()] = struct{}{}
	}
}

// words splits s into maximal runs of letters and digits, lowercased.
func words(s string) []string {
	var (
		out []string
		cur []rune
	)
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			cur = append(cur, unicode.ToLower(r))
			continue
		}
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}
