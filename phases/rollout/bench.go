package rollout

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
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
	// Messages is the row's input when it is a list of chat messages
	// ({"role", "content"}); Question is then its last user message.
	Messages json.RawMessage `json:"messages,omitempty"`
	// Choices are a multiple-choice row's options; Question then lists them
	// lettered A, B, ... and References are the target's letter and text.
	Choices []string `json:"choices,omitempty"`
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

// Benchmark formats (Settings.DataFormat).
const (
	FormatJSONL   = "jsonl"
	FormatJSON    = "json"
	FormatCSV     = "csv"
	FormatTSV     = "tsv"
	FormatParquet = "parquet"
)

// Fields a benchmark row maps onto (Settings.Fields keys).
var fieldNames = []string{"id", "question", "answer", "choices", "kwargs", "verifier"}

// formatOf returns the format of a benchmark file: format when given, else
// by the file's extension (JSON lines or a JSON document otherwise).
func formatOf(format, path string) string {
	if format != "" {
		return format
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return FormatCSV
	case ".tsv", ".tab":
		return FormatTSV
	case ".parquet", ".pq":
		return FormatParquet
	}
	return FormatJSONL
}

// ParseBenchmarkAs reads a benchmark in format (csv, tsv, or JSON —
// Parquet arrives as JSON lines, converted by the read) with fields
// mapping flock's field names (id, question, answer, choices, kwargs,
// verifier) to the file's own column names.
func ParseBenchmarkAs(data []byte, format string, fields map[string]string) ([]Task, error) {
	var rows []rawRow
	var err error
	switch format {
	case FormatCSV, FormatTSV:
		rows, err = splitTable(data, format)
	default:
		rows, err = splitRows(data)
	}
	if err != nil {
		return nil, err
	}
	return parseRows(rows, fields)
}

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
	return parseRows(rows, nil)
}

func parseRows(rows []rawRow, fields map[string]string) ([]Task, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: no tasks", ErrBenchmark)
	}
	seen := make(map[string]int, len(rows))
	tasks := make([]Task, 0, len(rows))
	for i, r := range rows {
		t, err := parseRow(i, r.raw, fields)
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

// splitTable reads CSV or TSV with a header row. A cell is a JSON string,
// except one that holds a JSON array or object (choices, kwargs, a list of
// answers or of chat messages), which is taken as that; an empty cell is
// absent.
func splitTable(data []byte, format string) ([]rawRow, error) {
	r := csv.NewReader(bytes.NewReader(data))
	if format == FormatTSV {
		r.Comma = '\t'
		r.LazyQuotes = true
	}
	r.FieldsPerRecord = 0
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: %s header: %v", ErrBenchmark, format, err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	var rows []rawRow
	for n := 2; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBenchmark, format, err)
		}
		obj := make(map[string]json.RawMessage, len(rec))
		for i, cell := range rec {
			c := strings.TrimSpace(cell)
			if c == "" {
				continue
			}
			if (c[0] == '[' || c[0] == '{') && json.Valid([]byte(c)) {
				obj[header[i]] = json.RawMessage(c)
				continue
			}
			b, _ := json.Marshal(cell)
			obj[header[i]] = b
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rawRow{where: "line " + strconv.Itoa(n), raw: b})
	}
	return rows, nil
}

func indexed(list []json.RawMessage) []rawRow {
	rows := make([]rawRow, len(list))
	for i, r := range list {
		rows[i] = rawRow{where: "item " + strconv.Itoa(i), raw: r}
	}
	return rows
}

