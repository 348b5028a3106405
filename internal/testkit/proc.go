package testkit

import (
	"os"
	"strconv"
	"strings"
)

// Alive reports whether process pid runs: it exists and is not a zombie
// (exited, awaiting its parent's wait), going by /proc/pid/stat. Tests of
// what kills processes poll it (WaitFor) until it turns false.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses, so the
	// state is the field after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
