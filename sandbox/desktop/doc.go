// Package desktop is the sandbox's vm resource: AgentFlow's `vm:*` desktop
// automation tools on a real X desktop per session. AgentFlow takes an
// OSWorld virtual machine from a pool (docker or a cloud); flock gives each
// session its own virtual X display on the host (Debian's Xvfb), which
// needs no hypervisor and starts in well under a second. The backend is
// registered under the resource name "vm", so AgentFlow configs and
// clients that name vm work unchanged.
//
// # Sessions and processes
//
// Initialize starts, in the session's workspace, one reaper (package
// internal/reaper) whose child is a small /bin/sh launcher. The launcher
// starts Xvfb with -displayfd, so Xvfb itself picks the first free display
// number (binding the display's abstract socket is atomic, so concurrent
// sessions never collide) and reports it once it accepts connections;
// then the optional window manager and the start command (both `sh -c`,
// with DISPLAY, XAUTHORITY, HOME=<workspace>, the base set of the
// server's environment (isolation.Environ: PATH, ...), LANG=C.UTF-8 and the
// configured env, nothing else of the server's environment; not under
// bwrap: Xvfb and the operator's applications run as flock's user). All of them
// are descendants of the reaper and share the launcher's process group.
//
// Every display has its own MIT-MAGIC-COOKIE-1 (16 random bytes) in
// <workspace>/.desktop/Xauthority and Xvfb runs with -auth and -nolisten
// tcp, so an application of one session cannot connect to another
// session's display, and the server's connection sends the session's
// cookie itself (never through the process environment).
//
// Cleanup (destroy, TTL expiry, worker disconnect) and Shutdown send
// SIGTERM to Xvfb (which then removes its socket), the launcher exits,
// and the reaper kills every process left (window manager, application,
// anything they started, even in another session or process group); after
// 2 s the reaper kills everything at once (and the socket a killed Xvfb
// left is removed once nothing listens on it). A display whose Xvfb died
// answers 4007 until the session is destroyed. If flock dies, even by kill -9,
// the reaper's parent-death signal ends the tree the same way.
//
// # Input and screenshots
//
// The server talks X11 itself through github.com/jezek/xgb (pure Go; the
// xproto and xtest packages): input is XTEST FakeInput, each event checked
// (a round trip) so the server has processed it when the tool answers;
// screenshots are GetImage of the root window encoded as PNG (fastest
// compression). xgb was chosen over Debian's xdotool and a screenshot
// tool: no process per action, no image tool to install, and the
// per-session cookie stays in memory. Text is typed key by key from the
// server's keymap (Shift added for shifted characters); a character the
// keymap lacks (é, ö, CJK) is mapped onto a spare keycode first, as
// xdotool does.
//
// # Tools (vm:*, each on the caller's vm session or a temporary one)
//
//   - screenshot → {image: PNG base64, size: [w, h], session: name,
//     accessibility_tree}
//   - click {x★, y★, button: left|middle|right} → {clicked: [x, y], button}
//   - double_click {x★, y★} → {clicked}; right_click {x, y} (both or
//     neither; neither clicks where the mouse is) → {clicked: [x, y]|null}
//   - move {x★, y★} → {position}; drag {start_x★, start_y★, end_x★, end_y★}
//     → {from, to} (left button, 10 motion steps); scroll {x★, y★,
//     clicks★} → {position, clicks} (positive up, |clicks| ≤ 100)
//   - type {text★, interval 0..1 s} → {typed, length}; key {key★} → {key};
//     hotkey {keys★ []} → {keys} (pressed in order, released in reverse);
//     key_down/key_up {key★} → {key} (no Shift added)
//   - mouse_down/mouse_up {button} → {button}
//   - wait {seconds 0..60, default 1} → {waited}; done → {done: true};
//     fail {reason} → {failed: true, reason}
//   - pyautogui, evaluate: hidden; they answer 4001 "not supported" (they
//     run Python and OSWorld's evaluators inside AgentFlow's VM image)
//
// Every action but screenshot also answers with accessibility_tree. Keys
// are pyautogui's names (enter, esc, ctrl, win, pageup, f1...), common X
// keysym names, or one character.
//
// Bad input keeps the session usable: a coordinate off the screen, an
// unknown key or button, untypable text (control characters) or a value
// out of range is 4000, a missing parameter 4003, a wrong type 4004; the
// message and data.parameter name the parameter (keys[1] for the second
// key of a hotkey). A display whose Xvfb died answers 4007.
//
// # The accessibility tree
//
// accessibility_tree is a list of the mapped top-level windows, bottom to
// top: {id, title (_NET_WM_NAME, else WM_NAME), class (WM_CLASS), x, y,
// width, height, focused, override_redirect}. With a window manager the
// title is read from the client window inside the frame and the geometry
// is the frame's. Without one, the focused window is the one under the
// pointer (X's PointerRoot focus). It omits everything inside windows
// (widgets, text, roles, states): that needs AT-SPI on the session's D-Bus,
// which OSWorld's image runs and a bare Xvfb does not; unmapped and 1x1
// windows are left out too.
//
// # Config (resources.vm.config)
//
// screen_size ("1280x800x24" by default; "WxH", "WxHx24" or AgentFlow's
// [w, h]; only depth 24), window_manager (a command, default none),
// start_command (a shell command, default none), env (extra environment of
// both), start_timeout_s (10), window_wait_s (5: when start_command is
// set, the session's create waits up to this long for a window to be
// mapped, without failing; a start command that exits non-zero before a
// window shows fails the create, 4007 naming its status and its log),
// xvfb_path (default Xvfb on PATH; Provision
// fails naming this path without it). A session's session_config may set
// screen_size only. AgentFlow's VM-pool settings (provider, region,
// pool_size, snapshot_name, os_type, headless, client_password, ports,
// recording, setup, ...) and unknown keys are refused at start, naming
// them (unlike the other backends, whose unknown keys are warnings): a typo
// with the closest known key (`resources.vm.config.screen_sise: unknown
// setting (did you mean "screen_size"?)`).
//
// Tests skip naming the missing package when xvfb or python3-tk is absent
// (they fail instead under scripts/test.sh, which installs them).
package desktop
