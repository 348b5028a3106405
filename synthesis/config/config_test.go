package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse(json.RawMessage(`{"seeds_file": "s.jsonl", "output_dir": "out", "available_tools": ["rag:*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxDepth != 5 || c.BranchingFactor != 2 || *c.DepthThreshold != 3 || c.MinDepth != 2 || c.MaxSelectedTraj != 3 ||
		*c.PathSimilarityThreshold != 0.7 || c.ModelName != DefaultModel || c.MaxConcurrency != 16 || c.MaxRetries != 3 ||
		*c.MaxReasks != 2 || c.ProposalFormat != FormatTools || c.MinHops != 3 || c.ClosedBook {
		t.Fatalf("defaults: %+v", c)
	}
	if got := c.TreeNodes(); got != 30 {
		t.Fatalf("TreeNodes = %d, want 2+4+8+8+8 = 30", got)
	}
	if got := c.Width(); got != 8 {
		t.Fatalf("Width = %d, want 8", got)
	}
	for d, want := range []int{2, 2, 2, 1, 1, 0} {
		if got := c.Children(d); got != want {
			t.Fatalf("Children(%d) = %d, want %d", d, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	base := `"seeds_file": "s.jsonl", "output_dir": "out", "available_tools": ["rag:search"]`
	for _, tc := range []struct{ name, doc, want string }{
		{"not an object", `[1]`, "must be a JSON object"},
		{"unknown key", `{` + base + `, "max_dept": 3}`, `unknown key "max_dept" (did you mean "max_depth"?)`},
		{"unknown keys", `{` + base + `, "zzz": 1, "temprature": 1}`, `unknown key "temprature" (did you mean "temperature"?); unknown key "zzz"`},
		{"unknown nested key", `{` + base + `, "qa_examples": [{"question": "q", "anwser": "a"}]}`, `unknown key "qa_examples[0].anwser" (did you mean "qa_examples[0].answer"?)`},
		{"unknown limit", `{` + base + `, "limits": {"tokns": 3}}`, `unknown key "limits.tokns" (did you mean "limits.tokens"?)`},
		{"weights", `{` + base + `, "selection_weights": {"depth": -1}}`, "selection_weights.depth: must be >= 0"},
		{"no seeds", `{"output_dir": "o", "available_tools": ["rag:search"]}`, "seeds_file: required (or seeds"},
		{"both seeds", `{` + base + `, "seeds": ["a"]}`, "seeds_file and seeds both given"},
		{"no output", `{"seeds_file": "s", "available_tools": ["rag:search"]}`, "output_dir: required"},
		{"no tools", `{"seeds_file": "s", "output_dir": "o"}`, "available_tools: required"},
		{"bad tool", `{"seeds_file": "s", "output_dir": "o", "available_tools": ["search"]}`, `available_tools[0]: "search" is not a sandbox tool`},
		{"min over max", `{` + base + `, "max_depth": 2, "min_depth": 3}`, "min_depth: must be between 1 and max_depth (2)"},
		{"threshold", `{` + base + `, "path_similarity_threshold": 1.5}`, "path_similarity_threshold: must be between 0 and 1"},
		{"concurrency", `{` + base + `, "max_concurrency": -1}`, "max_concurrency: must be >= 1"},
		{"format", `{` + base + `, "proposal_format": "json"}`, `proposal_format: "json" is not one of tools, xml`},
		{"wrong type", `{` + base + `, "max_depth": "five"}`, "max_depth: want a whole number, got JSON string"},
		{"api key literal", `{` + base + `, "api_key": "sk-secret-123"}`, "api_key: flock takes no API key"},
		{"unexpanded", `{` + base + `, "seed_description": "${TOPIC}"}`, "seed_description holds an unexpanded"},
		{"tips", `{` + base + `, "sampling_tips": 3}`, "sampling_tips: want a string or a list"},
		{"sandbox url", `{` + base + `, "sandbox_server_url": "ftp://x"}`, "sandbox_server_url"},
		{"limits", `{` + base + `, "limits": {"tokens": -10}}`, "limits.tokens: must be >= 0"},
		{"seed limits", `{` + base + `, "seed_limits": {"cost": -1}}`, "seed_limits.cost: must be >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(tc.doc))
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrConfig containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-secret-123") {
				t.Fatal("the error quotes the key")
			}
		})
	}
}

func TestModelsDoc(t *testing.T) {
	c, err := Parse(json.RawMessage(`{"seeds": ["a"], "output_dir": "o", "available_tools": ["rag:search"],
		"model_name": "m", "base_url": "http://127.0.0.1:8000/v1", "api_key": "${MY_KEY}"}`))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.ModelsDoc()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(doc), `{"m":{"api_key_env":"MY_KEY","base_url":"http://127.0.0.1:8000/v1","provider":"openai"}}`; got != want {
		t.Fatalf("models = %s, want %s", got, want)
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"OUT": "/tmp/out", "KEY": "secret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	doc, err := Expand(json.RawMessage(`{"output_dir": "${OUT}/a", "api_key": "${KEY}", "sampling_tips": ["cost $$5", "$OUT"]}`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if got["output_dir"] != "/tmp/out/a" || got["api_key"] != "${KEY}" {
		t.Fatalf("expanded: %v", got)
	}
	if tips := got["sampling_tips"].([]any); tips[0] != "cost $5" || tips[1] != "/tmp/out" {
		t.Fatalf("tips: %v", tips)
	}
	if _, err := Expand(json.RawMessage(`{"output_dir": "${NOPE}"}`), lookup); err == nil || !strings.Contains(err.Error(), "output_dir: environment variable NOPE is not set") {
		t.Fatalf("unset: %v", err)
	}
	if _, err := Expand(json.RawMessage(`{"output_dir": "${1x}"}`), lookup); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("malformed: %v", err)
	}
}

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		limit      int
		want       []string
		kwargs     bool
	}{
		{"jsonl", "{\"content\": \"a\", \"kwargs\": {\"seed_path\": \"/x\"}}\n\n{\"content\": \"b\"}\n", 0, []string{"a", "b"}, true},
		{"list of strings", `["a", "b", "c"]`, 2, []string{"a", "b"}, false},
		{"list of objects", `[{"content": "a"}, "b"]`, 0, []string{"a", "b"}, false},
		{"text", "first seed\n\n  second seed  \n", 0, []string{"first seed", "second seed"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seeds, err := ParseSeeds([]byte(tc.data), tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(seeds) != len(tc.want) {
				t.Fatalf("got %d seeds, want %d", len(seeds), len(tc.want))
			}
			for i, s := range seeds {
				if s.Content != tc.want[i] || s.Index != i || s.ID != SourceID(i, tc.want[i]) {
					t.Fatalf("seed %d = %+v", i, s)
				}
			}
			if tc.kwargs && seeds[0].Kwargs["seed_path"] != "/x" {
				t.Fatalf("kwargs: %v", seeds[0].Kwargs)
			}
		})
	}
	if id := SourceID(7, "hello"); id != "src_0007_5d41402a" {
		t.Fatalf("SourceID = %s", id)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "  \n", "no seeds"},
		{"bad line", "{\"content\": \"a\"}\n{\"content\": 1}\n", "line 2"},
		{"not object line", "{\"content\": \"a\"}\nplain\n", "line 2: want a JSON object"},
		{"no content", "{\"kwargs\": {}}\n", "line 1: content is required"},
		{"empty content", `["a", ""]`, "element 1: content is empty"},
		{"bad list", `[1,`, "a JSON list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSeeds([]byte(tc.data), 0)
			if err == nil || !errors.Is(err, ErrSeeds) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrSeeds containing %q", err, tc.want)
			}
		})
	}
}

func TestExpandTools(t *testing.T) {
	names := []string{"text2sql:execute", "rag:search", "text2sql:list_databases", "rag:stats"}
	got, err := ExpandTools([]string{"text2sql:*", "rag:search", "text2sql:execute"}, names)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "text2sql:execute,text2sql:list_databases,rag:search" {
		t.Fatalf("got %v", got)
	}
	for _, tc := range []struct {
		patterns []string
		want     string
	}{
		{[]string{"rag:search", "web:search"}, `available_tools[1]: "web:search"`},
		{[]string{"vm:*"}, `available_tools[0]: "vm:*" matches no tool`},
	} {
		if _, err := ExpandTools(tc.patterns, names); err == nil || !errors.Is(err, ErrTools) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: err = %v, want %q", tc.patterns, err, tc.want)
		}
	}
}
