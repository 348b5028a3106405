// Package files runs the read_file and write_file operations, through
// which pure phases read their inputs (datasets, earlier result files) and
// write their outputs, and resolves every other file the server opens on
// behalf of a run (the scripted provider's script, through Access.Open).
//
// read_file with "as": "jsonl" returns a Parquet file's rows as JSON lines
// (package internal/tables); a file that is not Parquet is an error naming
// it ("not a Parquet file"), not text passed on to be misread. This is how
// the rollout reads Parquet benchmarks without parsing them in a phase.
//
// # Where a run may read and write
//
// Relative paths are resolved against the run's work directory. A path
// must then resolve, symbolic links included, beneath one of:
//
//   - the run's tree: the work directory of its top-level run, which holds
//     the work directories of every run it spawned (children/...). A child
//     therefore reads and writes its parent's files (a rollout's lanes
//     append to the rollout's results) and a parent its children's;
//   - for reads only, a directory of the server setting read_roots;
//   - the write roots, which only the CLI sets (the output directory the
//     person at the terminal named to flock rollout).
//
// Anything else is refused: "read_file: /etc/passwd is outside the run's
// work directory and the server's read_roots" (ErrOutsideRoots), or
// ErrOutsideWorkDir for writes. Resolution goes through os.Root, so ".."
// and symbolic links cannot leave the root a path was found in, even if
// the files change meanwhile; symbolic links with an absolute target are
// refused even when they point inside (an os.Root rule). A missing file
// beneath an allowed root reads as not existing; one outside is refused,
// so a run cannot probe for files either.
//
// # The data directory
//
// The data directory (flock.db, the runs' work directories) is never
// readable through a read root, even one that contains it (the CLI's
// current directory holds ./flock-data): a file opened through a read or
// write root is checked, by the path the kernel gives its descriptor, and
// refused (ErrDataDir) when it lies in the data directory but outside the
// run's own tree.
//
// # Writes
//
// Writes replace a file atomically (temporary file, fsync, rename, fsync
// of the directory; over a symbolic link, the link itself is replaced).
// Appends are fsynced (and the directory, when the append creates the
// file), and an append whose content already ends the file is skipped, so
// that an append dispatched again after a crash does not duplicate its
// line. Missing parent directories are created.
//
// # Caveats
//
// The confinement covers the files the server process opens for a run.
// Commands a run executes (bash, python) see whatever their isolation lets
// them see (package isolation): unisolated (the operator's policy none, or
// no bwrap on the host) they run as the server's user.
package files
