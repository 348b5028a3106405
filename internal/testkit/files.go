package testkit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CountLines returns the number of lines of the file at path (each up to
// 16 MiB long), 0 if it does not exist; any other error fails tb. Crash tests count the lines commands
// append to marker files to tell how often each ran.
func CountLines(tb testing.TB, path string) int {
	tb.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return n
}

// ReadLines returns the lines of the file at path that are not blank (a
// JSON Lines file's records), each up to 16 MiB long; a missing file or a
// read error fails tb.
func ReadLines(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return out
}

// ReadJSON decodes the JSON file at path into v; a read or decode error
// fails tb, naming the file.
func ReadJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

// WriteFiles writes each file of files (a slash-separated path relative
// to dir -> its content) under dir, making the directories it needs, and
// returns dir; an error fails tb.
func WriteFiles(tb testing.TB, dir string, files map[string]string) string {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}
