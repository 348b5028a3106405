package configs

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/flockrun/flock/phases/settings"
)

// FlockKeys are the top-level keys of Flock's settings.json (triframe's and
// modular's settings). A run whose workflow does not read one of them is
// told so by name instead of being told the key is unknown.
var FlockKeys = []string{
	"actors", "advisors", "enable_advising", "enable_subagents", "enable_tool_use",
	"enable_xml", "generator", "intermediate_scoring", "limit_type", "raters",
	"require_function_call", "workflow_type",
}

// TagFlockUnused is the struct tag that marks a settings field as a Flock
// key flock accepts and ignores: `settings:"flock-unused"`. SettingsWarnings
// lists such keys when a document sets them.
const TagFlockUnused = settings.TagFlockUnused

// SettingsWarnings reports the keys of a run's settings document that no
// one reads: unknown keys (with the closest known key when one is near, so
// typos such as "limts" point at "limits"), nested ones included, and Flock
// keys that flock accepts but does not use. Warnings never reject a run.
//
// The known keys are those of RunSettings merged with the workflow's
// declared keys (phases.Workflow.Settings), see settings.KeysOf:
//   - a struct value (or a pointer to one): the json tags of its fields,
//     nested structs, maps and slices included, found by reflection;
//     json.RawMessage and interface fields accept anything below them;
//   - a []string: top-level keys, each accepting anything below it;
//   - nil: the workflow declared nothing (plugins that predate the field),
//     so top-level keys other than the common ones are not reported; keys
//     inside the common sections (limits, models.X, python ...) still are.
//
// A field tagged `settings:"renamed:NEW"` is a deprecated name: a document
// that sets it is told to use NEW. workflow names the workflow in
// messages. The result is sorted by key and is nil when there is nothing
// to say or the document is not an object.
func SettingsWarnings(doc json.RawMessage, workflow string, declared any) []string {
	var out []string
	for _, f := range CheckKeys(doc, declared) {
		switch {
		case f.Kind == settings.Unknown && f.Parent == "" && declared == nil:
		case f.Kind == settings.Unknown && f.Parent == "" && slices.Contains(FlockKeys, f.Key):
			out = append(out, fmt.Sprintf("settings key %q is a Flock setting that flock does not use in workflow %q", f.Key, workflow))
		case f.Kind == settings.Unknown && f.Suggest != "":
			out = append(out, fmt.Sprintf("unknown settings key %q (did you mean %q?)", f.Path, f.Suggest))
		case f.Kind == settings.Unknown:
			out = append(out, fmt.Sprintf("unknown settings key %q", f.Path))
		case f.Kind == settings.FlockUnused:
			out = append(out, fmt.Sprintf("settings key %q is a Flock setting that flock does not use", f.Path))
		case f.Kind == settings.Renamed:
			out = append(out, fmt.Sprintf("settings key %q is deprecated: use %q (same value)", f.Path, f.Suggest))
		}
	}
	return out
}

// CheckKeys checks doc's keys against those of RunSettings merged with the
// workflow's declared keys (see SettingsWarnings), returning what
// settings.Keys.Check finds. A top-level unknown key of a workflow that
// declared nothing (declared nil) is among them: only its caller knows
// whether to mind it.
func CheckKeys(doc json.RawMessage, declared any) []settings.Finding {
	root := settings.KeysOf(RunSettings{})
	switch d := declared.(type) {
	case nil:
	case []string:
		root = root.Merge(settings.OpenKeys(d...))
	default:
		root = root.Merge(settings.KeysOf(declared))
	}
	return root.Check(doc)
}
