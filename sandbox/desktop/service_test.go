package desktop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server/sandboxapi"
)

// appState is what testdata/app.py writes to state.json.
type appState struct {
	Clicks  int    `json:"clicks"`
	Text    string `json:"text"`
	PID     int    `json:"pid"`
	Display string `json:"display"`
}

// harness is a sandbox service with the vm resource behind real HTTP.
type harness struct {
	t       testing.TB
	svc     *sandbox.Service
	url     string
	dataDir string
	client  *http.Client
	closed  bool
}

// appCommand starts testdata/app.py titled with the session's workspace
// name (its session id).
func appCommand(tb testing.TB) string {
	app, err := filepath.Abs("testdata/app.py")
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf(`exec python3 %s "$(basename "$PWD")"`, app)
}

func newHarness(tb testing.TB, server_ string, vm map[string]any) *harness {
	tb.Helper()
	section, _ := json.Marshal(map[string]any{"enabled": true, "config": vm})
	doc := fmt.Sprintf(`{%s"resources": {"vm": %s}}`, server_, section)
	cfg, err := sandbox.ParseConfig([]byte(doc), func(string) (string, bool) { return "", false })
	if err != nil {
		tb.Fatal(err)
	}
	h := &harness{t: tb, dataDir: tb.TempDir(), client: &http.Client{Timeout: 60 * time.Second}}
	h.svc, err = sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: h.dataDir})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := sandboxapi.NewServer(configs.Server{Addr: "127.0.0.1:0", DataDir: tb.TempDir()}, h.svc, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	h.url = ts.URL
	tb.Cleanup(func() {
		ts.Close()
		h.close()
	})
	return h
}

func (h *harness) close() {
	if !h.closed {
		h.closed = true
		if err := h.svc.Close(context.Background()); err != nil {
			h.t.Errorf("close: %v", err)
		}
	}
}

func (h *harness) post(path string, body any) (int, testsandbox.Envelope) {
	h.t.Helper()
	return testsandbox.Post(h.t, h.client, h.url+path, body)
}

func (h *harness) exec(worker, action string, params map[string]any) (int, testsandbox.Envelope) {
	h.t.Helper()
	return h.post("/api/v1/execute", map[string]any{"worker_id": worker, "action": action, "params": params})
}

// mustExec runs an action that must succeed and decodes its data into out.
func (h *harness) mustExec(worker, action string, params map[string]any, out any) {
	h.t.Helper()
	st, env := h.exec(worker, action, params)
	if st != 200 || env.Code != 0 {
		h.t.Fatalf("%s %s %v: %d %d %s %s", worker, action, params, st, env.Code, env.Message, env.Data)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			h.t.Fatalf("%s: %v: %s", action, err, env.Data)
		}
	}
}

// create creates worker's vm session and returns its workspace.
func (h *harness) create(worker string) string {
	h.t.Helper()
	st, env := h.post("/api/v1/session/create", map[string]any{"worker_id": worker, "resource_type": "vm"})
	var data struct {
		SessionID string `json:"session_id"`
	}
	if st != 200 || env.Code != 0 || json.Unmarshal(env.Data, &data) != nil {
		h.t.Fatalf("create %s: %d %+v %s", worker, st, env, env.Data)
	}
	return filepath.Join(h.dataDir, "workspaces", data.SessionID)
}

func (h *harness) destroy(worker string) {
	h.t.Helper()
	if st, env := h.post("/api/v1/session/destroy", map[string]any{"worker_id": worker, "resource_type": "vm"}); st != 200 || env.Code != 0 {
		h.t.Fatalf("destroy %s: %d %+v", worker, st, env)
	}
}

func readState(ws string) (appState, bool) {
	var s appState
	b, err := os.ReadFile(filepath.Join(ws, "state.json"))
	return s, err == nil && json.Unmarshal(b, &s) == nil
}

// waitState waits until the app of ws writes a state for which ok holds.
func waitState(tb testing.TB, ws string, what string, ok func(appState) bool) appState {
	tb.Helper()
	var s appState
	testkit.WaitWithin(tb, 15*time.Second, what, func() bool {
		var read bool
		s, read = readState(ws)
		return read && ok(s)
	})
	return s
}

