package testkit

import (
	"bufio"
	"os"
	"testing"
)

// CountLines returns the number of lines of the file at path, 0 if it does
// not exist; any other error fails tb. Crash tests count the lines commands
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
	for s := bufio.NewScanner(f); s.Scan(); {
		n++
	}
	return n
}
