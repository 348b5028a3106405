package keyring

import (
	"testing"
)

func TestRing(t *testing.T) {
	var nilRing *Ring
	a, b := NewName(), NewName()
	if a == b || !IsName(a) || IsName("FLOCK_KEY_x") || IsName("OPENAI_API_KEY") {
		t.Fatalf("names %q %q", a, b)
	}
	r := &Ring{}
	r.Set(a, "sk-a")
	r.Set("OPENAI_API_KEY", "sk-not-taken")
	doc := []byte(`{"models": {"m": {"api_key_env": "` + a + `"}, "n": {"api_key_env": "` + b + `"}}, "api_key": "${` + a + `}"}`)
	if got := r.Missing(doc); len(got) != 1 || got[0] != b {
		t.Fatalf("missing %v", got)
	}
	if got := nilRing.Missing(doc); len(got) != 2 {
		t.Fatalf("a nil ring misses %v", got)
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-env", b: "sk-from-env"}
	get := r.Getenv(func(k string) string { return env[k] })
	tests := []struct{ name, want string }{
		{a, "sk-a"},
		{b, ""}, // a ring name is never read from the environment
		{"OPENAI_API_KEY", "sk-env"},
		{"FLOCK_KEY_short", ""},
	}
	for _, tt := range tests {
		if got := get(tt.name); got != tt.want {
			t.Errorf("Getenv(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
