package editdist

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{name: "equal", a: "limits", b: "limits", want: 0},
		{name: "empty", a: "", b: "abc", want: 3},
		{name: "swap", a: "limts", b: "limits", want: 1},
		{name: "kitten", a: "kitten", b: "sitting", want: 3},
		{name: "runes", a: "café", b: "cafe", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Distance([]rune(tt.a), []rune(tt.b)); got != tt.want {
				t.Fatalf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := Distance([]rune(tt.b), []rune(tt.a)); got != tt.want {
				t.Fatalf("not symmetric: %d", got)
			}
		})
	}
	if got := Distance([]byte("café"), []byte("cafe")); got != 2 {
		t.Fatalf("bytes: %d, want 2", got)
	}
}
