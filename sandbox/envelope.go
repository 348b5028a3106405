package sandbox

import (
	"fmt"
	"math"
	"strings"
)

// Error is a tool failure with AgentFlow's code (Code* in codes.go). Data, if
// set, becomes the envelope's data.
type Error struct {
	Code    int
	Message string
	Data    any
}

func (e *Error) Error() string { return fmt.Sprintf("code %d: %s", e.Code, e.Message) }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Envelope is AgentFlow's answer to every tool and session route: code 0 and
// message "success" on success.
type Envelope struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data"`
	Meta    Meta   `json:"meta"`
}

// Meta is the envelope's meta. Tool is the full "resource:tool" name (the
// client's formatter needs it); TraceID echoes the request's trace_id or is
// a fresh id.
type Meta struct {
	Tool             string  `json:"tool"`
	ExecutionTimeMS  float64 `json:"execution_time_ms"`
	ResourceType     string  `json:"resource_type"`
	SessionID        *string `json:"session_id"`
	TraceID          string  `json:"trace_id"`
	TemporarySession bool    `json:"temporary_session,omitempty"`
}

// Call is one invocation of a tool.
type Call struct {
	WorkerID string
	// Params is the decoded JSON object of the call's params; never nil.
	Params map[string]any
	// Session is the session the call runs on; nil for stateless tools.
	Session *Session
}

// Has reports whether the parameter name is present and not null.
func (c *Call) Has(name string) bool {
	v, ok := c.Params[name]
	return ok && v != nil
}

func missing(name string) *Error {
	return &Error{Code: CodeMissingRequiredField, Message: "missing required parameter: " + name, Data: map[string]any{"parameter": name}}
}

func badType(name, want string) *Error {
	return &Error{Code: CodeInvalidParameterType, Message: fmt.Sprintf("parameter %s must be %s", name, want), Data: map[string]any{"parameter": name}}
}

// String returns the string parameter name: 4003 when it is absent or null,
// 4004 when it is not a string.
func (c *Call) String(name string) (string, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return "", missing(name)
	}
	s, ok := v.(string)
	if !ok {
		return "", badType(name, "a string")
	}
	return s, nil
}

// Int returns the integer parameter name (a JSON number with no fraction, or
// a decimal string): 4003 when absent, 4004 when not an integer.
func (c *Call) Int(name string) (int, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return 0, missing(name)
	}
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, badType(name, "an integer")
		}
		return int(n), nil
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case string:
		var i int
		if _, err := fmt.Sscan(strings.TrimSpace(n), &i); err != nil || fmt.Sprint(i) != strings.TrimSpace(n) {
			return 0, badType(name, "an integer")
		}
		return i, nil
	}
	return 0, badType(name, "an integer")
}

// Float returns the number parameter name: 4003 when absent, 4004 when not a
// number.
func (c *Call) Float(name string) (float64, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return 0, missing(name)
	}
	switch n := v.(type) {
	case float64:
		return n, nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	}
	return 0, badType(name, "a number")
}

// Bool returns the boolean parameter name: 4003 when absent, 4004 when not a
// boolean.
func (c *Call) Bool(name string) (bool, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return false, missing(name)
	}
	b, ok := v.(bool)
	if !ok {
		return false, badType(name, "a boolean")
	}
	return b, nil
}

// Strings returns the parameter name given as a string or an array of
// strings (AgentFlow's `str|[str]`): 4003 when absent, 4004 otherwise.
func (c *Call) Strings(name string) ([]string, error) {
	v, ok := c.Params[name]
	if !ok || v == nil {
		return nil, missing(name)
	}
	switch s := v.(type) {
	case string:
		return []string{s}, nil
	case []string:
		return s, nil
	case []any:
		out := make([]string, 0, len(s))
		for _, e := range s {
			str, ok := e.(string)
			if !ok {
				return nil, badType(name, "a string or an array of strings")
			}
			out = append(out, str)
		}
		return out, nil
	}
	return nil, badType(name, "a string or an array of strings")
}
