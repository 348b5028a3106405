package config

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flockrun/flock/synthesis/trajectory"
)

// SourceID is AgentFlow's source id of the seed at index with content:
// "src_0007_1a2b3c4d" (index, first 8 hex of the content's md5).
func SourceID(index int, content string) string {
	sum := md5.Sum([]byte(content))
	return fmt.Sprintf("src_%04d_%s", index, hex.EncodeToString(sum[:])[:8])
}

// ParseSeeds reads seeds from data: a JSON list (of strings or
// {content, kwargs} objects), JSONL (one {content, kwargs?} per line,
// blank lines skipped), or plain text (one seed per non-blank line). The
// format is told by the first non-blank character: "[" a list, "{" JSONL,
// anything else text. limit > 0 keeps the first limit seeds. Errors name
// the line (JSONL) or element (list); an empty content is an error.
func ParseSeeds(data []byte, limit int) ([]trajectory.Seed, error) {
	trimmed := bytes.TrimSpace(data)
	trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf"))
	var seeds []trajectory.Seed
	add := func(where string, content string, kwargs map[string]any) error {
		if strings.TrimSpace(content) == "" {
			return fmt.Errorf("%w: %s: content is empty", ErrSeeds, where)
		}
		i := len(seeds)
		seeds = append(seeds, trajectory.Seed{ID: SourceID(i, content), Index: i, Content: content, Kwargs: kwargs})
		return nil
	}
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("%w: no seeds", ErrSeeds)
	case trimmed[0] == '[':
		var list []json.RawMessage
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("%w: a JSON list: %v", ErrSeeds, err)
		}
		for i, raw := range list {
			content, kwargs, err := seedValue(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: element %d: %v", ErrSeeds, i, err)
			}
			if err := add(fmt.Sprintf("element %d", i), content, kwargs); err != nil {
				return nil, err
			}
		}
	case trimmed[0] == '{':
		sc := bufio.NewScanner(bytes.NewReader(trimmed))
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			if line[0] != '{' {
				return nil, fmt.Errorf("%w: line %d: want a JSON object {\"content\": ...}", ErrSeeds, n)
			}
			content, kwargs, err := seedValue(line)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrSeeds, n, err)
			}
			if err := add(fmt.Sprintf("line %d", n), content, kwargs); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSeeds, err)
		}
	default:
		for _, line := range strings.Split(string(trimmed), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				_ = add("", line, nil)
			}
		}
	}
	if limit > 0 && len(seeds) > limit {
		seeds = seeds[:limit]
	}
	return seeds, nil
}

// seedValue decodes a string or a {content, kwargs} object.
func seedValue(raw json.RawMessage) (string, map[string]any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var o struct {
		Content *string        `json:"content"`
		Kwargs  map[string]any `json:"kwargs"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", nil, fmt.Errorf("want a string or {\"content\": string, \"kwargs\": object}: %v", err)
	}
	if o.Content == nil {
		return "", nil, fmt.Errorf("content is required")
	}
	return *o.Content, o.Kwargs, nil
}
