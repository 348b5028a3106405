package configs

import (
	"encoding/json"
	"errors"
	"fmt"
)

var (
	// ErrInvalid is wrapped by every validation and decoding error.
	ErrInvalid = errors.New("invalid settings")
)

// FieldError names a settings field that is wrong and why.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("invalid settings: %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldErr(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

// describeJSONError turns encoding/json errors into text naming the field.
func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		f := te.Field
		if f == "" {
			f = "(top level)"
		}
		return fmt.Sprintf("%s: expected %s, got JSON %s", f, te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err)
	}
	return err.Error()
}
