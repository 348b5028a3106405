package selector

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flockrun/flock/synthesis/trajectory"
)

const src = "src_0000_abcd1234"

// tree builds a tree from nodes given as "id|tool|observation"; a tool
// written "!tool" is a failed call. Parent, depth and children follow from
// the ids; the root "0" is added first.
func tree(specs ...string) trajectory.Tree {
	t := trajectory.Tree{
		Seed:  trajectory.Seed{ID: src, Content: "Eiffel Tower"},
		Nodes: []trajectory.Node{{ID: "0", Observation: "Starting point: Eiffel Tower"}},
	}
	for _, s := range specs {
		f := strings.SplitN(s, "|", 3)
		n := trajectory.Node{ID: f[0], Tool: f[1], Observation: f[2]}
		if strings.HasPrefix(n.Tool, "!") {
			n.Tool, n.Failed = n.Tool[1:], true
		}
		n.ParentID = f[0][:strings.LastIndexByte(f[0], '.')]
		n.Depth = strings.Count(f[0], ".")
		t.Nodes = append(t.Nodes, n)
	}
	for i := range t.Nodes {
		for _, c := range t.Nodes {
			if c.ParentID == t.Nodes[i].ID {
				t.Nodes[i].Children = append(t.Nodes[i].Children, c.ID)
			}
		}
	}
	return t
}

var offered = []string{"rag:search", "text2sql:execute", "text2sql:list_tables", "doc:read"}