func parseRow(index int, raw json.RawMessage, fields map[string]string) (Task, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Task{}, fmt.Errorf("not a JSON object")
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw)
	t := Task{Index: index, ID: strconv.Itoa(index), Row: compact.Bytes()}
	used := map[string]bool{}
	// keys returns the column of field: the mapped one, else the defaults.
	col := func(field string, defaults ...string) []string {
		if c, ok := fields[field]; ok {
			return []string{c}
		}
		return defaults
	}
	if k, v, ok := first(obj, col("id", idKeys...)); ok {
		used[k] = true
		id, ok := scalar(v)
		if !ok || id == "" {
			return t, fmt.Errorf("%s: want a non-empty string or a number", k)
		}
		t.ID = id
	}
	qk := col("question", questionKeys...)
	k, v, ok := first(obj, qk)
	if !ok {
		return t, fmt.Errorf("no question (one of %s)", strings.Join(qk, ", "))
	}
	used[k] = true
	if err := readQuestion(&t, v); err != nil {
		return t, fmt.Errorf("%s: %v", k, err)
	}
	if k, v, ok := first(obj, col("choices", "choices")); ok {
		used[k] = true
		if json.Unmarshal(v, &t.Choices) != nil || len(t.Choices) < 2 {
			return t, fmt.Errorf("%s: want a list of at least two strings", k)
		}
		if len(t.Choices) > 26 {
			return t, fmt.Errorf("%s: %d choices; at most 26 (A to Z)", k, len(t.Choices))
		}
	}
	if k, v, ok := first(obj, col("answer", answerKeys...)); ok {
		used[k] = true
		if t.Choices != nil {
			refs, err := choiceTarget(v, t.Choices)
			if err != nil {
				return t, fmt.Errorf("%s: %v", k, err)
			}
			t.References = refs
		} else {
			refs, err := references(v)
			if err != nil {
				return t, fmt.Errorf("%s: %v", k, err)
			}
			t.References = refs
		}
	}
	if t.Choices != nil {
		t.Question = choiceQuestion(t.Question, t.Choices)
	}
	if k, v, ok := first(obj, col("kwargs", "kwargs")); ok {
		used[k] = true
		if bytes.TrimSpace(v)[0] != '{' {
			return t, fmt.Errorf("%s: want a JSON object", k)
		}
		t.Kwargs = v
	}
	if k, v, ok := first(obj, col("verifier", "verifier")); ok {
		used[k] = true
		if json.Unmarshal(v, &t.Verifier) != nil {
			return t, fmt.Errorf("%s: want a command string", k)
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

// readQuestion reads the row's input: a string, or a list of chat messages
// whose last user message becomes the question.
func readQuestion(t *Task, v json.RawMessage) error {
	if json.Unmarshal(v, &t.Question) == nil {
		if strings.TrimSpace(t.Question) == "" {
			return fmt.Errorf("want a non-empty string or a list of chat messages")
		}
		return nil
	}
	var msgs []struct {
		Role    string  `json:"role"`
		Content *string `json:"content"`
	}
	if json.Unmarshal(v, &msgs) != nil || len(msgs) == 0 {
		return fmt.Errorf("want a non-empty string or a list of chat messages")
	}
	for i, m := range msgs {
		first := i == 0 || (i == 1 && msgs[0].Role == "system")
		switch {
		case m.Role != "system" && m.Role != "user" && m.Role != "assistant":
			return fmt.Errorf("[%d]: role %q is not system, user or assistant", i, m.Role)
		case m.Role == "system" && i != 0:
			return fmt.Errorf("[%d]: a system message may only come first", i)
		case first && m.Role == "assistant":
			return fmt.Errorf("[%d]: the first message after the system prompt must be the user's", i)
		case m.Content == nil:
			return fmt.Errorf("[%d]: content: want a string", i)
		case m.Role == "user":
			t.Question = *m.Content
		}
	}
	if strings.TrimSpace(t.Question) == "" {
		return fmt.Errorf("no user message with content")
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, v)
	t.Messages = compact.Bytes()
	return nil
}

// choiceQuestion lists the choices under the question.
func choiceQuestion(q string, choices []string) string {
	var b strings.Builder
	b.WriteString(q)
	b.WriteString("\n")
	for i, c := range choices {
		fmt.Fprintf(&b, "\n%c) %s", 'A'+i, c)
	}
	b.WriteString("\n\nAnswer with the letter of the correct choice.")
	return b.String()
}

// choiceTarget reads a multiple-choice target — a letter, the choice's
// text or a 0-based index (a number, or digits that are no choice's text)
// — as the references [letter, text].
func choiceTarget(v json.RawMessage, choices []string) ([]string, error) {
	var n int
	if json.Unmarshal(v, &n) == nil {
		if n < 0 || n >= len(choices) {
			return nil, fmt.Errorf("index %d is not one of the %d choices (0-based)", n, len(choices))
		}
		return []string{string(rune('A' + n)), choices[n]}, nil
	}
	s, ok := scalar(v)
	if !ok {
		return nil, fmt.Errorf("want a letter, a 0-based index or a choice's text")
	}
	s = strings.TrimSpace(s)
	if len(s) == 1 {
		i := int(strings.ToUpper(s)[0]) - 'A'
		if i >= 0 && i < len(choices) {
			return []string{string(rune('A' + i)), choices[i]}, nil
		}
	}
	for i, c := range choices {
		if c == s {
			return []string{string(rune('A' + i)), c}, nil
		}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < len(choices) {
		// An index written as text (CSV cells are text).
		return []string{string(rune('A' + n)), choices[n]}, nil
	}
	return nil, fmt.Errorf("%q is not a letter A-%c, an index or one of the choices", s, 'A'+len(choices)-1)
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
