package state

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flockrun/flock/record"
)

// OpID returns the ID of operation index of step of run:
// "<run>/<step>/<index>" (record.OpID).
func OpID(run string, step uint64, index int) string { return record.OpID(run, step, index) }

// ParseOpID splits an ID made by OpID. The run part may itself contain '/'.
func ParseOpID(id string) (run string, step uint64, index int, err error) {
	j := strings.LastIndexByte(id, '/')
	if j <= 0 {
		return "", 0, 0, fmt.Errorf("malformed op id %q", id)
	}
	i := strings.LastIndexByte(id[:j], '/')
	if i <= 0 {
		return "", 0, 0, fmt.Errorf("malformed op id %q", id)
	}
	step, err = strconv.ParseUint(id[i+1:j], 10, 64)
	if err != nil {
		return "", 0, 0, fmt.Errorf("malformed op id %q: step: %w", id, err)
	}
	idx, err := strconv.ParseUint(id[j+1:], 10, 32)
	if err != nil {
		return "", 0, 0, fmt.Errorf("malformed op id %q: index: %w", id, err)
	}
	return id[:i], step, int(idx), nil
}
