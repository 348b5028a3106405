package qa

import (
	"strings"
	"testing"
)

// BenchmarkCheck runs every check, groundedness included, on the fixture
// path with each observation padded to about 800 characters (the part the
// prompt shows) and five reasoning steps.
func BenchmarkCheck(b *testing.B) {
	p := eiffel()
	for i := range p.Nodes {
		p.Nodes[i].Observation += " " + strings.Repeat("lorem ipsum dolor sit amet ", 26)
	}
	q := goodQA()
	q.ReasoningSteps = append(q.ReasoningSteps, q.ReasoningSteps[0], q.ReasoningSteps[1])
	opts := DefaultCheckOptions()
	b.ReportAllocs()
	for b.Loop() {
		if _, f := Check(q, p, opts); f != nil {
			b.Fatal(f)
		}
	}
}

// BenchmarkParse parses a fenced reply with three steps.
func BenchmarkParse(b *testing.B) {
	reply := "Here you go:\n```json\n" + pairJSON + "\n```\n"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(reply); err != nil {
			b.Fatal(err)
		}
	}
}
