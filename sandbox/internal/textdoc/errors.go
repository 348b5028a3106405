package textdoc

import "errors"

var (
	// ErrNotDir is returned when the documents folder is not a directory.
	ErrNotDir = errors.New("not a directory")
	// ErrDuplicateID is returned when two files map to one document id
	// (the same relative path with different extensions).
	ErrDuplicateID = errors.New("two files have the same document id")
)
