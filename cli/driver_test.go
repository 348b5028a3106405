package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// interruptOn is a transport that calls interrupt once the answer to a
// request whose path is path arrived: Ctrl-C pressed while that answer
// was on its way to a command the machine is slow to run.
type interruptOn struct {
	path      string
	interrupt context.CancelFunc
}

func (t interruptOn) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if req.URL.Path == t.path {
		t.interrupt()
	}
	return resp, err
}

// TestHandoverInterruptedInFlight: Ctrl-C that arrives while a hand-over
// (flock run to a server's run, or flock run --resume) is answered does
// not lose the run the server now drives: the command learns its id,
// pauses it there and says how to resume it, as for Ctrl-C while it
// follows the run. (Under load, the e2e TestHandoverInterruptAndResume
// sent its Ctrl-C in that window: the command said "interrupted", the
// run went on in the server.)
func TestHandoverInterruptedInFlight(t *testing.T) {
	const token = "operator-token-0123456789"
	a := testapp.Open(t, configs.Server{DataDir: filepath.Join(t.TempDir(), "data")})
	srv, err := server.New(configs.Server{Addr: "127.0.0.1:0"}, a.Executor, a.Executor.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.MountOperator(server.Operator{Token: token, Keys: a.Keys, DataDir: a.Config.DataDir}); err != nil {
		t.Fatal(err)
	}
	base := testkit.Serve(t, srv)
	// interrupted drives the command's steps as run.go does, its context
	// cancelled when the answer to path arrives.
	interrupted := func(t *testing.T, path string, start func(context.Context, *driver) (state.Run, error)) (string, string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := client.New(base, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: interruptOn{path: path, interrupt: cancel}}))
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		d := &driver{cmd: "run", data: a.Config.DataDir, stderr: &stderr, srv: &handle{url: base, c: c}, close: func() {}}
		h, err := start(ctx, d)
		if err != nil {
			t.Fatalf("Ctrl-C during the hand-over: %v\n%s", err, stderr.String())
		}
		if _, err := d.follow(ctx, h.ID, nil); err == nil || ctx.Err() == nil {
			t.Fatalf("follow after Ctrl-C: %v", err)
		} else {
			_ = d.interrupted(h.ID, err)
		}
		if !strings.Contains(stderr.String(), "run "+h.ID+" is paused in the flock server at "+base) {
			t.Fatalf("stderr:\n%s", stderr.String())
		}
		head, err := a.Store.Run(context.Background(), h.ID)
		if err != nil || head.Status != state.StatusPaused {
			t.Fatalf("the run after Ctrl-C: %s (%v)", head.Status, err)
		}
		return h.ID, stderr.String()
	}
	req := workflows.StartRequest{Settings: json.RawMessage(`{"workflow_type": "script", "commands": ["sleep 60"]}`)}
	id, _ := interrupted(t, "/operator/runs", func(ctx context.Context, d *driver) (state.Run, error) {
		h, _, _, err := d.launch(ctx, req)
		return h, err
	})
	interrupted(t, "/operator/runs/"+id+"/resume", func(ctx context.Context, d *driver) (state.Run, error) {
		return d.resume(ctx, id)
	})
}
