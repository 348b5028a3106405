package configs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestSandboxTokenEnv: sandbox_token_env must name a variable (a value
// that looks like a token is refused without being quoted), needs
// sandbox_url, and a token written into the settings is refused.
func TestSandboxTokenEnv(t *testing.T) {
	const secret = "s3cr3t-token-value/with+chars"
	for _, tt := range []struct {
		name, doc, field string
	}{
		{"a token, not a name", `{"sandbox_url": "http://h", "sandbox_token_env": "` + secret + `"}`, "sandbox_token_env"},
		{"no sandbox_url", `{"sandbox_token_env": "SB_TOKEN"}`, "sandbox_token_env"},
		{"inline token", `{"sandbox_url": "http://h", "sandbox_token": "` + secret + `"}`, "sandbox_token"},
		{"inline auth token", `{"sandbox_url": "http://h", "sandbox_auth_token": "` + secret + `"}`, "sandbox_auth_token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRunSettings(json.RawMessage(tt.doc))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("err = %v, want a FieldError on %s", err, tt.field)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("err = %v quotes the value", err)
			}
		})
	}
	s, err := ParseRunSettings(json.RawMessage(`{"sandbox_url": "http://h", "sandbox_token_env": "SB_TOKEN"}`))
	if err != nil || s.SandboxTokenEnv != "SB_TOKEN" {
		t.Fatalf("valid settings = %+v, %v", s, err)
	}
	if w := SettingsWarnings(json.RawMessage(`{"sandbox_url": "http://h", "sandbox_token_env": "SB_TOKEN"}`), "react", nil); len(w) != 0 {
		t.Fatalf("warnings = %v", w)
	}
}
