// Package cli is flock's command line: a small dispatcher over the standard
// flag package.
//
//	flock serve [--addr] [--data DIR] [--mode live|simulated] [--plugins DIR] [--workflows DIR]
//	flock run --workflow NAME --settings FILE [--task TEXT]
//	flock rollout --config FILE
//	flock --workflow NAME --settings FILE [--task TEXT]   (serve and start that workflow)
//	flock version
//
// # Local files
//
// The person at the terminal is the operator: run, rollout and the
// serve-and-start form make the files a settings or rollout config names
// (system_prompt_file, script, data_path, at any depth) relative to that
// file, refuse to start when one is missing, and add their directories and
// the config's own to the in-process server's read roots; rollout also
// makes its output directory writable. Runs started over HTTP by a plain
// flock serve get none of this: only the read_roots of its --config.
package cli