// golden is the tree of the hand-computed scores below.
func golden() trajectory.Tree {
	return tree(
		"0.0|rag:search|The Eiffel Tower is in Paris.",                              // 29 runes
		"0.0.0|text2sql:execute|height_m: 330",                                      // 13
		"0.0.1|rag:search|Gustave Eiffel built it from 1887 to 1889.",               // 42
		"0.1|!doc:read|Error executing doc:read: file not found",                    // failed: counts 0
		"0.1.0|text2sql:list_tables|tables: towers, cities",                         // 22
		"0.1.0.0|text2sql:execute|name: Eiffel Tower | city: Paris | height_m: 330", // 48
		"0.2|rag:search|short",                                                      // depth 1 < MinDepth 2: not a candidate
	)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCandidatesGoldenScores(t *testing.T) {
	// MaxDepth 4, 4 tools offered, weights 40/30/30. Candidates in tree
	// order: traj_0 = 0.0→0.0.0, traj_1 = 0.0→0.0.1, traj_2 = 0.1→0.1.0→0.1.0.0.
	//
	// depth:     traj_0 2/4 = 0.5; traj_1 2/4 = 0.5; traj_2 3/4 = 0.75
	// mean obs:  traj_0 (29+13)/2 = 21; traj_1 (29+42)/2 = 35.5;
	//            traj_2 (0+22+48)/3 = 70/3 (the failed doc:read counts 0)
	// richness:  min 21, max 35.5, range 14.5:
	//            traj_0 0; traj_1 1; traj_2 (70/3-21)/14.5 = (7/3)/14.5 = 14/87
	// diversity: traj_0 {rag:search, text2sql:execute} 2/4 = 0.5;
	//            traj_1 {rag:search} 1/4 = 0.25;
	//            traj_2 {list_tables, execute} 2/4 = 0.5 (failed doc:read not counted)
	// score:     traj_0 40*0.5 + 30*0 + 30*0.5 = 35
	//            traj_1 40*0.5 + 30*1 + 30*0.25 = 57.5
	//            traj_2 40*0.75 + 30*14/87 + 30*0.5 = 45 + 420/87 ≈ 49.8276
	got := Candidates(golden(), Options{MinDepth: 2, MaxDepth: 4, Tools: offered})
	want := []struct {
		id                                string
		leaf                              string
		score, depth, richness, diversity float64
	}{
		{src + "_traj_1", "0.0.1", 57.5, 0.5, 1, 0.25},
		{src + "_traj_2", "0.1.0.0", 45 + 420.0/87, 0.75, 14.0 / 87, 0.5},
		{src + "_traj_0", "0.0.0", 35, 0.5, 0, 0.5},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d candidates, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Path.ID != w.id || g.Path.SourceID != src || g.Path.Leaf().ID != w.leaf {
			t.Errorf("rank %d: path %s (source %s) leaf %s, want %s leaf %s", i, g.Path.ID, g.Path.SourceID, g.Path.Leaf().ID, w.id, w.leaf)
		}
		if !near(g.Score, w.score) || !near(g.Depth, w.depth) || !near(g.Richness, w.richness) || !near(g.Diversity, w.diversity) {
			t.Errorf("%s: score %v depth %v richness %v diversity %v, want %v %v %v %v",
				w.id, g.Score, g.Depth, g.Richness, g.Diversity, w.score, w.depth, w.richness, w.diversity)
		}
		if g.Path.Nodes[0].Depth != 1 {
			t.Errorf("%s: path starts at depth %d, want 1 (root excluded)", w.id, g.Path.Nodes[0].Depth)
		}
	}
}

func TestSelectGolden(t *testing.T) {
	// Similarities of the golden candidates are all low (traj_0 vs traj_1
	// share the 4 shingles of "the eiffel tower is in paris" out of 5+10-4
	// = 11: 4/11), so selection is the ranking cut at MaxSelected.
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"top two", Options{MinDepth: 2, MaxDepth: 4, MaxSelected: 2, SimilarityThreshold: af, Tools: offered}, []string{"_traj_1", "_traj_2"}},
		{"no cap", Options{MinDepth: 2, MaxDepth: 4, SimilarityThreshold: af, Tools: offered}, []string{"_traj_1", "_traj_2", "_traj_0"}},
		// Threshold 0 (taken as given, like AgentFlow) skips traj_0, which
		// shares 4 shingles with traj_1; traj_2 shares none with either.
		{"threshold 0", Options{MinDepth: 2, MaxDepth: 4, Tools: offered}, []string{"_traj_1", "_traj_2"}},
		{"min depth 3", Options{MinDepth: 3, MaxDepth: 4, Tools: offered}, []string{"_traj_0"}},
		// Depth alone: traj_2 (3 deep) first; traj_0 and traj_1 tie at 2
		// and keep candidate order.
		{"depth weight only", Options{MinDepth: 2, MaxDepth: 4, SimilarityThreshold: af, Tools: offered, Weights: Weights{Depth: 1}}, []string{"_traj_2", "_traj_0", "_traj_1"}},
		// Diversity alone: traj_0 and traj_2 tie at 0.5, traj_1 0.25.
		{"diversity weight only", Options{MinDepth: 2, MaxDepth: 4, SimilarityThreshold: af, Tools: offered, Weights: Weights{Diversity: 1}}, []string{"_traj_0", "_traj_2", "_traj_1"}},
		// MinDepth 1 brings in 0.2 as traj_3 ("short", 5 runes, 1/4 deep).
		// Richness is then over min 5, max 35.5 (range 30.5), which reorders:
		// traj_2 40*0.75 + 30*(70/3-5)/30.5 + 30*0.5 = 45 + 30*(55/3)/30.5 ≈ 63.03
		// traj_1 40*0.5 + 30*1 + 30*0.25 = 57.5
		// traj_0 40*0.5 + 30*(21-5)/30.5 + 30*0.5 = 35 + 480/30.5 ≈ 50.74
		// traj_3 40*0.25 + 30*0 + 30*0.25 = 17.5
		{"min depth 1", Options{MinDepth: 1, MaxDepth: 4, SimilarityThreshold: af, Tools: offered}, []string{"_traj_2", "_traj_1", "_traj_0", "_traj_3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ids(Select(golden(), tt.opts))
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = src + w
			}
			if !slices.Equal(got, want) {
				t.Errorf("selected %v, want %v", got, want)
			}
		})
	}
}

func TestExplainLimit(t *testing.T) {
	ex := Explain(golden(), Options{MinDepth: 2, MaxDepth: 4, MaxSelected: 1, Tools: offered})
	if got := ids(ex.Picked); !slices.Equal(got, []string{src + "_traj_1"}) {
		t.Fatalf("picked %v, want traj_1", got)
	}
	var skipped []string
	for _, s := range ex.Skipped {
		if s.Reason != SkipLimit || s.DuplicateOf != "" {
			t.Errorf("%s skipped as %q (duplicate of %q), want limit", s.Path.ID, s.Reason, s.DuplicateOf)
		}
		skipped = append(skipped, s.Path.ID)
	}
	if !slices.Equal(skipped, []string{src + "_traj_2", src + "_traj_0"}) {
		t.Errorf("skipped %v, want traj_2, traj_0 in rank order", skipped)
	}
}

