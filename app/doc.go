// Package app wires flock together: it opens the store, builds the
// operation handlers and the executor, loads plugins and workflow files, and
// resumes unfinished runs. The command line (package cli), tests and the
// bench command build the same App.
package app
