package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/keyring"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// Launcher is what the operator routes ask of the engine beyond Engine:
// start-or-resume by the command's key, and resuming a whole run tree.
// *workflows.Executor implements it.
type Launcher interface {
	Launch(ctx context.Context, req workflows.StartRequest) (state.Run, []string, bool, error)
	ResumeTree(ctx context.Context, id string) error
}

var _ Launcher = (*workflows.Executor)(nil)

// Operator is what MountOperator needs to know.
type Operator struct {
	// Token is the operator token: at least 16 bytes, which the command
	// line writes to the data directory's server file (mode 0600).
	Token string
	// Keys receives the API keys handed over with runs.
	Keys *keyring.Ring
	// DataDir is the data directory the server holds.
	DataDir string
	// Sandbox says that the server's runs have a sandbox service (flock
	// serve --sandbox-config): GET /operator tells the command line so.
	Sandbox bool
}

// operator is what MountOperator set up.
type operator struct {
	token   string
	keys    *keyring.Ring
	dataDir string
	sandbox bool
	eng     Launcher
}

// errOperatorToken answers operator routes without the operator token.
var errOperatorToken = echo.NewHTTPError(http.StatusUnauthorized,
	"missing or invalid operator token: the operator routes take only the token of the data directory's server file (read by flock run, rollout and synthesize)")

// MountOperator adds the routes through which the command line hands a
// run to the server that holds its data directory (flock run, rollout and
// synthesize, finding the server in the data directory's server file):
//
//	GET  /operator                   {"data_dir","pid","sandbox"}
//	POST /operator/runs              api.Handover -> 201 (200 when resumed) {"run_id","status","warnings"?,"resumed"?}
//	POST /operator/runs/:id/resume   api.HandoverResume -> {"run_id","status"}
//
// They take only "Authorization: Bearer TOKEN" with o.Token, which the
// server writes to that file (mode 0600) and nowhere else: the person
// who can read the data directory is the operator, who may grant a run
// files (read and write roots of that run tree only) and hand over API
// keys given literally on the command line (kept in o.Keys, in memory).
// The server's own auth token, when it has one, is not enough; the
// operator token also passes wherever the auth token is asked. Call it
// on a server of New, before Start; the engine must implement Launcher.
func (s *Server) MountOperator(o Operator) error {
	l, ok := s.eng.(Launcher)
	if !ok {
		return errors.New("server: the engine cannot take runs from the command line (no Launcher)")
	}
	if len(o.Token) < 16 {
		return errors.New("server: operator token shorter than 16 bytes")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("server: data directory: %w", err)
	}
	s.op = &operator{token: o.Token, keys: o.Keys, dataDir: abs, sandbox: o.Sandbox, eng: l}
	g := s.e.Group("/operator", s.operatorOnly)
	g.GET("", s.operatorInfo)
	g.POST("/runs", s.handover)
	g.POST("/runs/:id/resume", s.handoverResume)
	return nil
}

// isOperator reports whether the request bears the operator token.
func (s *Server) isOperator(c *echo.Context) bool {
	if s.op == nil {
		return false
	}
	for _, h := range c.Request().Header.Values(echo.HeaderAuthorization) {
		if tok, ok := strings.CutPrefix(h, "Bearer "); ok && sameToken(tok, s.op.token) {
			return true
		}
	}
	return false
}

// sameToken compares two tokens in constant time (hashed first, so that
// the comparison does not leak the length).
func sameToken(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

func (s *Server) operatorOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if !s.isOperator(c) {
			return errOperatorToken
		}
		return next(c)
	}
}

// operatorInfo answers GET /operator.
func (s *Server) operatorInfo(c *echo.Context) error {
	return c.JSON(http.StatusOK, api.Operator{DataDir: s.op.dataDir, PID: os.Getpid(), Mode: s.cfg.Mode, Sandbox: s.op.sandbox})
}

// handoverFields are the keys a hand-over body may have.
var handoverFields = []string{"workflow", "settings", "task", "key", "read_roots", "write_roots", "keys"}

