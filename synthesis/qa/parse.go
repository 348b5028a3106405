package qa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/flockrun/flock/internal/jsontext"
	"github.com/flockrun/flock/synthesis/trajectory"
)

// Limits on the replies Parse examines.
const (
	maxReply    = 1 << 20 // bytes
	maxAttempts = 64      // '{' positions tried as object starts
)

// Parse reads a QA pair from a model's reply. The pair is a JSON object
// with a string "question", an "answer" (a string; a JSON number or boolean
// is taken as its text) and "reasoning_steps", a list of objects {hop,
// fact, evidence, output}. The object may be the whole reply, sit in a
// fenced ```json block, or be surrounded by other text: the first object
// (outermost first, then nested) with a "question" or "answer" key is the
// pair. Objects are found by a brace-balancing, string-aware scan; keys
// other than these are ignored.
//
// A missing or null reasoning_steps is an empty list (the hops check then
// fails with its reason); a step's missing hop is its position, from 1, and
// a hop written as a numeric string is read as a number. Anything else out
// of shape is an error wrapping ErrInvalidReply that names the field and
// what it holds ("reasoning_steps[1].evidence is an object, want a
// string"), as is a reply with no JSON object, an unterminated one, or one
// that is not valid JSON (with the decoder's message and the object's
// offset). A reply over 1 MiB is refused, and only the first 64 '{' are
// tried as object starts, which bounds the work on hostile input.
func Parse(reply string) (trajectory.QA, error) {
	if len(reply) > maxReply {
		return trajectory.QA{}, fmt.Errorf("%w: reply is %d bytes, over the %d limit", ErrInvalidReply, len(reply), maxReply)
	}
	var firstErr error
	note := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	attempts, sawObject := 0, false
	for i := 0; i < len(reply) && attempts < maxAttempts; i++ {
		k := strings.IndexByte(reply[i:], '{')
		if k < 0 {
			break
		}
		i += k
		attempts++
		end := jsontext.ObjectEnd(reply[i:])
		if end < 0 {
			note(fmt.Errorf("%w: the JSON object at offset %d is not closed", ErrInvalidReply, i))
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(reply[i:i+end]), &obj); err != nil {
			note(fmt.Errorf("%w: the object at offset %d is not valid JSON: %v", ErrInvalidReply, i, err))
			continue
		}
		sawObject = true
		_, hasQ := obj["question"]
		_, hasA := obj["answer"]
		if !hasQ && !hasA {
			continue
		}
		return pairFrom(obj)
	}
	if firstErr != nil {
		return trajectory.QA{}, firstErr
	}
	if sawObject {
		return trajectory.QA{}, fmt.Errorf("%w: no JSON object with a \"question\" field", ErrInvalidReply)
	}
	return trajectory.QA{}, fmt.Errorf("%w: no JSON object in the reply", ErrInvalidReply)
}

func pairFrom(obj map[string]json.RawMessage) (trajectory.QA, error) {
	var (
		q   trajectory.QA
		err error
	)
	if q.Question, err = stringField(obj, "question", "question", false); err != nil {
		return trajectory.QA{}, err
	}
	if q.Answer, err = stringField(obj, "answer", "answer", true); err != nil {
		return trajectory.QA{}, err
	}
	raw, ok := obj["reasoning_steps"]
	if !ok || isNull(raw) {
		return q, nil
	}
	var steps []json.RawMessage
	if kind(raw) != "a list" {
		return trajectory.QA{}, fmt.Errorf("%w: reasoning_steps is %s, want a list", ErrInvalidReply, kind(raw))
	}
	if err := json.Unmarshal(raw, &steps); err != nil {
		return trajectory.QA{}, fmt.Errorf("%w: reasoning_steps: %v", ErrInvalidReply, err)
	}
	q.ReasoningSteps = make([]trajectory.Hop, 0, len(steps))
	for i, s := range steps {
		h, err := hopFrom(s, i)
		if err != nil {
			return trajectory.QA{}, err
		}
		q.ReasoningSteps = append(q.ReasoningSteps, h)
	}
	return q, nil
}

func hopFrom(raw json.RawMessage, i int) (trajectory.Hop, error) {
	name := fmt.Sprintf("reasoning_steps[%d]", i)
	if kind(raw) != "an object" {
		return trajectory.Hop{}, fmt.Errorf("%w: %s is %s, want an object", ErrInvalidReply, name, kind(raw))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return trajectory.Hop{}, fmt.Errorf("%w: %s: %v", ErrInvalidReply, name, err)
	}
	h := trajectory.Hop{Hop: i + 1}
	if r, ok := obj["hop"]; ok && !isNull(r) {
		n, err := hopNumber(r)
		if err != nil {
			return trajectory.Hop{}, fmt.Errorf("%w: %s.hop %v", ErrInvalidReply, name, err)
		}
		h.Hop = n
	}
	var err error
	for _, f := range []struct {
		key string
		dst *string
	}{{"fact", &h.Fact}, {"evidence", &h.Evidence}, {"output", &h.Output}} {
		r, ok := obj[f.key]
		if !ok || isNull(r) {
			continue
		}
		if *f.dst, err = stringField(obj, f.key, name+"."+f.key, true); err != nil {
			return trajectory.Hop{}, err
		}
	}
	return h, nil
}

// hopNumber reads a hop number written as a JSON integer or a string
// holding one.
func hopNumber(r json.RawMessage) (int, error) {
	var s string
	switch kind(r) {
	case "a number":
		s = string(r)
	case "a string":
		_ = json.Unmarshal(r, &s)
		s = strings.TrimSpace(s)
	default:
		return 0, fmt.Errorf("is %s, want a number", kind(r))
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("is %s, want a whole number", truncate(string(r), 40))
	}
	return n, nil
}

// stringField reads obj[key] as a string; name is the field's path for
// errors. With scalars set, a JSON number or boolean is taken as its text.
// A missing or null field is an error for "question" and "answer" only.
func stringField(obj map[string]json.RawMessage, key, name string, scalars bool) (string, error) {
	r, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("%w: no %q field", ErrInvalidReply, key)
	}
	switch k := kind(r); {
	case k == "a string":
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrInvalidReply, name, err)
		}
		return s, nil
	case scalars && (k == "a number" || k == "a boolean"):
		return string(bytes.TrimSpace(r)), nil
	default:
		return "", fmt.Errorf("%w: %s is %s, want a string", ErrInvalidReply, name, k)
	}
}

// kind names the JSON type of r, for errors.
func kind(r json.RawMessage) string {
	r = bytes.TrimSpace(r)
	if len(r) == 0 {
		return "empty"
	}
	switch r[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(r json.RawMessage) bool { return kind(r) == "null" }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
