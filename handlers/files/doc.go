// Package files runs the read_file and write_file operations, through
// which pure phases read their inputs (datasets, earlier result files) and
// write their outputs.
//
// Relative paths are resolved against the run's work directory. Writes
// replace a file atomically (temporary file, fsync, rename). Appends are
// fsynced, and an append whose content already ends the file is skipped,
// so that an append dispatched again after a crash does not duplicate its
// line. Files are not sandboxed: phases are trusted code.
package files