// handover answers POST /operator/runs: it starts the run, or resumes the
// unfinished run of the same key, with the grants and keys given.
func (s *Server) handover(c *echo.Context) error {
	raw, err := decodeObject(c.Request().Body, handoverFields)
	if err != nil {
		return err
	}
	var h api.Handover
	for _, f := range handoverFields {
		v, ok := raw[f]
		if !ok || jsonKind(v) == "null" {
			continue
		}
		var dst any
		switch f {
		case "workflow":
			dst = &h.Workflow
		case "task":
			dst = &h.Task
		case "key":
			dst = &h.Key
		case "read_roots":
			dst = &h.ReadRoots
		case "write_roots":
			dst = &h.WriteRoots
		case "keys":
			dst = &h.Keys
		case "settings":
			if v[0] != '{' {
				return badInput("settings", "must be a JSON object, got JSON %s", jsonKind(v))
			}
			h.Settings = v
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return badInput(f, "must be JSON %s", map[string]string{"workflow": "string", "task": "string", "key": "string",
				"read_roots": "list of strings", "write_roots": "list of strings", "keys": "object of strings"}[f])
		}
	}
	var grants *state.Grants
	if len(h.ReadRoots)+len(h.WriteRoots) > 0 {
		grants = &state.Grants{}
		if grants.ReadRoots, err = grantRoots("read_roots", h.ReadRoots); err != nil {
			return err
		}
		if grants.WriteRoots, err = grantRoots("write_roots", h.WriteRoots); err != nil {
			return err
		}
	}
	if err := s.takeKeys(h.Keys); err != nil {
		return err
	}
	req := workflows.StartRequest{Workflow: h.Workflow, Settings: h.Settings, Task: h.Task, Key: h.Key, Grants: grants}
	head, warnings, resumed, err := s.op.eng.Launch(c.Request().Context(), req)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/runs/"+head.ID)
	code := http.StatusCreated
	if resumed {
		code = http.StatusOK
	}
	return c.JSON(code, api.RunStatus{RunID: head.ID, Status: head.Status, Warnings: warnings, Resumed: resumed})
}

// handoverResume answers POST /operator/runs/:id/resume: it resumes the run
// and every unfinished descendant nothing drives, with the keys given.
func (s *Server) handoverResume(c *echo.Context) error {
	var body api.HandoverResume
	if c.Request().ContentLength != 0 {
		raw, err := decodeObject(c.Request().Body, []string{"keys"})
		if err != nil {
			return err
		}
		if v, ok := raw["keys"]; ok && jsonKind(v) != "null" {
			if err := json.Unmarshal(v, &body.Keys); err != nil {
				return badInput("keys", "must be a JSON object of strings")
			}
		}
	}
	if err := s.takeKeys(body.Keys); err != nil {
		return err
	}
	id := c.Param("id")
	if err := s.op.eng.ResumeTree(c.Request().Context(), id); err != nil {
		return &runError{id: id, err: err}
	}
	head, err := s.store.Run(c.Request().Context(), id)
	if err != nil {
		return &runError{id: id, err: err}
	}
	return c.JSON(http.StatusOK, api.RunStatus{RunID: head.ID, Status: head.Status})
}

// takeKeys puts handed-over keys into the ring. A name not of the ring's
// form is refused (naming it, never the key).
func (s *Server) takeKeys(keys map[string]string) error {
	for n := range keys {
		if !keyring.IsName(n) {
			return badInput("keys", "%q is not a key name of the form %s<32 hex digits>", n, keyring.Prefix)
		}
	}
	for n, k := range keys {
		s.op.keys.Set(n, k)
	}
	return nil
}

// grantRoots checks granted directories: absolute, existing directories;
// it returns them cleaned.
func grantRoots(field string, ps []string) ([]string, error) {
	out := make([]string, 0, len(ps))
	for i, p := range ps {
		if !filepath.IsAbs(p) {
			return nil, badInput(fmt.Sprintf("%s[%d]", field, i), "%q is not an absolute path", p)
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.IsDir() {
			return nil, badInput(fmt.Sprintf("%s[%d]", field, i), "%q is not a directory", p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

// refuseKeyNames refuses settings that name a key handed over by the
// command line (FLOCK_KEY_...): only the operator's own runs may.
func refuseKeyNames(settings []byte) error {
	if names := keyring.Names(settings); len(names) > 0 {
		return badInput("settings", "%s names a key given on a command line to the run it handed over; other runs cannot use it: name an environment variable of the server (api_key_env)", names[0])
	}
	return nil
}
