package text2sql_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// execRaw posts text2sql:execute over HTTP and returns the status and the
// raw answer.
func execRaw(t *testing.T, url, query string) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"worker_id": "w", "action": "text2sql:execute",
		"params": map[string]any{"db_id": "concert", "query": query}})
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Post(url+"/api/v1/execute", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

type execAnswer struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Result struct {
			Columns    []string `json:"columns"`
			Rows       [][]any  `json:"rows"`
			RowCount   int      `json:"row_count"`
			Truncated  bool     `json:"truncated"`
			Truncation string   `json:"truncation"`
		} `json:"result"`
	} `json:"data"`
}

// allocated runs fn and returns the bytes the Go heap allocated meanwhile.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestExecuteAnswerBytesBounded is the attack of issue 23.5: a 170-byte
// query whose 100 rows hold 4 MB each made a 400 MB answer and took 2 GB
// of server memory. Over real HTTP with the default limits the answer
// stops at max_answer_bytes (1 MiB), each cell is cut at max_cell_bytes
// (64 KiB), the query is stopped there, and the answer says truncated and
// why.
func TestExecuteAnswerBytesBounded(t *testing.T) {
	url := newHTTP(t, newService(t, ""))
	attack := `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100) SELECT x, printf('%.*c', 4000000, 'x') AS big FROM c`
	var status int
	var raw []byte
	alloc := allocated(func() { status, raw = execRaw(t, url, attack) })
	if status != 200 {
		t.Fatalf("status %d: %.300s", status, raw)
	}
	if len(raw) > 1<<20+64<<10 {
		t.Fatalf("answer of %d bytes, want at most max_answer_bytes (1 MiB) plus a cell", len(raw))
	}
	var a execAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	r := a.Data.Result
	if !r.Truncated || r.RowCount == 0 || r.RowCount >= 100 || r.RowCount != len(r.Rows) ||
		!strings.Contains(r.Truncation, "max_answer_bytes") || !strings.Contains(r.Truncation, "max_cell_bytes") {
		t.Fatalf("rows %d, truncated %v, truncation %q", r.RowCount, r.Truncated, r.Truncation)
	}
	for i, row := range r.Rows {
		cell := row[1].(string)
		if len(cell) > 64<<10+64 || !strings.HasPrefix(cell, "xxxx") || !strings.Contains(cell, "bytes cut") {
			t.Fatalf("row %d: cell of %d bytes: %.80q...", i, len(cell), cell[max(0, len(cell)-80):])
		}
	}
	// The server no longer builds the 400 MB answer: what it allocated is
	// the driver's copy of the rows it read before stopping.
	if alloc > 256<<20 {
		t.Fatalf("the query allocated %d MB", alloc>>20)
	}
	t.Logf("answer %d bytes, %d rows, allocated %d MB", len(raw), r.RowCount, alloc>>20)
}

