package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/keyring"
)

// TestLiteralKeys: literal API keys of a config given on the command line
// are taken out (AgentFlow's api_key and evaluator_api_key become
// "${NAME}", a model entry's api_key its api_key_env); references to the
// environment stay; the names depend on the command and the key's place,
// not on the key, so the same command finds its keys under the same names.
func TestLiteralKeys(t *testing.T) {
	doc := `{"model_name": "m", "api_key": "sk-one", "evaluator_api_key": "${JUDGE_KEY}",
		"models": {"x": {"base_url": "http://h/v1", "api_key": "sk-two"}, "y": {"api_key_env": "Y_KEY"}},
		"agent": {"settings": {"models": {"z": {"api_key": "$Z_KEY"}}}}}`
	take := func(doc string) ([]byte, map[string]string, string) {
		var s any
		if err := json.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatal(err)
		}
		found := takeLiteralKeys(s)
		b, _ := json.Marshal(s)
		key := commandKey("rollout", "rollout", "", b)
		out, keys := nameKeys(b, key, found)
		return out, keys, key
	}
	out, keys, key := take(doc)
	if len(keys) != 2 || strings.Contains(string(out), "sk-one") || strings.Contains(string(out), "sk-two") {
		t.Fatalf("keys %v, settings %s", keys, out)
	}
	var s struct {
		APIKey    string `json:"api_key"`
		Evaluator string `json:"evaluator_api_key"`
		Models    map[string]map[string]string
		Agent     struct {
			Settings struct{ Models map[string]map[string]string }
		}
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	top := strings.TrimSuffix(strings.TrimPrefix(s.APIKey, "${"), "}")
	if keys[top] != "sk-one" || keys[s.Models["x"]["api_key_env"]] != "sk-two" || s.Models["x"]["api_key"] != "" {
		t.Fatalf("settings %s, keys %v", out, keys)
	}
	if s.Evaluator != "${JUDGE_KEY}" || s.Models["y"]["api_key_env"] != "Y_KEY" || s.Agent.Settings.Models["z"]["api_key"] != "$Z_KEY" {
		t.Fatalf("references changed: %s", out)
	}
	for n := range keys {
		if !keyring.IsName(n) {
			t.Fatalf("name %q", n)
		}
	}
	// Another key, same command: same command key, same names.
	out2, keys2, key2 := take(strings.Replace(doc, "sk-one", "sk-three", 1))
	if key2 != key || string(out2) != string(out) || keys2[top] != "sk-three" {
		t.Fatalf("a changed key changed the command: %s vs %s", out2, out)
	}
	// Another command: another key and other names.
	out3, _, key3 := take(strings.Replace(doc, `"model_name": "m"`, `"model_name": "n"`, 1))
	if key3 == key || strings.Contains(string(out3), top) {
		t.Fatalf("another command shares the key or names: %s", out3)
	}
	// Key order does not matter.
	if _, _, key4 := take(`{"api_key_x": 1, "a": 2}`); key4 != commandKey("rollout", "rollout", "", []byte(`{"a": 2, "api_key_x": 1}`)) {
		t.Fatal("the command key depends on the order of the keys")
	}
}
