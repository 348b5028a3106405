package agent

import "errors"

var (
	// ErrUnknownTool is returned when a call names a tool that is not offered.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrBadArguments is returned when a call's arguments do not fit its tool.
	ErrBadArguments = errors.New("invalid arguments")
	// ErrNoCall is returned when a model output holds no tool call.
	ErrNoCall = errors.New("no tool call")
	// ErrBadModel is returned by Model.Validate.
	ErrBadModel = errors.New("invalid model entry")
	// ErrSettingsConflict is returned at start when two settings keys
	// govern the same thing and one of them would be ignored; the error
	// names both.
	ErrSettingsConflict = errors.New("conflicting settings")
)
