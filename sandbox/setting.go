package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flockrun/flock/phases/settings"
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

// Seconds is a duration setting written as a number of seconds, for a
// backend's tagged config struct (see Env.Decode). Its field's min and max
// tags, in seconds, bound it (MinSeconds and MaxSeconds when absent); a
// value of another type or out of range is refused naming the bounds:
// "want a number of seconds from 0.001 to 1e+07, got 1e-10". Use a
// *Seconds, nil when the key is absent or null, with the default as its
// tag (`default:"30"`): 0 written is a value to refuse, not unset.
type Seconds float64

// UnmarshalJSON takes any JSON value: what is not a number is refused by
// CheckBounds, which knows the bounds to name.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if json.Unmarshal(b, &f) != nil {
		f = math.NaN()
	}
	*s = Seconds(f)
	return nil
}

// CheckBounds implements settings.Bounded.
func (s Seconds) CheckBounds(lo, hi *float64) error {
	l, h := MinSeconds.Seconds(), MaxSeconds.Seconds()
	if lo != nil {
		l = *lo
	}
	if hi != nil {
		h = *hi
	}
	f := float64(s)
	if math.IsNaN(f) {
		return fmt.Errorf("want a number of seconds from %s to %s", formatNumber(l), formatNumber(h))
	}
	if f < l || f > h {
		return fmt.Errorf("want a number of seconds from %s to %s, got %s", formatNumber(l), formatNumber(h), formatNumber(f))
	}
	return nil
}

// Duration returns the setting as a duration.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// Count is a whole-number setting (bytes, items, seconds counted whole),
// for a backend's tagged config struct: its field's min and max tags bound
// it (both required), and a fraction, a value of another type or one out
// of range is refused naming them: "want a whole number from 1 to 1024,
// got 1.5". Use a *Count, nil when the key is absent or null (or given
// its default tag).
type Count float64

// UnmarshalJSON takes any JSON value: what is not a number is refused by
// CheckBounds.
func (c *Count) UnmarshalJSON(b []byte) error {
	var f float64
	if json.Unmarshal(b, &f) != nil {
		f = math.NaN()
	}
	*c = Count(f)
	return nil
}

// CheckBounds implements settings.Bounded.
func (c Count) CheckBounds(lo, hi *float64) error {
	if lo == nil || hi == nil {
		return errors.New("sandbox: a Count setting needs min and max tags")
	}
	f := float64(c)
	want := fmt.Sprintf("want a whole number from %s to %s", formatWhole(*lo), formatWhole(*hi))
	switch {
	case math.IsNaN(f):
		return errors.New(want)
	case f != math.Trunc(f) || f < *lo || f > *hi:
		return fmt.Errorf("%s, got %s", want, formatNumber(f))
	}
	return nil
}

// Int returns the setting.
func (c Count) Int() int64 { return int64(c) }

// Decode decodes the backend's section into v, a pointer to the backend's
// config struct, with the settings decoder (package phases/settings): the
// json tags name the keys, default, min, max and enum tags and Normalize
// and Validate methods complete and check it. An error is a *ConfigError
// at the setting's path relative to the section. A key the struct does
// not know (a typo, or an AgentFlow setting flock does not use) is not an
// error, since AgentFlow ignores such keys: the service reports it among
// its warnings with the closest known key (Service.Warnings). Decode the
// section once, into a struct that names every key the backend reads.
func (e Env) Decode(v any) error {
	doc, err := json.Marshal(e.Config)
	if err != nil {
		return &ConfigError{Reason: err.Error(), Err: err}
	}
	if err := decodeSection(doc, v); err != nil {
		return err
	}
	if e.warn != nil {
		e.warn(keyWarnings(settings.KeysOf(v), doc, e.section)...)
	}
	return nil
}

// DecodeStrict is Decode for a backend that refuses the keys its struct
// does not name (an AgentFlow setting it cannot honour must not be
// ignored): the first is a *ConfigError at its path wrapping
// settings.ErrUnknownKey, with the closest known key and the others
// ("colour: unknown setting (did you mean \"color\"?); also unknown:
// shade").
func (e Env) DecodeStrict(v any) error {
	doc, err := json.Marshal(e.Config)
	if err != nil {
		return &ConfigError{Reason: err.Error(), Err: err}
	}
	var unknown []settings.Finding
	for _, f := range settings.KeysOf(v).Check(doc) {
		if f.Kind == settings.Unknown {
			unknown = append(unknown, f)
		}
	}
	if len(unknown) > 0 {
		f := unknown[0]
		reason := "unknown setting"
		if f.Suggest != "" {
			reason += fmt.Sprintf(" (did you mean %q?)", f.Suggest)
		}
		if len(unknown) > 1 {
			var others []string
			for _, o := range unknown[1:] {
				others = append(others, o.Path)
			}
			reason += "; also unknown: " + strings.Join(others, ", ")
		}
		return &ConfigError{Path: f.Path, Reason: reason, Err: settings.ErrUnknownKey}
	}
	return decodeSection(doc, v)
}

// DecodeConfig decodes a config section (or a session's config) into v as
// Env.Decode does.
func DecodeConfig(section map[string]any, v any) error {
	b, err := json.Marshal(section)
	if err != nil {
		return &ConfigError{Reason: err.Error(), Err: err}
	}
	return decodeSection(b, v)
}

// decodeSection decodes the JSON object doc into v with the settings
// decoder, a *settings.Error becoming a *ConfigError at the same path.
func decodeSection(doc []byte, v any) error {
	err := settings.Decode(doc, v)
	var se *settings.Error
	if errors.As(err, &se) {
		return &ConfigError{Path: se.Path, Reason: se.Reason, Err: se.Err}
	}
	return err
}

// keyWarnings words what keys.Check finds in doc, the section at path
// prefix: `unknown key "resources.bash.config.timout" (did you mean
// "resources.bash.config.timeout"?)`. A key starting with "_" is a
// comment, which AgentFlow drops from a section: none is reported.
func keyWarnings(keys settings.Keys, doc []byte, prefix string) []string {
	var out []string
	for _, f := range keys.Check(doc) {
		if strings.HasPrefix(f.Key, "_") {
			continue
		}
		f.Path = settings.Join(prefix, f.Path)
		if f.Suggest != "" {
			f.Suggest = settings.Join(prefix, f.Suggest)
		}
		out = append(out, f.String())
	}
	return out
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Within places a *ConfigError's path (relative to a backend's section)
// under section, for a backend whose errors name full paths
// ("apis.text2sql.databases.a"); other errors pass unchanged.
func Within(section string, err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	return &ConfigError{Path: settings.Join(section, ce.Path), Reason: ce.Reason, Err: ce.Err}
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func formatWhole(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
