package phases

import (
	"encoding/json"
	"fmt"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
)

// NewEntry encodes v as an entry of type typ. HTML characters are kept as
// they are (no \u003c escapes), so raw JSON inside v, such as a tool call's
// arguments, reads back byte for byte.
func NewEntry(typ string, v any) (Entry, error) { return record.NewEntry(typ, v) }

// Marshal is json.Marshal without HTML escaping (record.Marshal).
func Marshal(v any) ([]byte, error) { return record.Marshal(v) }

// MustEntry is NewEntry for values that always encode (plain structs).
func MustEntry(typ string, v any) Entry {
	e, err := NewEntry(typ, v)
	if err != nil {
		panic(err)
	}
	return e
}

// GetVar decodes var name into v. It reports false if the var is unset.
func GetVar(s State, name string, v any) (bool, error) {
	raw := s.Var(name)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("decode var %q: %w", name, err)
	}
	return true, nil
}

// SetVar encodes v into out.Set[name].
func (o *Output) SetVar(name string, v any) error {
	b, err := Marshal(v)
	if err != nil {
		return fmt.Errorf("encode var %q: %w", name, err)
	}
	if o.Set == nil {
		o.Set = make(map[string]json.RawMessage)
	}
	o.Set[name] = b
	return nil
}

// Last returns the index of the newest entry of type typ, or -1.
func Last(s State, typ string) int {
	for i := s.Len() - 1; i >= 0; i-- {
		if s.Entry(i).Type == typ {
			return i
		}
	}
	return -1
}

// FatalEnd returns how a run ends when one of results is a failure no
// later step can fix (operations.Result.Fatal: the model's endpoint will
// not serve the call, a rate limit the run cannot outwait, or a child run
// that ended on one): failed, with the failure code as end reason
// (record.ReasonModelError, ReasonRateLimited) and its message as the
// run's error. It is nil when there is none. The first such result, in
// request order, decides.
func FatalEnd(results []operations.Result) *End {
	for _, r := range results {
		if code, msg, ok := r.Fatal(); ok {
			if msg == "" {
				msg = string(code)
			}
			return &End{Failed: true, Reason: string(code), Error: msg}
		}
	}
	return nil
}

// EndOnFatal wraps p for an agent that does not re-plan around a failure
// that cannot get better: when the previous step's results hold one
// (FatalEnd), the run ends with it at once and p is not called.
func EndOnFatal(p Phase) Phase {
	return func(in Input) (Output, error) {
		if end := FatalEnd(in.Results); end != nil {
			return Output{End: end}, nil
		}
		return p(in)
	}
}