type shot struct {
	Image   []byte   `json:"image"`
	Size    []int    `json:"size"`
	Session string   `json:"session"`
	Tree    []Window `json:"accessibility_tree"`
}

func (s shot) decode(tb testing.TB) image.Image {
	tb.Helper()
	img, err := png.Decode(bytes.NewReader(s.Image))
	if err != nil {
		tb.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img
}

// diff counts the pixels of r that differ between a and b.
func diff(a, b image.Image, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !sameColor(a, b, x, y) {
				n++
			}
		}
	}
	return n
}

func sameColor(a, b image.Image, x, y int) bool {
	r1, g1, b1, _ := a.At(x, y).RGBA()
	r2, g2, b2, _ := b.At(x, y).RGBA()
	return r1 == r2 && g1 == g2 && b1 == b2
}

// Widget centres in testdata/app.py's window at (0, 0).
const (
	buttonX, buttonY = 80, 40
	entryX, entryY   = 170, 95
	labelX, labelY   = 120, 150
)

// TestDesktopHTTP drives a Tk application through the vm tools over real
// HTTP and a real Xvfb: a click and typed text change the file the
// application writes, screenshots before and after differ where the
// application changed and nowhere else sampled, the accessibility tree
// lists its window, bad input is 4000/4003 naming the parameter and leaves
// the session usable, and destroy leaves no process of the display.
func TestDesktopHTTP(t *testing.T) {
	needDesktop(t, true)
	h := newHarness(t, "", map[string]any{"start_command": appCommand(t)})
	ws := h.create("w1")
	first := waitState(t, ws, "the app's first state", func(appState) bool { return true })
	if first.Display == "" || first.PID == 0 {
		t.Fatalf("app state %+v", first)
	}

	var before shot
	h.mustExec("w1", "vm:screenshot", nil, &before)
	if len(before.Size) != 2 || before.Size[0] != 1280 || before.Size[1] != 800 || !strings.HasPrefix(before.Session, "vm_w1_") {
		t.Fatalf("screenshot size %v session %q", before.Size, before.Session)
	}
	img0 := before.decode(t)
	if b := img0.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Fatalf("png is %v", b)
	}
	if len(before.Tree) != 1 {
		t.Fatalf("accessibility tree %+v, want the app's window", before.Tree)
	}
	win := before.Tree[0]
	if win.Title != filepath.Base(ws) || win.X != 0 || win.Y != 0 || win.Width != 400 || win.Height != 200 || win.Class != "Tk" {
		t.Fatalf("window %+v", win)
	}

	var clicked struct {
		Clicked []int    `json:"clicked"`
		Button  string   `json:"button"`
		Tree    []Window `json:"accessibility_tree"`
	}
	h.mustExec("w1", "vm:click", map[string]any{"x": buttonX, "y": buttonY}, &clicked)
	if fmt.Sprint(clicked.Clicked) != "[80 40]" || clicked.Button != "left" || len(clicked.Tree) != 1 || !clicked.Tree[0].Focused {
		t.Fatalf("click data %+v", clicked)
	}
	waitState(t, ws, "clicks == 1", func(s appState) bool { return s.Clicks == 1 })

	h.mustExec("w1", "vm:click", map[string]any{"x": entryX, "y": entryY}, nil)
	var typed struct {
		Typed  string `json:"typed"`
		Length int    `json:"length"`
	}
	h.mustExec("w1", "vm:type", map[string]any{"text": "Hello, Wörld!"}, &typed)
	if typed.Typed != "Hello, Wörld!" || typed.Length != 13 {
		t.Fatalf("type data %+v", typed)
	}
	waitState(t, ws, "the typed text", func(s appState) bool { return s.Text == "Hello, Wörld!" })
	h.mustExec("w1", "vm:key", map[string]any{"key": "backspace"}, nil)
	h.mustExec("w1", "vm:hotkey", map[string]any{"keys": []string{"shift", "1"}}, nil)
	waitState(t, ws, "backspace and shift+1", func(s appState) bool { return s.Text == "Hello, Wörld!" })
	h.mustExec("w1", "vm:hotkey", map[string]any{"keys": []string{"ctrl", "a"}}, nil) // Tk: cursor to the line start
	h.mustExec("w1", "vm:type", map[string]any{"text": ">"}, nil)
	waitState(t, ws, "text typed at the start after ctrl+a", func(s appState) bool { return s.Text == ">Hello, Wörld!" })

	var after shot
	h.mustExec("w1", "vm:screenshot", nil, &after)
	img1 := after.decode(t)
	if diff(img0, img1, image.Rect(22, 132, 218, 168)) == 0 {
		t.Error("the label's pixels did not change after the click")
	}
	if diff(img0, img1, image.Rect(22, 82, 318, 108)) == 0 {
		t.Error("the text field's pixels did not change after typing")
	}
	if n := diff(img0, img1, image.Rect(400, 0, 1280, 800)); n != 0 {
		t.Errorf("%d pixels changed right of the application's window", n)
	}
	for _, p := range [][2]int{{700, 500}, {1279, 799}, {390, 10}} {
		if !sameColor(img0, img1, p[0], p[1]) {
			t.Errorf("pixel %v changed outside the application's widgets", p)
		}
	}

	// The other actions answer their wire shapes.
	for _, a := range []struct {
		action string
		params map[string]any
		want   string
	}{
		{"vm:move", map[string]any{"x": 10, "y": 20}, `"position":[10,20]`},
		{"vm:double_click", map[string]any{"x": entryX, "y": entryY}, `"clicked":[170,95]`},
		{"vm:right_click", map[string]any{}, `"clicked":null`},
		{"vm:drag", map[string]any{"start_x": 30, "start_y": 95, "end_x": 200, "end_y": 95}, `"from":[30,95],"to":[200,95]`},
		{"vm:scroll", map[string]any{"x": 600, "y": 400, "clicks": -3}, `"clicks":-3`},
		{"vm:key_down", map[string]any{"key": "shift"}, `"key":"shift"`},
		{"vm:key_up", map[string]any{"key": "shift"}, `"key":"shift"`},
		{"vm:mouse_down", map[string]any{"button": "middle"}, `"button":"middle"`},
		{"vm:mouse_up", map[string]any{"button": "middle"}, `"button":"middle"`},
		{"vm:wait", map[string]any{"seconds": 0.01}, `"waited":0.01`},
		{"vm:done", nil, `"done":true`},
		{"vm:fail", map[string]any{"reason": "stuck"}, `"reason":"stuck"`},
	} {
		st, env := h.exec("w1", a.action, a.params)
		if st != 200 || env.Code != 0 || !strings.Contains(string(env.Data), a.want) {
			t.Fatalf("%s: %d %d %s %s", a.action, st, env.Code, env.Message, env.Data)
		}
	}

	// Bad input names the parameter and leaves the session usable.
	for _, bad := range []struct {
		action string
		params map[string]any
		code   int
		param  string
	}{
		{"vm:click", map[string]any{"x": 1280, "y": 10}, 4000, "x"},
		{"vm:click", map[string]any{"x": 10, "y": -1}, 4000, "y"},
		{"vm:click", map[string]any{"x": 10}, 4003, "y"},
		{"vm:click", map[string]any{"x": 10, "y": 10, "button": "fourth"}, 4000, "button"},
		{"vm:drag", map[string]any{"start_x": 1, "start_y": 1, "end_x": 1, "end_y": 9000}, 4000, "end_y"},
		{"vm:right_click", map[string]any{"x": 5}, 4003, "y"},
		{"vm:scroll", map[string]any{"x": 1, "y": 1, "clicks": 1000}, 4000, "clicks"},
		{"vm:key", map[string]any{"key": "hyperdrive"}, 4000, "key"},
		{"vm:key", map[string]any{}, 4003, "key"},
		{"vm:hotkey", map[string]any{"keys": []string{"ctrl", "nosuchkey"}}, 4000, "keys[1]"},
		{"vm:hotkey", map[string]any{"keys": []string{}}, 4000, "keys"},
		{"vm:type", map[string]any{"text": "a\x01b"}, 4000, "text"},
		{"vm:type", map[string]any{"text": "a", "interval": 5}, 4000, "interval"},
		{"vm:wait", map[string]any{"seconds": 3600}, 4000, "seconds"},
		{"vm:move", map[string]any{"x": "left", "y": 1}, 4004, "x"},
	} {
		st, env := h.exec("w1", bad.action, bad.params)
		var data struct {
			Parameter string `json:"parameter"`
		}
		_ = json.Unmarshal(env.Data, &data)
		if st != 400 || env.Code != bad.code || data.Parameter != bad.param || !strings.Contains(env.Message, bad.param) {
			t.Errorf("%s %v: %d %d %q %s, want %d naming %s", bad.action, bad.params, st, env.Code, env.Message, env.Data, bad.code, bad.param)
		}
	}
	for _, a := range []string{"vm:pyautogui", "vm:evaluate"} {
		st, env := h.exec("w1", a, map[string]any{"command": "pyautogui.click()", "evaluator": map[string]any{}})
		if st != 400 || env.Code != sandbox.CodeBusinessFailure || !strings.Contains(env.Message, "not supported") {
			t.Errorf("%s: %d %d %q", a, st, env.Code, env.Message)
		}
	}
	h.mustExec("w1", "vm:click", map[string]any{"x": buttonX, "y": buttonY}, nil)
	waitState(t, ws, "clicks == 2 after the bad calls", func(s appState) bool { return s.Clicks == 2 })

	// Destroy ends Xvfb, the launcher and the application.
	num, err := strconv.Atoi(strings.TrimPrefix(first.Display, ":"))
	if err != nil {
		t.Fatal(err)
	}
	procs := workspaceProcesses(ws)
	if len(procs) < 3 { // reaper's shell, Xvfb, python
		t.Fatalf("session processes %v, want the launcher, Xvfb and the app", procs)
	}
	h.destroy("w1")
	if left := workspaceProcesses(ws); len(left) != 0 {
		t.Fatalf("processes left after destroy: %v", left)
	}
	if testkit.Alive(first.PID) {
		t.Fatalf("the app (pid %d) survives destroy", first.PID)
	}
	// Xvfb ended cleanly: it removed its socket. (The tests of this
	// package start displays one test at a time, so no other display can
	// have taken the number since.)
	if _, err := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", num)); err == nil {
		t.Errorf("/tmp/.X11-unix/X%d left after destroy", num)
	}
}

