package desktop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/flockrun/flock/phases/settings"
	"github.com/flockrun/flock/sandbox"
)

// Name is the backend's resource type: AgentFlow's "vm". The config
// section is resources.vm and the tools are "vm:<tool>".
const Name = "vm"

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{
		Name: Name,
		New:  func() sandbox.Backend { return new(Backend) },
	})
}

const configPath = "resources." + Name + ".config"

// poolSettings are the settings of AgentFlow's VM pool (OSWorld's
// desktop_env) that have no meaning for a local Xvfb; Provision refuses
// them by name rather than ignore a provider the operator expects.
var poolSettings = []string{
	"chromium_port", "client_password", "connection_type", "headless", "host", "os_type",
	"pool_reset", "pool_size", "port", "provider", "recording", "recording_path", "region",
	"server_port", "setup", "snapshot_name", "use_proxy", "vlc_port", "vm_path", "vnc_port",
}

// section is resources.vm.config, for the settings decoder (package
// phases/settings).
type section struct {
	// ScreenSize is "WxH", "WxHx24" or AgentFlow's [W, H] (1280x800x24).
	ScreenSize    *screenSize       `json:"screen_size"`
	WindowManager string            `json:"window_manager"`
	StartCommand  string            `json:"start_command"`
	Xvfb          string            `json:"xvfb_path"`
	StartTimeout  *sandbox.Seconds  `json:"start_timeout_s" default:"10" min:"0.1" max:"600"`
	WindowWait    *sandbox.Seconds  `json:"window_wait_s" default:"5" min:"0" max:"600"`
	Env           map[string]string `json:"env"`
}

// Validate refuses variable names the backend sets or cannot pass.
func (c section) Validate() error {
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return settings.Errorf("env."+k, "want a name without '='")
		}
		switch k {
		case "DISPLAY", "XAUTHORITY", "FLOCK_DESKTOP_WM", "FLOCK_DESKTOP_START":
			return settings.Errorf("env."+k, "is set by the backend")
		}
	}
	return nil
}

// screenSize is a screen_size setting (see parseScreenSize).
type screenSize struct{ w, h, d int }

// UnmarshalJSON reads "WxH[x24]" or [W, H(, 24)].
func (s *screenSize) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var err error
	s.w, s.h, s.d, err = parseScreenSize(v)
	return err
}

// sessionSettings may differ per session (session_config on create).
var sessionSettings = []string{"screen_size"}

// Backend is the desktop resource: one Xvfb display per session.
type Backend struct {
	opts    startOptions
	section map[string]any
	log     *slog.Logger

	mu       sync.Mutex
	displays map[string]*Display // by session id; guarded by mu
}

// Provision reads resources.vm.config (see the package doc) and finds
// Xvfb. Unknown settings are refused, naming the closest known one;
// AgentFlow's VM-pool settings (provider, pool_size, ...) are refused as
// such, rather than ignore a provider the operator expects.
func (b *Backend) Provision(_ context.Context, env sandbox.Env) error {
	b.log = env.Logger
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	cfg := env.Config
	var pool []string
	for k := range cfg {
		if slices.Contains(poolSettings, k) {
			pool = append(pool, k)
		}
	}
	slices.Sort(pool)
	if len(pool) > 0 {
		return &sandbox.ConfigError{Path: configPath + "." + pool[0], Reason: fmt.Sprintf(
			"AgentFlow VM-pool settings %s are not supported: flock's vm resource runs a local Xvfb display per session, with no provider, pool or image; remove them",
			strings.Join(pool, ", "))}
	}
	var c section
	if err := env.DecodeStrict(&c); err != nil {
		return err
	}
	o := startOptions{Width: 1280, Height: 800, Depth: 24,
		StartTimeout: c.StartTimeout.Duration(), WindowWait: c.WindowWait.Duration(),
		WindowMgr: c.WindowManager, StartCommand: c.StartCommand, Xvfb: c.Xvfb, Env: c.Env}
	if c.ScreenSize != nil {
		o.Width, o.Height, o.Depth = c.ScreenSize.w, c.ScreenSize.h, c.ScreenSize.d
	}
	exe, err := findXvfb(o.Xvfb)
	if err != nil {
		return &sandbox.ConfigError{Path: configPath + ".xvfb_path", Reason: err.Error(), Err: ErrNoXvfb}
	}
	o.Xvfb = exe
	b.opts = o
	b.section = cfg
	b.displays = map[string]*Display{}
	b.log.Info("desktop backend ready", "xvfb", exe, "screen", fmt.Sprintf("%dx%dx%d", o.Width, o.Height, o.Depth))
	return nil
}

