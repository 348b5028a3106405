package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSONDocument checks that b, a settings document read from name, is a
// JSON object, and returns it without surrounding white space. Errors name
// the file and what is wrong, wrapping ErrInvalid.
func JSONDocument(name string, b []byte) (json.RawMessage, error) {
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
