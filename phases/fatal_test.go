package phases_test

import (
	"reflect"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/record"
)

func TestFatalEnd(t *testing.T) {
	gen := func(code operations.Code, msg string) operations.Result {
		return operations.Result{Kind: operations.KindGenerate, Code: code, Error: msg}
	}
	child := func(status record.Status, reason, msg string) operations.Result {
		return operations.Result{Kind: operations.KindSpawn, Data: &operations.SpawnResult{Status: status, EndReason: reason, Error: msg}}
	}
	tests := []struct {
		name    string
		results []operations.Result
		want    *phases.End
	}{
		{name: "none", results: []operations.Result{gen("", "")}},
		{name: "transient", results: []operations.Result{gen(operations.CodeUnavailable, "503"), gen(operations.CodeTimeout, "slow")}},
		{name: "no code", results: []operations.Result{gen("", "script exhausted")}},
		{name: "model error", results: []operations.Result{gen(operations.CodeTimeout, "slow"), gen(operations.CodeModelError, "401")},
			want: &phases.End{Failed: true, Reason: record.ReasonModelError, Error: "401"}},
		{name: "first fatal wins", results: []operations.Result{gen(operations.CodeRateLimited, "429"), gen(operations.CodeModelError, "401")},
			want: &phases.End{Failed: true, Reason: record.ReasonRateLimited, Error: "429"}},
		{name: "child ended on one", results: []operations.Result{child(record.StatusFailed, "model_error", "dns")},
			want: &phases.End{Failed: true, Reason: record.ReasonModelError, Error: "dns"}},
		{name: "child failed otherwise", results: []operations.Result{child(record.StatusFailed, "no_valid_action", "no_valid_action")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := phases.FatalEnd(tt.results)
			if (got == nil) != (tt.want == nil) || got != nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("FatalEnd = %+v, want %+v", got, tt.want)
			}
			called := false
			p := phases.EndOnFatal(func(phases.Input) (phases.Output, error) { called = true; return phases.Output{}, nil })
			out, _ := p(phases.Input{Results: tt.results})
			if called != (tt.want == nil) || (out.End != nil) != (tt.want != nil) {
				t.Fatalf("EndOnFatal: called %v, end %+v", called, out.End)
			}
		})
	}
}
