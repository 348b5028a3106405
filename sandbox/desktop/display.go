package desktop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/reaper"
	"github.com/flockrun/flock/isolation"
)

// launcher is the shell the reaper runs as the session's one child: it
// starts Xvfb with -displayfd 3 (Xvfb picks the first free display number
// and writes it to fd 3 once it accepts connections), waits for the
// server to hand that number back on fd 4 (after it has written the
// display into the Xauthority file), then starts the window manager and
// the start command with DISPLAY set, and lives as long as Xvfb does. As
// a non-interactive shell it runs them all in its own process group.
const launcher = `xvfb=$1 screen=$2 auth=$3
"$xvfb" -displayfd 3 -screen 0 "$screen" -auth "$auth" -nolisten tcp -noreset -dpi 96 4<&- &
x=$!
exec 3>&-
if ! IFS= read -r d <&4; then kill "$x"; exit 1; fi
exec 4<&-
export DISPLAY=":$d"
wm=$FLOCK_DESKTOP_WM app=$FLOCK_DESKTOP_START
unset FLOCK_DESKTOP_WM FLOCK_DESKTOP_START
if [ -n "$wm" ]; then sh -c "$wm" </dev/null & fi
if [ -n "$app" ]; then (sh -c "$app" </dev/null; echo $? >"${auth%/*}/start-status") & fi
wait "$x"
`

// Display is one session's X desktop: an Xvfb with its own display
// number and cookie, the window manager and the start command, all under
// one reaper (package internal/reaper) in one process group, and the
// server's X connection to it.
type Display struct {
	Num    int
	Width  int
	Height int

	dir    string // <workspace>/.desktop: Xauthority, log
	auth   string
	proc   *reaper.Process
	exited chan struct{} // closed once the reaper has been waited for
	x      *client

	mu     sync.Mutex // held through Close
	closed bool       // guarded by mu
}

// startOptions is what Start needs from the backend's and the session's
// config.
type startOptions struct {
	Xvfb         string
	Width        int
	Height       int
	Depth        int
	WindowMgr    string
	StartCommand string
	Env          map[string]string
	StartTimeout time.Duration
	WindowWait   time.Duration
}

// Start starts a display for the session whose workspace is ws. On error
// nothing of it is left running.
func Start(ctx context.Context, ws string, o startOptions) (d *Display, err error) {
	dir := filepath.Join(ws, ".desktop")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	cookie := make([]byte, 16)
	if _, err := rand.Read(cookie); err != nil {
		return nil, fmt.Errorf("%w: cookie: %v", ErrStart, err)
	}
	authPath := filepath.Join(dir, "Xauthority")
	if err := writeXauth(authPath, "", cookie); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	defer devnull.Close()
	numR, numW, err := os.Pipe() // Xvfb → server: the display number
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	defer numR.Close()
	goR, goW, err := os.Pipe() // server → launcher: the display, once authorised
	if err != nil {
		numW.Close()
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	defer goW.Close()

	extra := []string{
		"HOME=" + ws,
		"XAUTHORITY=" + authPath,
		"LANG=C.UTF-8",
		"FLOCK_DESKTOP_WM=" + o.WindowMgr,
		"FLOCK_DESKTOP_START=" + o.StartCommand,
	}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra = append(extra, k+"="+o.Env[k])
	}
	env := isolation.Environ(configs.Isolation{}, extra...)
	screen := fmt.Sprintf("%dx%dx%d", o.Width, o.Height, o.Depth)
	proc, err := reaper.Start(reaper.Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", launcher, "flock-desktop", o.Xvfb, screen, authPath},
		Dir: ws, Env: env, Stdin: devnull, Stdout: logf, Stderr: logf,
		ExtraFiles: []*os.File{numW, goR}, // fds 3 and 4
	})
	numW.Close()
	goR.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	d = &Display{Num: -1, Width: o.Width, Height: o.Height, dir: dir, auth: authPath, proc: proc, exited: make(chan struct{})}
	go func() { // owned by d: Close waits for it
		_, _ = proc.Wait()
		close(d.exited)
	}()
	defer func() {
		if err != nil {
			d.Close()
			err = fmt.Errorf("%w: %v%s", ErrStart, err, d.logTail())
		}
	}()

	deadline := time.Now().Add(o.StartTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = numR.SetReadDeadline(deadline)
	line, rerr := bufio.NewReader(numR).ReadString('\n')
	if rerr != nil {
		if errors.Is(rerr, os.ErrDeadlineExceeded) {
			return d, fmt.Errorf("Xvfb did not report a display in time (start_timeout_s %s, or the call's deadline)", o.StartTimeout)
		}
		return d, errors.New("Xvfb exited before reporting a display")
	}
	d.Num, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil || d.Num < 0 {
		return d, fmt.Errorf("Xvfb reported display %q", strings.TrimSpace(line))
	}
	// The entry for this display number, for clients that match it
	// exactly; the wildcard entry stays for the ones that do not.
	if err := writeXauth(authPath, strconv.Itoa(d.Num), cookie); err != nil {
		return d, err
	}
	if _, err := fmt.Fprintf(goW, "%d\n", d.Num); err != nil {
		return d, fmt.Errorf("hand the display to the launcher: %v", err)
	}
	goW.Close()
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	d.x, err = dialX(cctx, d.Num, cookie)
	if err != nil {
		return d, err
	}
	if o.StartCommand != "" && o.WindowWait > 0 {
		if err := d.waitWindow(ctx, o.WindowWait); err != nil {
			return d, err
		}
	}
	return d, nil
}

