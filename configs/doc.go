// Package configs holds flock's settings: the server's configuration and the
// common part of a run's settings document, their defaults (applied in one
// place, Defaults/ApplyDefaults) and validation. Errors name the offending
// field by its JSON path.
//
// A run's settings document is JSON (or YAML, converted when package
// configfile reads a file, so that this package links no YAML parser).
// The keys read here (limits, models, isolation, python, bash, scoring)
// are shared by all workflows; each workflow also reads its own keys from
// the same document. Unknown keys are kept and passed to the workflow
// untouched; SettingsWarnings names the keys no one reads (typos, with the
// closest known key; Flock keys flock ignores) so that the executor can
// warn at start without rejecting the run.
package configs
