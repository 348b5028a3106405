// Package settings is the one way flock reads a settings document: a
// workflow's settings, the engine's common keys, a synthesis config, a
// sandbox backend's section. A settings type is a plain struct whose json
// tags name its keys; Decode fills it, gives its defaults, checks it and
// names the JSON path of anything wrong:
//
//	type Settings struct {
//		MaxTurns int      `json:"max_turns,omitempty" default:"30" min:"0"`
//		Tools    []string `json:"tools,omitempty" enum:"bash,python,submit"`
//		Model    Model    `json:"model"`
//	}
//
//	var s Settings
//	err := settings.Decode(doc, &s) // "model.temp: must be between 0 and 2"
//
// The package imports only the standard library and internal/editdist,
// so that phase packages and plugins, which import only phases,
// operations and the standard library, may use it.
//
// # Tags
//
//   - default:"VALUE" gives a field that is still zero after decoding
//     that value: a JSON literal (`default:"16"`, `default:"true"` on a
//     *bool, `default:"[\"bash\"]"`), or for a string the string itself,
//     unquoted (`default:"results"`). Zero means unset: a setting whose
//     zero is meaningful takes a pointer.
//   - min:"N" and max:"N" bound a number (or a pointer to one): "must be
//     >= N", "must be <= N", "must be between N and M". A type that
//     implements Bounded words the error itself.
//   - enum:"a,b,c" restricts a string, or each string of a list, to those
//     values; the empty string is unset and passes.
//   - settings:"flock-unused" marks a Flock key flock accepts and ignores,
//     settings:"renamed:NEW" the deprecated name of key NEW; Keys.Check
//     reports both.
//
// Defaults that depend on other fields, and aliases mapped onto the keys
// they stand for, go in a Normalize method (Normalizer); checks the tags
// cannot say in a Validate method (Validator). Both may be declared at
// any depth: on the settings type, on a nested struct, on the values of a
// map or the items of a list; an *Error they return is relative to their
// value and the decoder places it.
//
// # Unknown keys
//
// Keys.Check lists the keys of a document its struct does not know, with
// the closest known key (`unknown key "max_dept" (did you mean
// "max_depth"?)`). The engine warns about them in a run's settings, which
// hold the engine's keys beside the workflow's (configs.SettingsWarnings
// merges both trees); a Strict Decoder refuses them, for a file whose
// author is at the terminal.
//
// # Errors
//
// Every error of Decode is an *Error: the setting's path from the
// document's root ("agent.settings.model.temp", "models.gpt.max_tokens",
// "tools[2]") and the reason. A workflow wraps it with its own sentinel
// ("invalid react settings: max_turns: must be >= 0"); a workflow that
// decodes a nested document places the errors with At.
package settings