// findXvfb resolves path, or Xvfb on PATH when it is "".
func findXvfb(path string) (string, error) {
	if path == "" {
		path = "Xvfb"
	}
	exe, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s (apt-get install xvfb, or set xvfb_path)", ErrNoXvfb, path)
	}
	return exe, nil
}

// FindXvfb reports where Xvfb is, for tests that skip without it.
func FindXvfb() (string, error) { return findXvfb("") }

// number returns v as a float64 when it is a JSON number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// parseScreenSize accepts "WxH", "WxHxD" and AgentFlow's [W, H] (or
// [W, H, D]); D must be 24.
func parseScreenSize(v any) (w, h, d int, err error) {
	var parts []float64
	switch s := v.(type) {
	case string:
		for _, p := range strings.Split(strings.ToLower(strings.TrimSpace(s)), "x") {
			f, perr := strconv.Atoi(strings.TrimSpace(p))
			if perr != nil {
				return 0, 0, 0, fmt.Errorf("want \"WIDTHxHEIGHT[x24]\" or [width, height], got %q", s)
			}
			parts = append(parts, float64(f))
		}
	case []any:
		for _, e := range s {
			f, ok := number(e)
			if !ok {
				return 0, 0, 0, errors.New("want [width, height] of integers")
			}
			parts = append(parts, f)
		}
	default:
		return 0, 0, 0, errors.New("want \"WIDTHxHEIGHT[x24]\" or [width, height]")
	}
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, errors.New("want a width and a height (and optionally depth 24)")
	}
	for _, p := range parts {
		if p != math.Trunc(p) {
			return 0, 0, 0, errors.New("want integers")
		}
	}
	w, h, d = int(parts[0]), int(parts[1]), 24
	if len(parts) == 3 {
		d = int(parts[2])
	}
	if w < 64 || h < 64 || w > 8192 || h > 8192 {
		return 0, 0, 0, fmt.Errorf("%dx%d: width and height must be 64 to 8192", w, h)
	}
	if d != 24 {
		return 0, 0, 0, fmt.Errorf("depth %d: only 24 is supported", d)
	}
	return w, h, d, nil
}

// Initialize starts the session's display in its workspace. The session's
// config may set screen_size; other settings come from the server's
// config only (a different value is refused, naming it).
func (b *Backend) Initialize(ctx context.Context, s *sandbox.Session, cfg map[string]any) (any, error) {
	if b.displays == nil {
		return nil, sandbox.Errorf(sandbox.CodeBackendNotInitialized, "the vm backend is not provisioned")
	}
	o := b.opts
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := cfg[k]
		if k == "screen_size" {
			w, h, d, err := parseScreenSize(v)
			if err != nil {
				return nil, sandbox.Errorf(sandbox.CodeInvalidInput, "session_config.screen_size: %v", err)
			}
			o.Width, o.Height, o.Depth = w, h, d
			continue
		}
		if base, ok := b.section[k]; ok && reflect.DeepEqual(base, v) {
			continue // the backend's own section, merged in by the core
		}
		if slices.Contains(sessionSettings, k) {
			continue
		}
		return nil, sandbox.Errorf(sandbox.CodeInvalidInput, "session_config.%s: not a per-session setting of the vm resource (only %s; the rest is the server's resources.vm.config)",
			k, strings.Join(sessionSettings, ", "))
	}
	d, err := Start(ctx, s.Workspace, o)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.displays[s.ID] = d
	b.mu.Unlock()
	b.log.Debug("desktop session started", "session", s.ID, "display", d.Num)
	return d, nil
}

// Cleanup ends the session's display; no process of it survives.
func (b *Backend) Cleanup(_ context.Context, s *sandbox.Session) error {
	b.mu.Lock()
	d := b.displays[s.ID]
	delete(b.displays, s.ID)
	b.mu.Unlock()
	if d == nil {
		d, _ = s.State.(*Display)
	}
	if d == nil {
		return nil
	}
	return d.Close()
}

// Shutdown ends every display still running.
func (b *Backend) Shutdown(context.Context) error {
	b.mu.Lock()
	ds := make([]*Display, 0, len(b.displays))
	for _, d := range b.displays {
		ds = append(ds, d)
	}
	b.displays = map[string]*Display{}
	b.mu.Unlock()
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() { errs[i] = d.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.Initializer = (*Backend)(nil)
	_ sandbox.Cleaner     = (*Backend)(nil)
	_ sandbox.Shutdowner  = (*Backend)(nil)
)
