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

// TestEventPredicates: the final run event and the live notices are told
// apart by type and status alone, the one definition every reader of a
// stream uses.
func TestEventPredicates(t *testing.T) {
	tests := []struct {
		name          string
		typ           EventType
		status        EventStatus
		final, notice bool
	}{
		{"run created", EventRun, RunEvent(StatusRunning), false, false},
		{"run paused", EventRun, RunEvent(StatusPaused), false, false},
		{"run succeeded", EventRun, RunEvent(StatusSucceeded), true, false},
		{"run failed", EventRun, RunEvent(StatusFailed), true, false},
		{"run cancelled", EventRun, RunEvent(StatusCancelled), true, false},
		{"run stalled", EventRun, EventStalled, false, true},
		{"run unstalled", EventRun, EventUnstalled, false, true},
		{"run warning", EventRun, EventWarning, false, false},
		{"phase committed", EventPhase, EventCommitted, false, false},
		{"op started", EventOp, EventStarted, false, false},
		{"op ok", EventOp, EventOK, false, false},
		{"op error", EventOp, EventError, false, false},
		{"op waiting", EventOp, EventWaiting, false, true},
		{"op with a run's terminal status", EventOp, RunEvent(StatusSucceeded), false, false},
		{"phase waiting", EventPhase, EventWaiting, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FinalEvent(tt.typ, tt.status); got != tt.final {
				t.Errorf("FinalEvent(%s, %s) = %v, want %v", tt.typ, tt.status, got, tt.final)
			}
			if got := NoticeEvent(tt.typ, tt.status); got != tt.notice {
				t.Errorf("NoticeEvent(%s, %s) = %v, want %v", tt.typ, tt.status, got, tt.notice)
			}
		})
	}
	// The wire names are fixed.
	for got, want := range map[string]string{string(EventRun): "run", string(EventPhase): "phase", string(EventOp): "op",
		string(EventStalled): "stalled", string(EventUnstalled): "unstalled", string(EventWarning): "warning", string(EventCommitted): "committed",
		string(EventStarted): "started", string(EventOK): "ok", string(EventError): "error", string(EventWaiting): "waiting"} {
		if got != want {
			t.Errorf("wire name %q, want %q", got, want)
		}
	}
}
