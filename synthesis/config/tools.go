package config

import (
	"fmt"
	"slices"
	"strings"
)

// ExpandTools resolves available_tools against the sandbox's tool names
// (full names "resource:tool"): a "resource:*" pattern stands for every
// tool of that resource, sorted; a full name must exist. The result keeps
// the patterns' order without duplicates. A name the sandbox lacks, or a
// pattern matching nothing, is ErrTools naming it and its index.
func ExpandTools(patterns, names []string) ([]string, error) {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for i, p := range patterns {
		if r, ok := strings.CutSuffix(p, ":*"); ok {
			n := 0
			for _, name := range sorted {
				if strings.HasPrefix(name, r+":") {
					add(name)
					n++
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%w: available_tools[%d]: %q matches no tool of the sandbox", ErrTools, i, p)
			}
			continue
		}
		if _, found := slices.BinarySearch(sorted, p); !found {
			return nil, fmt.Errorf("%w: available_tools[%d]: %q", ErrTools, i, p)
		}
		add(p)
	}
	return out, nil
}
