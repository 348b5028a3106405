package rollout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Task is one benchmark row.
type Task struct {
	// Index is the row's position in the benchmark file, from 0.
	Index int    `json:"index"`
	ID    string `json:"id"`
	// Question is the agent's task text.
	Question string `json:"question"`
	// References are the acceptable answers; empty when the row has none.
	References []string `json:"references,omitempty"`
	// Kwargs are the row's kwargs object, passed to the agent's settings as
	// task_kwargs.
	Kwargs json.RawMessage `json:"kwargs,omitempty"`
	// Verifier is the row's own verifier command.
	Verifier string `json:"verifier,omitempty"`
	// Metadata holds every other key of the row.
	Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
	// Row is the row as it was in the file (a JSON object).
	Row json.RawMessage `json:"row"`
}

// Keys read from a benchmark row, in order of preference.
var (
	idKeys       = []string{"id", "task_id"}
	questionKeys = []string{"question", "query", "input", "instruction", "prompt"}
	answerKeys   = []string{"answer", "ground_truth", "expected"}
)

// ParseBenchmark reads a benchmark: JSONL (one object per line; blank lines
// and lines starting with # are skipped), a JSON list of objects, or a JSON
// object {"data": [...]}. Each row needs a question (question, query,
// input, instruction or prompt); its id is id or task_id (a string or a
// number; default: its position), unique in the file; its answer is
// answer, ground_truth or expected (a string, a number, or a list of
// acceptable answers); kwargs and verifier are read too; every other key
// is metadata.
func ParseBenchmark(data []byte) ([]Task, error) {
	rows, err := splitRows(data)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: no tasks", ErrBenchmark)
	}
	seen := make(map[string]int, len(rows))
	tasks := make([]Task, 0, len(rows))
	for i, r := range rows {
		t, err := parseRow(i, r.raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBenchmark, r.where, err)
		}
		if j, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("%w: %s: id %q is also the id of row %d", ErrBenchmark, r.where, t.ID, j)
		}
		seen[t.ID] = i
		tasks = append(tasks, t)
	}
	return tasks, nil
}

type rawRow struct {
	where string
	raw   json.RawMessage
}

func splitRows(data []byte) ([]rawRow, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("%w: JSON list: %v", ErrBenchmark, err)
		}
		return indexed(list), nil
	}
	var doc struct {
		Data []json.RawMessage `json:"data"`
	}
	if json.Unmarshal(trimmed, &doc) == nil && doc.Data != nil {
		return indexed(doc.Data), nil
	}
	var rows []rawRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if !json.Valid(line) {
			return nil, fmt.Errorf("%w: line %d: not valid JSON", ErrBenchmark, n)
		}
		rows = append(rows, rawRow{where: "line " + strconv.Itoa(n), raw: append(json.RawMessage(nil), line...)})
	}
	return rows, sc.Err()
}

func indexed(list []json.RawMessage) []rawRow {
	rows := make([]rawRow, len(list))
	for i, r := range list {
		rows[i] = rawRow{where: "item " + strconv.Itoa(i), raw: r}
	}
	return rows
}

func parseRow(index int, raw json.RawMessage) (Task, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Task{}, fmt.Errorf("not a JSON object")
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw)
	t := Task{Index: index, ID: strconv.Itoa(index), Row: compact.Bytes()}
	used := map[string]bool{}
	if k, v, ok := first(obj, idKeys); ok {
		used[k] = true
		id, ok := scalar(v)
		if !ok || id == "" {
			return t, fmt.Errorf("%s: want a non-empty string or a number", k)
		}
		t.ID = id
	}
	k, v, ok := first(obj, questionKeys)
	if !ok {
		return t, fmt.Errorf("no question (one of %s)", strings.Join(questionKeys, ", "))
	}
	used[k] = true
	if json.Unmarshal(v, &t.Question) != nil || strings.TrimSpace(t.Question) == "" {
		return t, fmt.Errorf("%s: want a non-empty string", k)
	}
	if k, v, ok := first(obj, answerKeys); ok {
		used[k] = true
		refs, err := references(v)
		if err != nil {
			return t, fmt.Errorf("%s: %v", k, err)
		}
		t.References = refs
	}
	if v, ok := obj["kwargs"]; ok && string(v) != "null" {
		used["kwargs"] = true
		if bytes.TrimSpace(v)[0] != '{' {
			return t, fmt.Errorf("kwargs: want a JSON object")
		}
		t.Kwargs = v
	}
	if v, ok := obj["verifier"]; ok && string(v) != "null" {
		used["verifier"] = true
		if json.Unmarshal(v, &t.Verifier) != nil {
			return t, fmt.Errorf("verifier: want a command string")
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if !used[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if t.Metadata == nil {
			t.Metadata = map[string]json.RawMessage{}
		}
		t.Metadata[k] = obj[k]
	}
	return t, nil
}

// first returns the first key of keys present (and not null) in obj.
func first(obj map[string]json.RawMessage, keys []string) (string, json.RawMessage, bool) {
	for _, k := range keys {
		if v, ok := obj[k]; ok && string(bytes.TrimSpace(v)) != "null" {
			return k, v, true
		}
	}
	return "", nil, false
}

// scalar reads a string, number or boolean as text.
func scalar(v json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, true
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if dec.Decode(&n) == nil {
		return n.String(), true
	}
	t := string(bytes.TrimSpace(v))
	if t == "true" || t == "false" {
		return t, true
	}
	return "", false
}

func references(v json.RawMessage) ([]string, error) {
	if s, ok := scalar(v); ok {
		return []string{s}, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) != nil {
		return nil, fmt.Errorf("want a string, a number or a list of them")
	}
	out := make([]string, 0, len(list))
	for i, x := range list {
		s, ok := scalar(x)
		if !ok {
			return nil, fmt.Errorf("[%d]: want a string or a number", i)
		}
		out = append(out, s)
	}
	return out, nil
}
