package grading

import "testing"

func TestReduce(t *testing.T) {
	scores := []float64{1, 0, 0, 0.5}
	correct := []bool{true, false, false, false}
	for name, want := range map[string]float64{"mean": 0.375, "max": 1, "mode": 0, "at_least_1": 1, "at_least_2": 0} {
		if got, err := Reduce(name, scores, correct); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", name, got, err, want)
		}
	}
	if got, _ := Reduce("mode", []float64{0, 1}, nil); got != 1 {
		t.Errorf("mode tie = %v, want the higher 1", got)
	}
	for _, bad := range []string{"median", "at_least_0", "at_least_x"} {
		if CheckReducer(bad) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