// af is AgentFlow's path_similarity_threshold.
const af = DefaultSimilarityThreshold

func ids(s []Scored) []string {
	var out []string
	for _, c := range s {
		out = append(out, c.Path.ID)
	}
	return out
}

func TestDepthNormalisedByMaxDepth(t *testing.T) {
	// AgentFlow divides by a hard-coded 5; here a 3-deep path is 3/10 of
	// max_depth 10, and 3/3 = 1 when MaxDepth is unset (the longest
	// candidate). A path longer than MaxDepth is capped at 1.
	tr := tree("0.0|rag:search|a", "0.0.0|rag:search|b", "0.0.0.0|rag:search|c")
	for _, tt := range []struct {
		maxDepth int
		want     float64
	}{{10, 0.3}, {5, 0.6}, {0, 1}, {2, 1}} {
		got := Candidates(tr, Options{MaxDepth: tt.maxDepth})
		if len(got) != 1 || !near(got[0].Depth, tt.want) {
			t.Errorf("max depth %d: %+v, want depth %v", tt.maxDepth, got, tt.want)
		}
	}
}

func TestDiversityAgainstConcreteTools(t *testing.T) {
	// 2 distinct tools used out of 4 offered is 0.5; a tool used twice
	// counts once; listing a tool twice does not inflate the divisor.
	tr := tree("0.0|rag:search|a b c", "0.0.0|rag:search|d e f", "0.0.0.0|doc:read|g h i")
	tests := []struct {
		name  string
		tools []string
		want  float64
	}{
		{"four offered", offered, 0.5},
		{"duplicates count once", append(slices.Clone(offered), "rag:search", "doc:read"), 0.5},
		{"two offered", []string{"rag:search", "doc:read"}, 1},
		// One offered but two used (the caller's list is wrong): capped.
		{"capped at one", []string{"rag:search"}, 1},
		// None given: the divisor is the tools that succeeded in the
		// candidates, here the same two.
		{"none given", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Candidates(tr, Options{Tools: tt.tools})
			if len(got) != 1 || !near(got[0].Diversity, tt.want) {
				t.Errorf("diversity %+v, want %v", got, tt.want)
			}
		})
	}
}

func TestRichnessEqualGivesZero(t *testing.T) {
	// Two candidates of equal mean observation length (whitespace runs
	// count one rune: "a  b" is 3 like "a b") both get richness 0.
	tr := tree("0.0|rag:search|a  b", "0.1|rag:search|c d")
	got := Candidates(tr, Options{})
	if len(got) != 2 || got[0].Richness != 0 || got[1].Richness != 0 {
		t.Fatalf("candidates %+v, want two with richness 0", got)
	}
	// Equal scores keep candidate order.
	if ids(got)[0] != src+"_traj_0" {
		t.Errorf("tie order %v, want traj_0 first", ids(got))
	}
}

