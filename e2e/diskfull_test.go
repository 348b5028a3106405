package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/tmpfs"
)

// TestDiskFull runs the real server on a real tmpfs that fills up: a run
// whose commits fail for lack of space shows it on its head and on
// /health, a new start answers 507 naming the disk, and once space is
// freed the run goes on by itself to success, with no restart.
func TestDiskFull(t *testing.T) {
	data := tmpfs.Mount(t, 24<<20)
	gate := filepath.Join(t.TempDir(), "gate")
	p := startServer(t, data, freePort(t))

	big := "head -c 150000 /dev/urandom | base64 -w0"
	id := p.start("script", map[string]any{
		"commands": []string{"while [ ! -e " + gate + " ]; do sleep 0.02; done", big, big, big, big, "echo done"}})
	free := tmpfs.Fill(t, data)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// The run stalls: its head and /health say so.
	var h head
	testkit.CheckFor(t, 30*time.Second, func() error {
		if h = p.run(id); h.Stalled != "" {
			return nil
		}
		err := fmt.Errorf("run never showed a stall: %+v\n%s", h, p.out)
		if h.Status != "running" {
			t.Fatal(err)
		}
		return err
	})
	if h.Status != "running" || !strings.Contains(h.Stalled, "no space left") || !strings.Contains(h.Stalled, "retrying") {
		t.Fatalf("stalled run head: %+v", h)
	}
	if health, err := p.c.Health(t.Context()); err != nil || health.Status != "degraded" || !strings.Contains(health.Reason, "no space left") {
		t.Fatalf("health while stalled: %+v %v", health, err)
	}

	// A new start needs space for its large task: 507, naming the disk.
	body, _ := json.Marshal(map[string]any{"workflow": "script", "task": strings.Repeat("t", 2<<20),
		"settings": map[string]any{"commands": []string{"true"}}})
	resp, err := http.Post(p.base+"/start_workflow", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(msg), filepath.Join(data, "flock.db")) {
		t.Fatalf("start on a full disk: %d %s", resp.StatusCode, msg)
	}

	// Space comes back: the run finishes without a restart.
	free()
	end := waitEnded(t, p, id, 60*time.Second)
	if end.Status != "succeeded" {
		t.Fatalf("run after space came back: %+v\n%s", end, p.out)
	}
	if health, err := p.c.Health(t.Context()); err != nil || health.Status != "ok" {
		t.Fatalf("health after recovery: %+v %v", health, err)
	}
	if ops := p.ops(id); len(ops) != 6 {
		t.Fatalf("journal has %d ops, want 6", len(ops))
	}
}
