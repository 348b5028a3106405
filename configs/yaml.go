package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
)

// ToJSON converts a settings document to JSON according to the file
// extension (.yaml/.yml are YAML; anything else must be JSON). Errors name
// the file and, for YAML, the line.
func ToJSON(name string, b []byte) (json.RawMessage, error) {
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".yaml" || ext == ".yml" {
		out, err := yaml.YAMLToJSON(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, out); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
		}
		if !bytes.HasPrefix(buf.Bytes(), []byte("{")) {
			return nil, fmt.Errorf("%w: %s: the settings document must be a mapping", ErrInvalid, name)
		}
		return json.RawMessage(buf.Bytes()), nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, name, describeJSONError(err))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%w: %s: the settings document must be a JSON object", ErrInvalid, name)
	}
	return json.RawMessage(bytes.TrimSpace(b)), nil
}
