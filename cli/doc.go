// Package cli is flock's command line: a small dispatcher over the standard
// flag package.
//
//	flock serve [--addr] [--data DIR] [--mode live|simulated] [--plugins DIR] [--workflows DIR]
//	flock run --workflow NAME --settings FILE [--task TEXT]
//	flock rollout --config FILE
//	flock synthesize --config FILE
//	flock runs list|show|logs|export|cancel|pause|resume|fork|... RUN_ID
//	flock workflows
//	flock --workflow NAME --settings FILE [--task TEXT]   (serve and start that workflow)
//	flock version
//	flock help [COMMAND [SUBCOMMAND]]
//
// # Help, errors and exit codes
//
// Every command and subcommand has an entry in the tables of help.go
// (synopsis, what it does, examples; TestCommandExamples runs each
// example's flags through its command) and answers -h and --help with it
// and its flags (parseFlags). Main words every error for the terminal
// (terminalText): a flock server's answer as what it says, not its HTTP
// status; a server that does not answer as such; the prefixes of sentinels
// that only classify dropped. A command, subcommand, flag or workflow that
// does not exist is answered with the closest one (internal/editdist); a
// workflow is looked up in the registry that would run it, this process's
// or the server's. Exit codes: 2 for a usage error (errUsage: the command
// line is wrong), 1 for a run that did not succeed (errRunFailed) or any
// other error, 0 otherwise (help included).
//
// # One data directory, a server or not
//
// flock serve writes DATA/server.json (mode 0600): its address and an
// operator token, removed at shutdown. run, rollout and synthesize read
// it (findServer) and, when that server answers as the holder of the
// directory, hand their run to it (POST /operator/runs) and follow it
// through its API; otherwise they open the directory in their own
// process, resuming no run but their own (driver). Either way a command
// identifies itself by commandKey, a hash of its resolved settings, and
// resumes its own unfinished run instead of starting another. The runs
// commands read through the same server, or open flock.db read-only.
//
// # Local files and keys
//
// The person at the terminal is the operator: run, rollout, synthesize and
// the serve-and-start form make the files a settings or config file names
// (system_prompt_file, script, data_path, at any depth) relative to that
// file, refuse to start when one is missing, and grant their directories,
// the config's own and the output directory to the run they start
// (state.Spec.Grants). API keys such a file holds literally are taken out
// (takeLiteralKeys), named by the command, and held in memory only
// (package keyring), in this process or in the server's. Runs started
// over HTTP by a plain client get none of this: only the read_roots of the
// server's --config, and no literal keys.
package cli
