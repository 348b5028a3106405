package pathelem

import "testing"

func TestSafe(t *testing.T) {
	for in, want := range map[string]string{
		"gsm8k-test_v1.2": "gsm8k-test_v1.2",
		"../../etc":       "_.._etc",
		"..":              "",
		".hidden.":        "hidden",
		"a/b c":           "a_b_c",
		"naïve":           "na_ve",
		"":                "",
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
}
