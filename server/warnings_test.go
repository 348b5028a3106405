package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStartWarnings: POST /start_workflow answers 201 with the settings
// warnings; a clean start has no warnings field.
func TestStartWarnings(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		body string
		want []string
	}{
		{name: "clean", body: `{"workflow":"test.log","settings":{"limits":{"tokens":100}}}`},
		{name: "typos", body: `{"workflow":"test.log","settings":{"limits":{"tokns":100},"python":{"timeout":3}}}`,
			want: []string{
				`unknown settings key "limits.tokns" (did you mean "limits.tokens"?)`,
				`unknown settings key "python.timeout" (did you mean "python.timeout_s"?)`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, "/start_workflow", strings.NewReader(tt.body))
			if r.status != http.StatusCreated {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var out map[string]json.RawMessage
			if err := json.Unmarshal(r.body, &out); err != nil {
				t.Fatal(err)
			}
			raw, ok := out["warnings"]
			if len(tt.want) == 0 {
				if ok {
					t.Fatalf("clean start has warnings: %s", r.body)
				}
				return
			}
			var got []string
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("warnings %s: %v", raw, err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("warnings\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
