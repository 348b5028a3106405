package record

import (
	"encoding/json"
	"testing"
)

func TestMarshalKeepsHTML(t *testing.T) {
	e, err := NewEntry("tool_call", map[string]json.RawMessage{"args": json.RawMessage(`{"cmd":"a<b && c>d"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(e.Data), `{"args":{"cmd":"a<b && c>d"}}`; got != want {
		t.Fatalf("data = %s, want %s", got, want)
	}
	var back map[string]map[string]string
	if err := e.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if back["args"]["cmd"] != "a<b && c>d" {
		t.Fatalf("decoded %v", back)
	}
	if err := (Entry{Type: "x", Seq: 3, Data: json.RawMessage(`{`)}).Decode(&back); err == nil {
		t.Fatal("decoding a malformed entry succeeded")
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name            string
		s               Status
		valid, terminal bool
	}{
		{"running", StatusRunning, true, false},
		{"paused", StatusPaused, true, false},
		{"succeeded", StatusSucceeded, true, true},
		{"failed", StatusFailed, true, true},
		{"cancelled", StatusCancelled, true, true},
		{"unknown", Status("done"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.s.Valid() != tt.valid || tt.s.Terminal() != tt.terminal {
				t.Fatalf("%q: valid %v terminal %v", tt.s, tt.s.Valid(), tt.s.Terminal())
			}
		})
	}
}
