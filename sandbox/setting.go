package sandbox

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Bounds every duration setting of the config (the server section's and
// the backends' *_s, timeout settings) is checked against unless a setting
// names tighter ones: a value that rounds to nothing (1e-10) or that
// overflows a time.Duration (1e300) is refused at load, never used.
const (
	MinSeconds = time.Millisecond
	MaxSeconds = 10_000_000 * time.Second // about 115 days
	// MaxOutputLimit bounds the output_limit settings (bytes kept of a
	// command's output).
	MaxOutputLimit = 1 << 30
)

// SecondsSetting reads cfg[key], a number of seconds, as a duration from
// lo to hi (inclusive). ok is false when the key is absent or null. A
// value of another type or out of range is a *ConfigError whose Path is
// section.key, or key when section is "" (the service prefixes a path
// relative to the backend's section).
func SecondsSetting(cfg map[string]any, section, key string, lo, hi time.Duration) (d time.Duration, ok bool, err error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	d, err = seconds(v, lo, hi)
	if err != nil {
		return 0, false, &ConfigError{Path: settingPath(section, key), Reason: err.Error()}
	}
	return d, true, nil
}

// IntSetting reads cfg[key] as a whole number from lo to hi
// (inclusive). ok is false when the key is absent or null. A fraction, a
// value of another type or one out of range is a *ConfigError naming
// section.key as SecondsSetting does.
func IntSetting(cfg map[string]any, section, key string, lo, hi int64) (n int64, ok bool, err error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	f, isNum := number(v)
	switch {
	case !isNum:
		return 0, false, &ConfigError{Path: settingPath(section, key), Reason: fmt.Sprintf("want a whole number from %d to %d", lo, hi)}
	case f != math.Trunc(f) || f < float64(lo) || f > float64(hi):
		return 0, false, &ConfigError{Path: settingPath(section, key), Reason: fmt.Sprintf("want a whole number from %d to %d, got %s", lo, hi, formatNumber(f))}
	}
	return int64(f), true, nil
}

func settingPath(section, key string) string {
	if section == "" {
		return key
	}
	return section + "." + key
}

// seconds converts a number of seconds to a duration from min to max.
func seconds(v any, lo, hi time.Duration) (time.Duration, error) {
	f, ok := number(v)
	if !ok {
		return 0, fmt.Errorf("want a number of seconds from %s to %s", formatSeconds(lo), formatSeconds(hi))
	}
	if f < lo.Seconds() || f > hi.Seconds() {
		return 0, fmt.Errorf("want a number of seconds from %s to %s, got %s", formatSeconds(lo), formatSeconds(hi), formatNumber(f))
	}
	return min(max(time.Duration(f*float64(time.Second)), lo), hi), nil
}

// number returns v as a float64 when it is a JSON number: float64 after
// ParseConfig, json.Number, or a Go integer from a config built in Go.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func formatSeconds(d time.Duration) string { return formatNumber(d.Seconds()) }
