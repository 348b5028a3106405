// Package app wires flock together: it opens the store, hands the
// registered operation handlers (imported in handlers.go) to the executor,
// which provisions them, loads plugins and workflow files, and
// resumes unfinished runs. The command line (package cli), tests and the
// bench command build the same App.
package app