func TestDedupCollapsesNearIdenticalPaths(t *testing.T) {
	// 0.0.0 and 0.0.1 share their parent's observation and their leaves
	// differ in one word: their shingles are nearly the same. 0.1.0 learned
	// something else. With the default threshold 0.7 the near-duplicates
	// collapse to the better one and the distinct path survives.
	shared := "The Eiffel Tower was completed in 1889 for the World's Fair in Paris and is 330 metres tall today."
	leaf := "Its designer Gustave Eiffel also built the internal frame of the Statue of Liberty in New York"
	tr := tree(
		"0.0|rag:search|"+shared,
		"0.0.0|rag:search|"+leaf+".",
		"0.0.1|rag:search|"+strings.Replace(leaf, "New York", "New York City", 1),
		"0.1|text2sql:execute|city: Lyon | population: 522250 | region: Auvergne-Rhone-Alpes",
		"0.1.0|text2sql:execute|river: Rhone | length_km: 813 | mouth: Mediterranean Sea",
	)
	cands := Candidates(tr, Options{Tools: offered})
	byLeaf := map[string]trajectory.Path{}
	for _, c := range cands {
		byLeaf[c.Path.Leaf().ID] = c.Path
	}
	// The shared observation has 20 words (18 shingles), the leaf 17 (15
	// shingles), its variant 18 (16: the leaf's 15 and "new york city"):
	// 18+15 = 33 shingles against 34, all 33 shared, 33/34 ≈ 0.97.
	if s := Similarity(byLeaf["0.0.0"], byLeaf["0.0.1"]); !near(s, 33.0/34) {
		t.Fatalf("near-identical paths have similarity %v, want 33/34", s)
	}
	if s := Similarity(byLeaf["0.0.0"], byLeaf["0.1.0"]); s != 0 {
		t.Fatalf("distinct paths have similarity %v, want 0", s)
	}

	got := Select(tr, Options{Tools: offered, SimilarityThreshold: af})
	if len(got) != 2 {
		t.Fatalf("selected %v, want 2 paths", ids(got))
	}
	leaves := []string{got[0].Path.Leaf().ID, got[1].Path.Leaf().ID}
	slices.Sort(leaves)
	// 0.0.1's leaf is longer by " City", so it is richer and ranks above
	// 0.0.0, which is dropped as its near-duplicate.
	if !slices.Equal(leaves, []string{"0.0.1", "0.1.0"}) {
		t.Errorf("selected leaves %v, want [0.0.1 0.1.0]", leaves)
	}

	ex := Explain(tr, Options{Tools: offered, SimilarityThreshold: af})
	if len(ex.Skipped) != 1 || ex.Skipped[0].Path.Leaf().ID != "0.0.0" || ex.Skipped[0].Reason != SkipDuplicate ||
		ex.Skipped[0].DuplicateOf != byLeaf["0.0.1"].ID || !near(ex.Skipped[0].Similarity, 33.0/34) {
		t.Errorf("skipped %+v, want 0.0.0 as a duplicate of %s at 33/34", ex.Skipped, byLeaf["0.0.1"].ID)
	}

	// Threshold 1 turns dedup off: all three survive.
	if got := Select(tr, Options{Tools: offered, SimilarityThreshold: 1}); len(got) != 3 {
		t.Errorf("threshold 1 selected %v, want all 3", ids(got))
	}
}

