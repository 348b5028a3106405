package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/flockrun/flock/internal/keyring"
)

// Where a config file given on the command line holds an API key:
// AgentFlow's api_key and evaluator_api_key (a rollout config's, a
// synthesis config's), and a model entry's api_key. Settings sent over
// HTTP may not hold keys at all; a file on the command line is the
// operator's, so its keys are taken, kept in memory and replaced by names.
var literalKeyFields = []string{"api_key", "evaluator_api_key"}

// envReference matches a value that names an environment variable instead
// of holding a key: "${VAR}", "${VAR:-default}" or "$VAR".
var envReference = regexp.MustCompile(`^\$(?:\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}|[A-Za-z_][A-Za-z0-9_]*)$`)

// placeholder marks a literal key in a document until the command's key
// is known, from which the key's name derives.
const placeholder = "\x00flock-literal-key\x00"

// literalKey is one key found in a config document.
type literalKey struct {
	path  string // where: "api_key", "models.m.api_key"
	value string
}

// takeLiteralKeys finds the API keys written literally in the config
// document doc (decoded JSON, changed in place) and replaces each by a
// placeholder: in a model entry (models.NAME.api_key) the entry's
// api_key_env, elsewhere (AgentFlow's api_key, evaluator_api_key) the
// value "${NAME}". References to environment variables stay as they are.
// nameKeys later turns the placeholders into names.
func takeLiteralKeys(doc any) []literalKey {
	var found []literalKey
	var walk func(v any, path string, inModels bool)
	walk = func(v any, path string, inModels bool) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range sortedMapKeys(t) {
				p := k
				if path != "" {
					p = path + "." + k
				}
				s, isString := t[k].(string)
				isKeyField := k == "api_key" || (!inModels && k == "evaluator_api_key")
				if isKeyField && isString && strings.TrimSpace(s) != "" && !envReference.MatchString(strings.TrimSpace(s)) {
					found = append(found, literalKey{path: p, value: s})
					if inModels {
						delete(t, k)
						t["api_key_env"] = placeholder + p + "\x00"
					} else {
						t[k] = "${" + placeholder + p + "\x00}"
					}
					continue
				}
				if k == "models" {
					if ms, ok := t[k].(map[string]any); ok {
						for _, name := range sortedMapKeys(ms) {
							walk(ms[name], p+"."+name, true)
						}
						continue
					}
				}
				walk(t[k], p, false)
			}
		case []any:
			for _, x := range t {
				walk(x, path, false)
			}
		}
	}
	walk(doc, "", false)
	return found
}

// nameKeys gives each literal key of found a name derived from the
// command's key and the key's place in the config (so the same command
// finds its keys under the same names when it resumes its run), writes
// the names into the document's placeholders and returns the keys by
// name.
func nameKeys(doc []byte, commandKey string, found []literalKey) ([]byte, map[string]string) {
	if len(found) == 0 {
		return doc, nil
	}
	keys := map[string]string{}
	s := string(doc)
	for _, k := range found {
		sum := sha256.Sum256([]byte(commandKey + "\x00" + k.path))
		name := keyring.Prefix + hex.EncodeToString(sum[:16])
		keys[name] = k.value
		enc, _ := json.Marshal(placeholder + k.path + "\x00")
		s = strings.ReplaceAll(s, strings.Trim(string(enc), `"`), name)
	}
	return []byte(s), keys
}

// commandKey identifies a command line by what it asks for: the command,
// the workflow, the task and the settings as resolved (paths made
// absolute, flags applied, the output directory included), with literal
// API keys left out (their placeholders stand in). The same command run
// again, in any working directory, has the same key, and finds the
// unfinished run it started (state.Spec.Key) to resume it; a command that
// asks for anything else starts a run of its own.
func commandKey(cmd, workflow, task string, settings []byte) string {
	var canon any
	if json.Unmarshal(settings, &canon) == nil {
		settings, _ = json.Marshal(canon) // map keys sorted
	}
	b, _ := json.Marshal(struct {
		Cmd      string          `json:"cmd"`
		Workflow string          `json:"workflow"`
		Task     string          `json:"task"`
		Settings json.RawMessage `json:"settings"`
	}{cmd, workflow, task, settings})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sortedMapKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