// waitWindow returns once a top-level window is mapped, after limit, or
// when ctx ends: the start command's application is usually on screen by
// the session's first screenshot. A slow application is not an error; a
// start command that exits non-zero before any window shows (its
// application is not installed) is.
func (d *Display) waitWindow(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if ws, err := d.x.Windows(); err != nil || len(ws) > 0 {
			return nil
		}
		// The launcher writes the start command's exit status here.
		if b, err := os.ReadFile(filepath.Join(d.dir, "start-status")); err == nil {
			if st := strings.TrimSpace(string(b)); st != "" && st != "0" {
				return fmt.Errorf("start_command exited with status %s before showing a window", st)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.exited:
			return nil
		case <-tick.C:
		}
	}
}

// alive reports whether the display's processes are still running.
func (d *Display) alive() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// Close ends the display: Xvfb gets SIGTERM (so that it removes its
// socket in /tmp/.X11-unix), the launcher then exits and the reaper
// kills every process left (window manager, application, whatever they
// started); after 2 s the reaper is told to kill everything at once.
// Close returns once no process of the display is left, or after 10 s
// more with an error. It is safe to call more than once.
func (d *Display) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.x != nil {
		d.x.close()
	}
	if pid := d.xvfbPid(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-d.exited:
			return nil
		case <-time.After(2 * time.Second):
		}
	}
	d.proc.Kill()
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("display :%d: processes still running 10s after kill", d.Num)
	}
	d.removeStaleSocket()
	return nil
}

// removeStaleSocket removes the display's socket file that a killed Xvfb
// left behind, when nothing listens on it any more (a connection is
// refused). A socket another display has taken since accepts, and stays.
func (d *Display) removeStaleSocket() {
	if d.Num < 0 {
		return
	}
	path := fmt.Sprintf("/tmp/.X11-unix/X%d", d.Num)
	if _, err := os.Lstat(path); err != nil {
		return
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		_ = os.Remove(path)
	}
}

// xvfbPid returns the pid of this display's Xvfb, the one process whose
// command line names this session's Xauthority file after -auth, or 0.
// (Xvfb started with -displayfd writes no lock file to read it from.)
func (d *Display) xvfbPid() int {
	if d.auth == "" {
		return 0
	}
	want := []byte("\x00-auth\x00" + d.auth + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmd, want) {
			return pid
		}
	}
	return 0
}

// logTail returns the end of the display's log, for start errors.
func (d *Display) logTail() string {
	b, err := os.ReadFile(filepath.Join(d.dir, "log"))
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return " (log: " + strings.TrimSpace(string(b)) + ")"
}

// writeXauth writes an Xauthority file holding one MIT-MAGIC-COOKIE-1
// entry for any host (FamilyWild) and display number (empty for any),
// plus the any-display entry when number is set. The X server reads every
// cookie of the file its -auth names; clients (libXau) pick the entry
// matching their display.
func writeXauth(path, number string, cookie []byte) error {
	var b bytes.Buffer
	entry := func(num string) {
		put := func(s []byte) {
			_ = binary.Write(&b, binary.BigEndian, uint16(len(s)))
			b.Write(s)
		}
		_ = binary.Write(&b, binary.BigEndian, uint16(0xffff)) // FamilyWild
		put(nil)                                               // address
		put([]byte(num))
		put([]byte("MIT-MAGIC-COOKIE-1"))
		put(cookie)
	}
	if number != "" {
		entry(number)
	}
	entry("")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("xauthority: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("xauthority: %w", err)
	}
	return nil
}