// TestDesktopParallel runs 16 sessions at once, each with its own Tk
// application: each session's clicks and text reach its own application
// only, each lists only its own window, the displays are distinct, and
// every process is gone after the sessions are destroyed.
func TestDesktopParallel(t *testing.T) {
	needDesktop(t, true)
	if testing.Short() {
		t.Skip("16 Xvfb sessions; scripts/test.sh runs it")
	}
	h := newHarness(t, "", map[string]any{"start_command": appCommand(t)})
	const n = 16
	wss := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { wss[i] = h.create(fmt.Sprintf("p%02d", i)) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i := range n {
		wg.Go(func() {
			w := fmt.Sprintf("p%02d", i)
			waitState(t, wss[i], w+" app start", func(appState) bool { return true })
			for range i%3 + 1 {
				h.mustExec(w, "vm:click", map[string]any{"x": buttonX, "y": buttonY}, nil)
			}
			h.mustExec(w, "vm:click", map[string]any{"x": entryX, "y": entryY}, nil)
			h.mustExec(w, "vm:type", map[string]any{"text": "session " + w}, nil)
		})
	}
	wg.Wait()
	displays := map[string]string{}
	for i := range n {
		w := fmt.Sprintf("p%02d", i)
		s := waitState(t, wss[i], w+" state", func(s appState) bool { return s.Text == "session "+w && s.Clicks == i%3+1 })
		if other, dup := displays[s.Display]; dup {
			t.Fatalf("%s and %s share display %s", w, other, s.Display)
		}
		displays[s.Display] = w
		var sh shot
		h.mustExec(w, "vm:screenshot", nil, &sh)
		if len(sh.Tree) != 1 || sh.Tree[0].Title != filepath.Base(wss[i]) {
			t.Fatalf("%s sees windows %+v", w, sh.Tree)
		}
	}
	for i := range n {
		wg.Go(func() { h.destroy(fmt.Sprintf("p%02d", i)) })
	}
	wg.Wait()
	for _, ws := range wss {
		if left := workspaceProcesses(ws); len(left) != 0 {
			t.Fatalf("processes of %s left after destroy: %v", ws, left)
		}
	}
}

// TestDesktopExpiryAndShutdown: a session whose TTL runs out and one still
// open when the service closes both leave no process behind.
func TestDesktopExpiryAndShutdown(t *testing.T) {
	needDesktop(t, false)
	h := newHarness(t, `"server": {"session_ttl": 1, "cleanup_interval": 0.2}, `, map[string]any{"start_command": "exec sleep 300", "window_wait_s": 0})
	wsExpire := h.create("expire")
	if len(workspaceProcesses(wsExpire)) < 3 {
		t.Fatalf("session processes %v", workspaceProcesses(wsExpire))
	}
	testkit.WaitWithin(t, 10*time.Second, "the expired session's processes to end", func() bool {
		return len(workspaceProcesses(wsExpire)) == 0
	})
	wsOpen := h.create("open")
	if len(workspaceProcesses(wsOpen)) < 3 {
		t.Fatalf("session processes %v", workspaceProcesses(wsOpen))
	}
	h.close()
	if left := workspaceProcesses(wsOpen); len(left) != 0 {
		t.Fatalf("processes left after Close: %v", left)
	}
}

// TestConfig: AgentFlow's VM-pool settings and unknown settings are
// refused at start naming them (a typo with the closest known key); a bad
// value names its path.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		vm   string
		want []string
	}{
		{"provider", `{"provider": "docker", "pool_size": 2, "screen_size": [1920, 1080]}`, []string{"resources.vm.config.pool_size", "pool_size, provider", "not supported"}},
		{"unknown", `{"colour": "blue", "shade": 1}`, []string{"resources.vm.config.colour: unknown setting; also unknown: shade"}},
		{"typo", `{"screen_sise": "640x480"}`, []string{`resources.vm.config.screen_sise: unknown setting (did you mean "screen_size"?)`}},
		{"env type", `{"env": {"A": 1}}`, []string{"resources.vm.config.env.A: want a string, got JSON number"}},
		{"env reserved", `{"env": {"DISPLAY": ":9"}}`, []string{"resources.vm.config.env.DISPLAY: is set by the backend"}},
		{"wait", `{"window_wait_s": 601}`, []string{"resources.vm.config.window_wait_s: want a number of seconds from 0 to 600, got 601"}},
		{"start", `{"start_timeout_s": 0.01}`, []string{"resources.vm.config.start_timeout_s: want a number of seconds from 0.1 to 600, got 0.01"}},
		{"wm", `{"window_manager": 3}`, []string{"resources.vm.config.window_manager: want a string, got JSON number"}},
		{"screen type", `{"screen_size": {"w": 1}}`, []string{"resources.vm.config.screen_size: want \"WIDTHxHEIGHT[x24]\" or [width, height]"}},
		{"screen", `{"screen_size": "1280x800x16"}`, []string{"resources.vm.config.screen_size", "depth 16"}},
		{"screen-small", `{"screen_size": [10, 10]}`, []string{"resources.vm.config.screen_size", "64 to 8192"}},
		{"xvfb", `{"xvfb_path": "/nonexistent/Xvfb"}`, []string{"resources.vm.config.xvfb_path", "Xvfb not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := sandbox.ParseConfig([]byte(`{"resources": {"vm": {"enabled": true, "config": `+tc.vm+`}}}`), func(string) (string, bool) { return "", false })
			if err == nil {
				var svc *sandbox.Service
				svc, err = sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
				if err == nil {
					svc.Close(context.Background())
				}
			}
			if err == nil {
				t.Fatal("config accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	w, hgt, d, err := parseScreenSize([]any{json.Number("1024"), json.Number("768")})
	if err != nil || w != 1024 || hgt != 768 || d != 24 {
		t.Fatalf("parseScreenSize = %d %d %d %v", w, hgt, d, err)
	}
}

// TestDisplayIsolation: two displays get distinct numbers, a display
// refuses a connection without its own cookie, and the screen size comes from the options.
func TestDisplayIsolation(t *testing.T) {
	needDesktop(t, false)
	xvfb, _ := FindXvfb()
	o := startOptions{Xvfb: xvfb, Width: 640, Height: 480, Depth: 24, StartTimeout: 10 * time.Second}
	ctx := context.Background()
	a, err := Start(ctx, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Start(ctx, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Num == b.Num {
		t.Fatalf("both displays are :%d", a.Num)
	}
	if a.x.width != 640 || a.x.height != 480 {
		t.Fatalf("screen %dx%d", a.x.width, a.x.height)
	}
	wrong := make([]byte, 16)
	if c, err := dialX(ctx, b.Num, wrong); err == nil {
		c.close()
		t.Fatal("display b accepted a connection without its cookie")
	} else if !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err = %v, want an authorization refusal", err)
	}
	img, err := a.x.Screenshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(img)); err != nil {
		t.Fatal(err)
	}
}

// TestConfigExample: configs/sandbox/desktop.json (the README's example)
// is accepted; when xterm is installed its session shows xterm's window.
func TestConfigExample(t *testing.T) {
	needDesktop(t, false)
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "sandbox", "desktop.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sandbox.ParseConfig(raw, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	if _, err := exec.LookPath("xterm"); err != nil {
		t.Log("xterm is not installed: the example's session is not started")
		return
	}
	c := sandbox.Caller{Worker: "w"}
	if env := svc.CreateSession(context.Background(), c, "vm", nil, ""); env.Code != 0 {
		t.Fatalf("create: %+v", env)
	}
	env := svc.Execute(context.Background(), c, sandbox.Action{Action: "vm:screenshot"})
	data, _ := env.Data.(map[string]any)
	tree, _ := data["accessibility_tree"].([]Window)
	if env.Code != 0 || len(tree) != 1 || tree[0].Class != "XTerm" {
		t.Fatalf("screenshot: %d %s, windows %+v", env.Code, env.Message, tree)
	}
}

// TestDisplayDies: when a session's Xvfb is killed, its calls answer 4007
// naming the display, and destroy still ends everything.
func TestDisplayDies(t *testing.T) {
	needDesktop(t, false)
	// The workspace is removed on destroy: DISPLAY is written beside it.
	h := newHarness(t, "", map[string]any{"start_command": `echo "$DISPLAY" > "$PWD.display"; exec sleep 300`, "window_wait_s": 0})
	ws := h.create("w")
	testkit.WaitWithin(t, 10*time.Second, "DISPLAY written", func() bool {
		b, err := os.ReadFile(ws + ".display")
		return err == nil && strings.HasPrefix(string(b), ":")
	})
	auth := []byte("\x00-auth\x00" + filepath.Join(ws, ".desktop", "Xauthority") + "\x00")
	xvfb := liveProcesses(func(cmd []byte, _ string) bool { return bytes.Contains(cmd, auth) })
	if len(xvfb) != 1 {
		t.Fatalf("Xvfb processes %v", xvfb)
	}
	if err := syscall.Kill(xvfb[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 10*time.Second, "calls to answer 4007", func() bool {
		st, env := h.exec("w", "vm:screenshot", nil)
		return st == 400 && env.Code == sandbox.CodeResourceNotInitialized && strings.Contains(env.Message, "is gone")
	})
	if left := workspaceProcesses(ws); len(left) != 0 {
		t.Fatalf("processes left after Xvfb died: %v", left)
	}
	h.destroy("w")
	// The socket file the killed Xvfb left is removed with the session.
	display, err := os.ReadFile(filepath.Join(ws + ".display"))
	if err != nil {
		t.Fatal(err)
	}
	sock := "/tmp/.X11-unix/X" + strings.TrimPrefix(strings.TrimSpace(string(display)), ":")
	if _, err := os.Stat(sock); err == nil {
		t.Fatalf("%s left after destroy", sock)
	}
}

// TestStartCommandFails: a start_command that fails before any window
// shows (the application is not installed: the README's xterm on a
// machine without it) fails the session's create with 4007 naming its
// exit status and its error, instead of a session on an empty screen.
func TestStartCommandFails(t *testing.T) {
	needDesktop(t, false)
	h := newHarness(t, "", map[string]any{"start_command": "exec flock-no-such-app -geometry 100x30", "window_wait_s": 30})
	st, env := h.post("/api/v1/session/create", map[string]any{"worker_id": "w", "resource_type": "vm"})
	if st != 500 || env.Code != sandbox.CodeResourceNotInitialized ||
		!strings.Contains(env.Message, "start_command exited with status 127") || !strings.Contains(env.Message, "flock-no-such-app") {
		t.Fatalf("create: %d %d %q: want 500, 4007 naming the start command's failure", st, env.Code, env.Message)
	}
}
