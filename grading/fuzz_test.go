package grading

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

func FuzzExtractNumbers(f *testing.F) {
	for _, tt := range numericMatchTests {
		f.Add(tt.pred)
		f.Add(tt.ref)
	}
	for _, tt := range extractTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range ExtractNumbers(s) {
			if math.IsNaN(n.Value) || math.IsInf(n.Value, 0) || n.Text == "" {
				t.Fatalf("ExtractNumbers(%q) gave %+v", s, n)
			}
		}
		main, ok := MainNumber(s)
		if ok && (math.IsNaN(main.Value) || math.IsInf(main.Value, 0)) {
			t.Fatalf("MainNumber(%q) = %+v", s, main)
		}
		got, err := NumericMatch(s, s)
		switch {
		case ok && (err != nil || got != 1):
			t.Fatalf("NumericMatch(%q, itself) = %v, %v; want 1", s, got, err)
		case !ok && !errors.Is(err, ErrNotNumeric):
			t.Fatalf("NumericMatch(%q, itself) err = %v, want ErrNotNumeric", s, err)
		}
	})
}

func FuzzParseJudgeReply(f *testing.F) {
	for _, tt := range judgeReplyTests {
		f.Add(tt.reply)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		v, err := ParseJudgeReply(reply)
		if err != nil {
			if !errors.Is(err, ErrInvalidJudgeReply) {
				t.Fatalf("ParseJudgeReply(%q) err = %v, not ErrInvalidJudgeReply", reply, err)
			}
			return
		}
		// A verdict survives a round trip through its own JSON.
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseJudgeReply(string(data))
		if err != nil || again.Correct != v.Correct {
			t.Fatalf("round trip of %s = %+v, %v", data, again, err)
		}
	})
}

func FuzzNormalize(f *testing.F) {
	for _, tt := range normalizeTests {
		f.Add(tt.in, "")
	}
	for _, tt := range f1Tests {
		f.Add(tt.pred, tt.ref)
	}
	for _, tt := range containsTests {
		f.Add(tt.pred, tt.ref)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		n := Normalize(a)
		if again := Normalize(n); again != n {
			t.Fatalf("Normalize not idempotent on %q: %q -> %q", a, n, again)
		}
		if ExactMatch(a, a) != 1 || F1(a, a) != 1 || ContainsAnswer(a, a) != 1 || Similarity(a, a) != 1 {
			t.Fatalf("%q does not fully match itself", a)
		}
		for name, s := range map[string]float64{
			"exact_match": ExactMatch(a, b), "f1": F1(a, b),
			"contains_answer": ContainsAnswer(a, b), "similarity": Similarity(a, b),
		} {
			if !(s >= 0 && s <= 1) {
				t.Fatalf("%s(%q, %q) = %v", name, a, b, s)
			}
		}
		if ExactMatch(a, b) == 1 && (F1(a, b) != 1 || ContainsAnswer(a, b) != 1 || Similarity(a, b) != 1) {
			t.Fatalf("exact match of %q and %q is not a full match elsewhere", a, b)
		}
	})
}

func FuzzParseVerifierOutput(f *testing.F) {
	for _, tt := range badVerifierOutputs {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(`{"reward": 1, "is_correct": true, "signals": {"tests_passed": 0.8}}`))
	f.Add([]byte(`{"rewards": {"a": 1, "b": 0}}`))
	f.Add([]byte(`0.75`))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ParseVerifierOutput(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidVerifierOutput) {
				t.Fatalf("err = %v, not ErrInvalidVerifierOutput", err)
			}
			return
		}
		if math.IsNaN(res.Reward) || math.IsInf(res.Reward, 0) {
			t.Fatalf("reward %v", res.Reward)
		}
		for k, v := range res.Signals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("signal %q = %v", k, v)
			}
		}
	})
}
