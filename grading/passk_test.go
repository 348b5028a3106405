package grading

import (
	"errors"
	"testing"
)

func TestPassAtK(t *testing.T) {
	tests := []struct {
		name    string
		n, c, k int
		want    float64
	}{
		{"n3 c1 k1", 3, 1, 1, 1.0 / 3},
		{"n3 c1 k2", 3, 1, 2, 2.0 / 3},
		{"n3 c1 k3", 3, 1, 3, 1},
		// 1 - C(3,2)/C(5,2) = 1 - 3/10.
		{"n5 c2 k2", 5, 2, 2, 0.7},
		{"none correct", 5, 0, 3, 0},
		{"all correct", 5, 5, 1, 1},
		{"k1 is the fraction correct", 10, 3, 1, 0.3},
		// n-c < k: every draw of 3 contains a correct sample.
		{"n4 c2 k3", 4, 2, 3, 1},
		// 1 - C(9,5)/C(10,5) = 1 - 126/252.
		{"n10 c1 k5", 10, 1, 5, 0.5},
		// 1 - C(8,5)/C(10,5) = 1 - 56/252.
		{"n10 c2 k5", 10, 2, 5, 7.0 / 9},
		{"large n", 1000, 1, 1, 0.001},
		// 1 - C(900,10)/C(1000,10); the binomials are about 9.1e22 and 2.6e23.
		{"large n k10", 1000, 100, 10, 0.653072285207994},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PassAtK(tt.n, tt.c, tt.k)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tt.want) {
				t.Fatalf("PassAtK(%d, %d, %d) = %v, want %v", tt.n, tt.c, tt.k, got, tt.want)
			}
		})
	}
}

func TestPassAtKInvalid(t *testing.T) {
	tests := []struct {
		name    string
		n, c, k int
	}{
		{"no samples", 0, 0, 1},
		{"negative correct", 3, -1, 1},
		{"more correct than samples", 3, 4, 1},
		{"k zero", 3, 1, 0},
		{"k above n", 3, 1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := PassAtK(tt.n, tt.c, tt.k); !errors.Is(err, ErrInvalidPassAtK) {
				t.Fatalf("err = %v, want ErrInvalidPassAtK", err)
			}
		})
	}
}

func TestMeanPassAtK(t *testing.T) {
	tests := []struct {
		name    string
		tasks   []TaskCount
		k       int
		want    float64
		wantErr error
	}{
		{"two tasks", []TaskCount{{3, 1}, {3, 0}}, 2, 1.0 / 3, nil},
		{"uneven sizes", []TaskCount{{5, 2}, {2, 1}}, 2, (0.7 + 1) / 2, nil},
		{"no tasks", nil, 1, 0, nil},
		{"task too small", []TaskCount{{3, 1}, {1, 1}}, 2, 0, ErrInvalidPassAtK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MeanPassAtK(tt.tasks, tt.k)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !near(got, tt.want) {
				t.Fatalf("MeanPassAtK = %v, want %v", got, tt.want)
			}
		})
	}
}
