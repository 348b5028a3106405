package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flockrun/flock/state"
)

// TestBadOpsCursor: a cursor that is not an op id of this run is the
// client's mistake (400 naming "after"), not a server error.
func TestBadOpsCursor(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.log", "")
	other := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)
	e.waitStatus(t, other, state.StatusSucceeded)
	tests := []struct {
		name  string
		after string
		want  string
	}{
		{"not an op id", "abc", `after: must be an op id of run ` + id},
		{"negative", "-1", `after: must be an op id of run ` + id},
		{"negative index", id + "/1/-1", `after: must be an op id of run ` + id},
		{"step not a number", id + "/x/0", `after: must be an op id of run ` + id},
		{"op of another run", other + "/1/0", `after: ` + `"` + other + `/1/0" is an op of run ` + other + `, not of run ` + id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodGet, "/runs/"+id+"/ops?after="+url.QueryEscape(tt.after), nil)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q does not contain %q", msg, tt.want)
			}
		})
	}
	// A valid cursor still pages.
	var p struct {
		Ops []struct {
			ID string `json:"id"`
		} `json:"ops"`
	}
	e.getJSON(t, "/runs/"+id+"/ops?after="+url.QueryEscape(id+"/1/0"), &p)
	if len(p.Ops) != 2 || p.Ops[0].ID != id+"/1/1" {
		t.Fatalf("after %s/1/0: %+v", id, p.Ops)
	}
}
