// Package fanout is the "fanout" workflow, flock's example plugin: it runs
// one shell command per input item, several at a time, and reduces the
// outputs into the run's result. Use it to lint every file, test every
// package, probe every host or count every log in parallel, durably: a
// server crash resumes the fan-out where it stopped.
//
// The package works both ways flock loads Go phases: compiled in (call
// Register on a registry, or blank-import a package that does) and as a Go
// plugin (the main package in ./plugin, built with `make` in this
// directory and loaded with `flock serve --plugins DIR`).
//
// Settings:
//
//	{
//	  "items": ["a.txt", "b.txt"],       // the inputs, or:
//	  "items_command": "ls *.txt",       // one input per non-empty stdout line
//	  "command": "wc -l < \"$ITEM\"",    // run per item with $ITEM and $INDEX exported
//	  "parallel": 4,                     // items in flight at once (1..32, default 4)
//	  "timeout_s": 60,                   // per command (0: the bash default)
//	  "reduce": "list",                  // list | sum | concat (default list)
//	  "allow_failures": false            // succeed even if some items fail
//	}
//
// Each item's command runs in a subshell of one of `parallel` persistent
// shells (sessions fanout-0, fanout-1, ...), in the run's work directory,
// so cd or exports made by one item do not leak into the next. Each
// finished item is appended as an "item" entry. The result is
//
//	{"items": N, "succeeded": S, "failed": F, "outputs": [...], "sum": X, "output": "...", "failures": [...]}
//
// with outputs (reduce list: each item's trimmed stdout, input order), sum
// (reduce sum: the sum of the first number of each stdout) or output
// (reduce concat: the stdouts joined by newlines), and the first 20
// failures. The run fails with end_reason "items_failed: F of N" when an
// item fails (exit code not 0, timeout or handler error) unless
// allow_failures is set.
package fanout
