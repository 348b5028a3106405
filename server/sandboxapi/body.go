package sandboxapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server"
)

// body is a decoded request body with AgentFlow's loose typing: unknown
// keys are ignored.
type body map[string]any

// errEnvelope is a request-level failure answered as an envelope.
type errEnvelope struct {
	status int
	code   int
	msg    string
}

func (e *errEnvelope) Error() string { return e.msg }

// StatusCode is the HTTP status of the answer (echo.HTTPStatusCoder).
func (e *errEnvelope) StatusCode() int { return e.status }

func badRequest(format string, args ...any) error {
	return &errEnvelope{status: http.StatusBadRequest, code: sandbox.CodeInvalidRequestFormat, msg: fmt.Sprintf(format, args...)}
}

// maxBodyValues bounds the JSON values (every string, number, literal,
// object and array, keys included) of a sandbox request body. Decoded into
// map[string]any a value costs 50 to 400 bytes whatever its size in the
// body, so the body's byte limit alone let a small body take a lot of
// memory; 100,000 values cost at most about 40 MB.
const maxBodyValues = 100_000

// decode reads the JSON object of the request; an empty body is {}. A body
// of more than maxBodyValues values is refused (413) before it is decoded.
func decode(c *echo.Context) (body, error) {
	data, err := server.ReadBody(c)
	if err != nil {
		return nil, err
	}
	b := body{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return b, nil
	}
	if !fewValues(data, maxBodyValues) {
		return nil, &errEnvelope{status: http.StatusRequestEntityTooLarge, code: sandbox.CodeInvalidRequestFormat,
			msg: fmt.Sprintf("request body too large: it holds more than %d JSON values", maxBodyValues)}
	}
	if err := json.Unmarshal(data, &b); err != nil || b == nil {
		return nil, badRequest("request body must be a JSON object")
	}
	return b, nil
}

// fewValues reports whether the JSON text data holds at most max values
// (keys counted as values). It only counts, at the speed of a byte scan;
// json.Unmarshal validates afterwards.
func fewValues(data []byte, max int) bool {
	n := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '{' || c == '[':
		case c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z':
			for i+1 < len(data) && (data[i+1] == '.' || data[i+1] == '+' || data[i+1] == '-' || data[i+1] >= '0' && data[i+1] <= '9' || data[i+1] >= 'a' && data[i+1] <= 'z' || data[i+1] >= 'A' && data[i+1] <= 'Z') {
				i++
			}
		default:
			continue
		}
		if n++; n > max {
			return false
		}
	}
	return true
}

func (b body) str(key string, required bool) (string, error) {
	v, ok := b[key]
	if !ok || v == nil {
		if required {
			return "", badRequest("missing required field: %s", key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", badRequest("field %s must be a string", key)
	}
	if required && s == "" {
		return "", badRequest("field %s must not be empty", key)
	}
	return s, nil
}

func (b body) obj(key string) (map[string]any, error) {
	v, ok := b[key]
	if !ok || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest("field %s must be an object", key)
	}
	return m, nil
}

func (b body) boolean(key string, def bool) (bool, error) {
	v, ok := b[key]
	if !ok || v == nil {
		return def, nil
	}
	x, ok := v.(bool)
	if !ok {
		return false, badRequest("field %s must be a boolean", key)
	}
	return x, nil
}

func (b body) seconds(key string) (time.Duration, error) {
	v, ok := b[key]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f > 1e6 {
		return 0, badRequest("field %s must be a non-negative number of seconds", key)
	}
	return time.Duration(f * float64(time.Second)), nil
}
