package browser

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

func TestProvisionErrorsNameThePath(t *testing.T) {
	needChromium(t)
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"no such chromium", map[string]any{"chromium_path": "/no/such/chromium"}, "resources.browser.config.chromium_path: chromium not found at /no/such/chromium"},
		{"path not a string", map[string]any{"chromium_path": 3.0}, "resources.browser.config.chromium_path: want a string"},
		{"width too small", map[string]any{"width": json.Number("10")}, "resources.browser.config.width: want a whole number from 100 to 16384, got 10"},
		{"timeout not a number", map[string]any{"action_timeout_s": "soon"}, "resources.browser.config.action_timeout_s: want a number"},
		{"allow_hosts not a list", map[string]any{"allow_hosts": "127.0.0.1"}, "resources.browser.config.allow_hosts: want a list"},
		{"allow_hosts bad prefix", map[string]any{"allow_hosts": []any{"10.0.0.0/99"}}, "resources.browser.config.allow_hosts: \"10.0.0.0/99\" is not a CIDR prefix"},
		{"allow_private not a boolean", map[string]any{"allow_private": "yes"}, "resources.browser.config.allow_private: want true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := new(Backend).Provision(context.Background(), sandbox.Env{Config: tt.cfg, DataDir: t.TempDir()})
			var ce *sandbox.ConfigError
			if !errors.As(err, &ce) || err.Error() != tt.want && !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestToolsWithoutSession(t *testing.T) {
	b := new(Backend)
	tools := b.Tools()
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		if tl.Stateless {
			t.Fatalf("%s is stateless", tl.Name)
		}
		var sch map[string]any
		if err := json.Unmarshal(tl.Parameters, &sch); err != nil || sch["type"] != "object" {
			t.Fatalf("%s schema %s", tl.Name, tl.Parameters)
		}
		_, err := tl.Run(context.Background(), &sandbox.Call{Params: map[string]any{"url": "http://x", "selector": "a", "text": "t"}})
		var se *sandbox.Error
		if !errors.As(err, &se) || se.Code != sandbox.CodeResourceNotInitialized {
			t.Fatalf("%s without a session: %v", tl.Name, err)
		}
	}
	if strings.Join(names, " ") != "browser:navigate browser:click browser:type browser:extract browser:screenshot" {
		t.Fatalf("tools %v", names)
	}
}

func TestShutdownClosesEverySession(t *testing.T) {
	needChromium(t)
	b := new(Backend)
	if err := b.Provision(context.Background(), sandbox.Env{Config: map[string]any{}, DataDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	var tabs []*Tab
	for _, id := range []string{"s1", "s2"} {
		st, err := b.Initialize(context.Background(), &sandbox.Session{ID: id, Workspace: t.TempDir()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tabs = append(tabs, st.(*Tab))
	}
	if b.running() != 2 {
		t.Fatalf("running = %d", b.running())
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tab := range tabs {
		if pids := profileProcesses(tab.profile); len(pids) != 0 {
			t.Fatalf("chromium survives Shutdown: %v", pids)
		}
	}
	if b.running() != 0 {
		t.Fatalf("running = %d after Shutdown", b.running())
	}
}
