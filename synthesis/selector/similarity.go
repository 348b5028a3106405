package selector

import (
	"unicode"
	"unicode/utf8"

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
	var ws []uint64
	for _, n := range p.Nodes {
		ws = wordHashes(ws[:0], n.Observation)
		if len(ws) == 0 {
			continue
		}
		k := min(ShingleSize, len(ws))
		for i := 0; i+k <= len(ws); i++ {
			h := uint64(fnvOffset)
			for _, w := range ws[i : i+k] {
				// Mix each word's hash in as eight FNV-1a bytes, so the
				// shingle's hash depends on its words and their order.
				for b := 0; b < 64; b += 8 {
					h = (h ^ (w >> b & 0xff)) * fnvPrime
				}
			}
			set[h] = struct{}{}
		}
	}
	return set
}

// 64-bit FNV-1a.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// wordHashes appends to dst the FNV-1a hashes of the words of s: maximal
// runs of letters and digits, lowercased.
func wordHashes(dst []uint64, s string) []uint64 {
	h, in := uint64(fnvOffset), false
	var buf [utf8.UTFMax]byte
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if in {
				dst = append(dst, h)
				h, in = fnvOffset, false
			}
			continue
		}
		in = true
		n := utf8.EncodeRune(buf[:], unicode.ToLower(r))
		for _, c := range buf[:n] {
			h = (h ^ uint64(c)) * fnvPrime
		}
	}
	if in {
		dst = append(dst, h)
	}
	return dst
}