// TestExecuteLimitsConfigured: max_answer_bytes and max_cell_bytes set in
// apis.text2sql; a value larger than the engine allows a row (a single
// 200 MB blob, or 40 columns of 10 MB) is refused with 4000 naming the
// limit, without building it.
func TestExecuteLimitsConfigured(t *testing.T) {
	url := newHTTP(t, newService(t, `, "max_answer_bytes": 3000, "max_cell_bytes": 300`))
	status, raw := execRaw(t, url, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100) SELECT x, printf('%.*c', 300, 'é') FROM c`)
	var a execAnswer
	if err := json.Unmarshal(raw, &a); err != nil || status != 200 {
		t.Fatalf("%d %s: %v", status, raw, err)
	}
	r := a.Data.Result
	if !r.Truncated || r.RowCount == 0 || r.RowCount > 20 {
		t.Fatalf("rows %d truncated %v: %s", r.RowCount, r.Truncated, raw)
	}
	for _, row := range r.Rows {
		cell := row[1].(string)
		head, _, ok := strings.Cut(cell, "…[")
		if !ok || len(cell) > 300 || len(head) < 200 || strings.Trim(head, "é") != "" || !strings.HasSuffix(cell, " bytes cut]") {
			t.Fatalf("cell of %d bytes: %q", len(cell), cell)
		}
	}
	// Small answers are untouched.
	status, raw = execRaw(t, url, "SELECT name FROM singer ORDER BY name LIMIT 2")
	a = execAnswer{}
	if err := json.Unmarshal(raw, &a); err != nil || status != 200 || a.Data.Result.Truncated || a.Data.Result.Truncation != "" {
		t.Fatalf("%d %s", status, raw)
	}

	big := newHTTP(t, newService(t, ""))
	wide := "SELECT " + strings.TrimSuffix(strings.Repeat("zeroblob(10000000), ", 40), ", ")
	for _, q := range []string{"SELECT zeroblob(200000000)", wide} {
		var status int
		var raw []byte
		alloc := allocated(func() { status, raw = execRaw(t, big, q) })
		a = execAnswer{}
		if err := json.Unmarshal(raw, &a); err != nil || status != 400 || a.Code != 4000 || !strings.Contains(a.Message, "bytes") {
			t.Fatalf("%.40s: %d %s", q, status, raw)
		}
		if alloc > 128<<20 {
			t.Fatalf("%.40s: allocated %d MB", q, alloc>>20)
		}
	}
}

// postBody posts raw bytes to path and returns the status and answer.
func postBody(t *testing.T, url, path string, body io.Reader) (int, []byte) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Post(url+path, "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// TestRequestBodyBounded is the attack of issue 23.5: any route read a
// JSON body of up to 100 MB into map[string]any (a 50 MB body took the
// server from 70 MB to 1.25 GB) and echoed the params back in inputs. Over
// real HTTP with the server's defaults: a 50 MB body is refused with 413
// before it is read whole; a small body of very many values is refused
// before it is decoded; a large param is echoed cut.
func TestRequestBodyBounded(t *testing.T) {
	url := newHTTP(t, newService(t, ""))
	big := `{"worker_id":"w","action":"text2sql:list_databases","params":{"x":"` + strings.Repeat("a", 50<<20) + `"}}`
	var status int
	var raw []byte
	alloc := allocated(func() { status, raw = postBody(t, url, "/api/v1/execute", strings.NewReader(big)) })
	if status != http.StatusRequestEntityTooLarge || !json.Valid(raw) {
		t.Fatalf("50 MB body: %d %.200s", status, raw)
	}
	if alloc > 80<<20 {
		t.Fatalf("a refused 50 MB body allocated %d MB", alloc>>20)
	}

	many := `{"worker_id":"w","action":"text2sql:list_databases","params":{"x":[` + strings.Repeat("0,", 300000) + `0]}}`
	alloc = allocated(func() { status, raw = postBody(t, url, "/api/v1/execute", strings.NewReader(many)) })
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), "JSON values") {
		t.Fatalf("300,000 values: %d %.300s", status, raw)
	}
	if alloc > 16<<20 {
		t.Fatalf("a refused body of 300,000 values allocated %d MB", alloc>>20)
	}

	echo := map[string]any{"worker_id": "w", "action": "text2sql:list_databases",
		"params": map[string]any{"x": strings.Repeat("b", 1<<20), "list": make([]int, 5000)}}
	b, _ := json.Marshal(echo)
	status, raw = postBody(t, url, "/api/v1/execute", bytes.NewReader(b))
	var a struct {
		Code int `json:"code"`
		Data struct {
			Inputs map[string]any `json:"inputs"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || status != 200 || a.Code != 0 {
		t.Fatalf("echo: %d %.300s", status, raw)
	}
	x, _ := a.Data.Inputs["x"].(string)
	if len(raw) > 32<<10 || !strings.HasPrefix(x, "bbbb") || !strings.Contains(x, "bytes cut") || a.Data.Inputs["worker_id"] != "w" {
		t.Fatalf("echo of %d bytes: inputs %.300v", len(raw), a.Data.Inputs)
	}
	// The name of an unknown tool is not echoed whole either.
	b, _ = json.Marshal(map[string]any{"worker_id": "w", "action": "text2sql:" + strings.Repeat("n", 1<<20)})
	status, raw = postBody(t, url, "/api/v1/execute", bytes.NewReader(b))
	if status != 400 || len(raw) > 8<<10 {
		t.Fatalf("unknown tool: %d, %d bytes", status, len(raw))
	}
}
