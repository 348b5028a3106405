package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/flockrun/flock/sandbox"
)

// ToolSpec is one discovered MCP tool as the sandbox registry lists it.
type ToolSpec struct {
	Name        string // mcp:<server>.<tool>
	Server      string
	Tool        string // the tool's name on its server
	Description string
	Parameters  json.RawMessage // the tool's input schema (a JSON Schema object)
}

// Backend runs the configured MCP stdio servers: once each at provisioning to list
// their tools, then one process per server per session.
type Backend struct {
	cfg     Config
	dataDir string
	logger  *slog.Logger
	tools   []ToolSpec // set by provision, read-only afterwards

	mu   sync.Mutex
	live map[*sessionState]struct{} // sessions not cleaned up yet; guarded by mu
}

// provision parses the config and discovers every server's tools by starting it once
// in dataDir/discovery/<server> and stopping it. A server that does not start fails
// provisioning with the server's config path named.
func (b *Backend) provision(ctx context.Context, raw map[string]any, dataDir string, logger *slog.Logger) error {
	return b.provisionWith(ctx, func(v any) error { return sandbox.DecodeConfig(raw, v) }, dataDir, logger)
}

// provisionWith is provision of the section decode reads (Env.Decode).
func (b *Backend) provisionWith(ctx context.Context, decode func(any) error, dataDir string, logger *slog.Logger) error {
	cfg, err := decodeConfig(decode)
	if err != nil {
		return err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b.cfg, b.dataDir, b.logger = cfg, dataDir, logger
	b.tools = nil
	for _, sc := range cfg.Servers {
		specs, err := b.discover(ctx, sc)
		if err != nil {
			return fmt.Errorf("%s.servers.%s: %w", configPath, sc.Name, err)
		}
		b.tools = append(b.tools, specs...)
		logger.Info("mcp server tools listed", "server", sc.Name, "tools", len(specs))
	}
	return nil
}

func (b *Backend) discover(ctx context.Context, sc ServerConfig) ([]ToolSpec, error) {
	dir := filepath.Join(b.dataDir, "discovery", sc.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("discovery dir: %w", err)
	}
	c, err := startServer(ctx, sc, dir, b.cfg.StartupTimeout)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := c.close(); err != nil {
			b.logger.Warn("mcp discovery stop", "server", sc.Name, "error", err)
		}
	}()
	lctx, cancel := context.WithTimeout(ctx, b.cfg.StartupTimeout)
	defer cancel()
	tools, err := c.listTools(lctx)
	if err != nil {
		return nil, err
	}
	specs := make([]ToolSpec, 0, len(tools))
	for _, t := range tools {
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		specs = append(specs, ToolSpec{
			Name:        "mcp:" + sc.Name + "." + t.Name,
			Server:      sc.Name,
			Tool:        t.Name,
			Description: t.Description,
			Parameters:  schema,
		})
	}
	return specs, nil
}

// inputSchema marshals an MCP tool's input schema, defaulting to an empty object schema.
func inputSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m["type"] == nil {
		m["type"] = "object"
		return json.Marshal(m)
	}
	return b, nil
}

// sessionState is a session's running servers (the Session.State of the sandbox).
type sessionState struct {
	conns map[string]*conn // read-only after start
}

// start starts the servers a session uses, in its workspace. On any failure the servers
// already started are stopped and the error names the failing server.
func (b *Backend) start(ctx context.Context, workspace string, cfg map[string]any) (*sessionState, error) {
	servers, err := sessionServers(cfg, b.cfg.Servers)
	if err != nil {
		return nil, err
	}
	st := &sessionState{conns: make(map[string]*conn, len(servers))}
	for _, sc := range servers {
		c, err := startServer(ctx, sc, workspace, b.cfg.StartupTimeout)
		if err != nil {
			_ = st.stop()
			return nil, err
		}
		st.conns[sc.Name] = c
	}
	return st, nil
}

// call runs spec's tool on the session's server.
func (st *sessionState) call(ctx context.Context, spec ToolSpec, args map[string]any) (*Result, error) {
	c, ok := st.conns[spec.Server]
	if !ok {
		return nil, fmt.Errorf("mcp server %q: %w", spec.Server, ErrNotEnabled)
	}
	return c.call(ctx, spec.Tool, args)
}

// stop stops every server of the session concurrently and kills their process groups.
func (st *sessionState) stop() error {
	var wg sync.WaitGroup
	errs := make([]error, 0, len(st.conns))
	var mu sync.Mutex
	for _, c := range st.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.close(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