func TestSimilarity(t *testing.T) {
	path := func(obs ...string) trajectory.Path {
		p := trajectory.Path{}
		for _, o := range obs {
			p.Nodes = append(p.Nodes, trajectory.Node{Observation: o})
		}
		return p
	}
	tests := []struct {
		name string
		a, b trajectory.Path
		want float64
	}{
		{"identical", path("a b c d"), path("a b c d"), 1},
		// {abc, bcd} vs {abc, bce}: 1 shared of 3.
		{"one word differs", path("a b c d"), path("a b c e"), 1.0 / 3},
		{"case and punctuation", path("Paris, France!"), path("paris france"), 1},
		{"json and text", path(`{"count": 42}`), path("count 42"), 1},
		// Shingles do not span observations: {ab}, {cd} vs {abc, bcd}.
		{"no spanning", path("a b", "c d"), path("a b c d"), 0},
		// Order of the observations does not matter, repeats count once.
		{"set of shingles", path("x y z", "a b c"), path("a b c", "x y z", "a b c"), 1},
		{"both empty", path("", "  "), path(""), 0},
		{"one empty", path("a b c"), path(""), 0},
		{"unicode words", path("Zürich liegt am Zürichsee"), path("zürich liegt am zürichsee"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Similarity(tt.a, tt.b); !near(got, tt.want) {
				t.Errorf("Similarity = %v, want %v", got, tt.want)
			}
			if got := Similarity(tt.b, tt.a); !near(got, tt.want) {
				t.Errorf("Similarity reversed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSelectIndependentOfNodeOrder(t *testing.T) {
	// The sampler creates nodes concurrently, so their order in the tree
	// varies between runs; ids and picks must not.
	want := Select(golden(), Options{MinDepth: 2, MaxDepth: 4, SimilarityThreshold: af, Tools: offered})
	tr := golden()
	slices.Reverse(tr.Nodes[1:])
	got := Select(tr, Options{MinDepth: 2, MaxDepth: 4, SimilarityThreshold: af, Tools: offered})
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
		t.Errorf("reordered tree selected %v, want %v", ids(got), ids(want))
	}
	for i := range got {
		if got[i].Score != want[i].Score {
			t.Errorf("%s: score %v, want %v", got[i].Path.ID, got[i].Score, want[i].Score)
		}
	}
}

func TestCandidateOrderNumeric(t *testing.T) {
	// "0.10" comes after "0.2": ids compare numerically per component.
	var specs []string
	for i := range 11 {
		specs = append(specs, fmt.Sprintf("0.%d|rag:search|same", i))
	}
	got := Candidates(tree(specs...), Options{Weights: Weights{Depth: 1}})
	if len(got) != 11 {
		t.Fatalf("%d candidates, want 11", len(got))
	}
	for i, c := range got {
		if want := fmt.Sprintf("0.%d", i); c.Path.Leaf().ID != want || c.Path.ID != fmt.Sprintf("%s_traj_%d", src, i) {
			t.Errorf("candidate %d is %s (%s), want leaf %s", i, c.Path.ID, c.Path.Leaf().ID, want)
		}
	}
}

func TestMalformedTrees(t *testing.T) {
	tests := []struct {
		name string
		tr   trajectory.Tree
		want []string // leaves selected
	}{
		{"root only", tree(), nil},
		{"empty", trajectory.Tree{}, nil},
		{"missing parent", func() trajectory.Tree {
			tr := tree("0.0|rag:search|a", "0.1|rag:search|b")
			tr.Nodes[2].ParentID = "0.9"
			return tr
		}(), []string{"0.0"}},
		// Neither failed calls nor blank observations ground a question.
		{"nothing to ground in", tree(
			"0.0|!rag:search|Error executing rag:search: timeout",
			"0.1|rag:search| \n ",
			"0.2|!rag:search|Error executing rag:search: timeout",
			"0.2.0|rag:search|Dijon",
		), []string{"0.2.0"}},
		{"cycle", func() trajectory.Tree {
			tr := tree("0.0|rag:search|a", "0.1|rag:search|b c d")
			tr.Nodes = append(tr.Nodes,
				trajectory.Node{ID: "x", ParentID: "y", Observation: "x"},
				trajectory.Node{ID: "y", ParentID: "x", Observation: "y"},
				trajectory.Node{ID: "z", ParentID: "x", Observation: "z"})
			return tr
		}(), []string{"0.1", "0.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var leaves []string
			for _, s := range Select(tt.tr, Options{}) {
				leaves = append(leaves, s.Path.Leaf().ID)
			}
			if !slices.Equal(leaves, tt.want) {
				t.Errorf("selected leaves %v, want %v", leaves, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string // part of the error; "" for valid
	}{
		{"zero", Options{}, ""},
		{"agentflow rag", Options{MinDepth: 3, MaxDepth: 10, MaxSelected: 2, SimilarityThreshold: 0.7, Tools: offered}, ""},
		{"negative weight", Options{Weights: Weights{Depth: -1}}, "weights.depth is -1"},
		{"nan weight", Options{Weights: Weights{Richness: math.NaN()}}, "weights.richness is NaN"},
		{"inf weight", Options{Weights: Weights{Diversity: math.Inf(1)}}, "weights.diversity is +Inf"},
		{"nan threshold", Options{SimilarityThreshold: math.NaN()}, "path_similarity_threshold is NaN"},
		{"negative threshold", Options{SimilarityThreshold: -0.1}, "path_similarity_threshold is -0.1, want a number >= 0"},
		{"min above max", Options{MinDepth: 4, MaxDepth: 3}, "min_depth 4 is above max_depth 3"},
		{"wildcard", Options{Tools: []string{"rag:search", "text2sql:*"}}, `tools[1] is "text2sql:*"`},
		{"empty tool", Options{Tools: []string{""}}, `tools[0] is ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want ErrInvalidOptions naming %q", err, tt.want)
			}
		})
	}
}

func TestCompactLen(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{{"", 0}, {"   \n", 0}, {"a", 1}, {"  a \n\t b  ", 3}, {"héllo wörld", 11}, {"a\u00a0\u00a0b", 3}} {
		if got := compactLen(tt.in); got != tt.want {
			t.Errorf("compactLen(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
