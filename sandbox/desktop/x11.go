package desktop

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

func init() {
	// xgb logs through a package-level logger (connection errors, the
	// Xauthority file it reads from the environment, which this package
	// never relies on: see authConn). Its messages carry nothing a caller
	// of the sandbox acts on; errors reach callers as returned errors.
	xgb.Logger = log.New(io.Discard, "", 0)
}

// XTEST event types (X protocol core event codes).
const (
	evKeyPress      = 2
	evKeyRelease    = 3
	evButtonPress   = 4
	evButtonRelease = 5
	evMotionNotify  = 6
)

// client is one connection to a session's X server: input through the
// XTEST extension, screenshots through GetImage, the window list through
// QueryTree and window properties. Its methods are safe for concurrent
// use; the sandbox core runs one call per session at a time anyway.
type client struct {
	conn   *xgb.Conn
	root   xproto.Window
	width  int
	height int
	// red, green and blue masks of the root visual (TrueColor, 24 bits in
	// 32-bit pixels), and the server's byte order.
	masks     [3]uint32
	lsbFirst  bool
	atomNames map[string]xproto.Atom

	mu  sync.Mutex // guards kbd
	kbd *keyboard
}

// authConn sends the X connection setup with the session's own cookie,
// whatever xgb read from the server's environment: the first Write (the
// setup request xgb builds) is replaced by one carrying MIT-MAGIC-COOKIE-1
// and cookie. This keeps the cookie out of the process environment, which
// 16 concurrent sessions could not share anyway.
type authConn struct {
	net.Conn
	cookie []byte
	sent   bool
}

func (a *authConn) Write(p []byte) (int, error) {
	if a.sent {
		return a.Conn.Write(p)
	}
	a.sent = true
	const name = "MIT-MAGIC-COOKIE-1"
	pad := func(n int) int { return (n + 3) &^ 3 }
	buf := make([]byte, 12+pad(len(name))+pad(len(a.cookie)))
	buf[0] = 0x6c // little-endian client
	binary.LittleEndian.PutUint16(buf[2:], 11)
	binary.LittleEndian.PutUint16(buf[6:], uint16(len(name)))
	binary.LittleEndian.PutUint16(buf[8:], uint16(len(a.cookie)))
	copy(buf[12:], name)
	copy(buf[12+pad(len(name)):], a.cookie)
	if _, err := a.Conn.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// dialX connects to display number num on its Unix socket with cookie.
func dialX(ctx context.Context, num int, cookie []byte) (*client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", fmt.Sprintf("/tmp/.X11-unix/X%d", num))
	if err != nil {
		return nil, fmt.Errorf("connect to display :%d: %w", num, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	conn, err := xgb.NewConnNet(&authConn{Conn: nc, cookie: cookie})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to display :%d: %w", num, err)
	}
	_ = nc.SetDeadline(time.Time{})
	c := &client{conn: conn, atomNames: map[string]xproto.Atom{}}
	if err := c.setUp(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("display :%d: %w", num, err)
	}
	return c, nil
}

func (c *client) setUp() error {
	setup := xproto.Setup(c.conn)
	if setup == nil || len(setup.Roots) == 0 {
		return errors.New("no screen")
	}
	scr := setup.DefaultScreen(c.conn)
	c.root = scr.Root
	c.width, c.height = int(scr.WidthInPixels), int(scr.HeightInPixels)
	c.lsbFirst = setup.ImageByteOrder == xproto.ImageOrderLSBFirst
	found := false
	for _, d := range scr.AllowedDepths {
		for _, v := range d.Visuals {
			if v.VisualId == scr.RootVisual {
				c.masks = [3]uint32{v.RedMask, v.GreenMask, v.BlueMask}
				found = true
			}
		}
	}
	if !found || scr.RootDepth < 24 {
		return fmt.Errorf("root visual of depth %d is not 24-bit TrueColor", scr.RootDepth)
	}
	if err := xtest.Init(c.conn); err != nil {
		return fmt.Errorf("XTEST extension: %w", err)
	}
	kbd, err := loadKeyboard(c.conn, setup.MinKeycode, setup.MaxKeycode)
	if err != nil {
		return err
	}
	c.kbd = kbd
	return nil
}

func (c *client) close() { c.conn.Close() }

// fake sends one XTEST event and waits until the server has processed it.
func (c *client) fake(typ, detail byte, x, y int) error {
	err := xtest.FakeInputChecked(c.conn, typ, detail, 0, c.root, int16(x), int16(y), 0).Check()
	if err != nil {
		return fmt.Errorf("xtest: %w", err)
	}
	return nil
}

// Move puts the pointer at (x, y).
func (c *client) Move(x, y int) error { return c.fake(evMotionNotify, 0, x, y) }

// Button presses (down) or releases button (1 left, 2 middle, 3 right,
// 4/5 wheel up/down, 6/7 wheel left/right).
func (c *client) Button(button byte, down bool) error {
	if down {
		return c.fake(evButtonPress, button, 0, 0)
	}
	return c.fake(evButtonRelease, button, 0, 0)
}

// Click presses and releases button n times at the pointer.
func (c *client) Click(button byte, n int) error {
	for range n {
		if err := c.Button(button, true); err != nil {
			return err
		}
		if err := c.Button(button, false); err != nil {
			return err
		}
	}
	return nil
}

// Pointer returns the pointer's position.
func (c *client) Pointer() (int, int, error) {
	r, err := xproto.QueryPointer(c.conn, c.root).Reply()
	if err != nil {
		return 0, 0, fmt.Errorf("query pointer: %w", err)
	}
	return int(r.RootX), int(r.RootY), nil
}

// Key presses (down) or releases the key of keysym; shift adds the Shift
// key around it when the keysym sits on the shifted level.
func (c *client) Key(ks xproto.Keysym, down, withShift bool) error {
	c.mu.Lock()
	kc, shifted, err := c.kbd.keycode(c.conn, ks)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	shiftKc := c.kbd.shift
	useShift := withShift && shifted && shiftKc != 0
	if down {
		if useShift {
			if err := c.fake(evKeyPress, byte(shiftKc), 0, 0); err != nil {
				return err
			}
		}
		return c.fake(evKeyPress, byte(kc), 0, 0)
	}
	if err := c.fake(evKeyRelease, byte(kc), 0, 0); err != nil {
		return err
	}
	if useShift {
		return c.fake(evKeyRelease, byte(shiftKc), 0, 0)
	}
	return nil
}

// Tap presses and releases the key of ks (with Shift when it needs it).
func (c *client) Tap(ks xproto.Keysym) error {
	if err := c.Key(ks, true, true); err != nil {
		return err
	}
	return c.Key(ks, false, true)
}

// Screenshot returns the screen as a PNG.
func (c *client) Screenshot() ([]byte, error) {
	r, err := xproto.GetImage(c.conn, xproto.ImageFormatZPixmap, xproto.Drawable(c.root),
		0, 0, uint16(c.width), uint16(c.height), 0xffffffff).Reply()
	if err != nil {
		return nil, fmt.Errorf("get image: %w", err)
	}
	n := c.width * c.height
	if len(r.Data) < 4*n {
		return nil, fmt.Errorf("get image: %d bytes for %dx%d pixels", len(r.Data), c.width, c.height)
	}
	img := image.NewRGBA(image.Rect(0, 0, c.width, c.height))
	shift := func(m uint32) uint {
		var s uint
		for m != 0 && m&1 == 0 {
			m >>= 1
			s++
		}
		return s
	}
	rs, gs, bs := shift(c.masks[0]), shift(c.masks[1]), shift(c.masks[2])
	for i := 0; i < n; i++ {
		b := r.Data[4*i : 4*i+4]
		var p uint32
		if c.lsbFirst {
			p = binary.LittleEndian.Uint32(b)
		} else {
			p = binary.BigEndian.Uint32(b)
		}
		o := img.Pix[4*i : 4*i+4]
		o[0] = byte((p & c.masks[0]) >> rs)
		o[1] = byte((p & c.masks[1]) >> gs)
		o[2] = byte((p & c.masks[2]) >> bs)
		o[3] = 0xff
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return buf.Bytes(), nil
}

// Window is one mapped top-level window as the accessibility tree lists it.
type Window struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Class is the WM_CLASS class (e.g. "Tk"), "" when unset.
	Class  string `json:"class,omitempty"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	// Focused is true for the window holding the keyboard focus (or
	// containing the focused window).
	Focused bool `json:"focused"`
	// OverrideRedirect marks windows the window manager does not manage
	// (menus, tooltips).
	OverrideRedirect bool `json:"override_redirect,omitempty"`
}

func (c *client) atom(name string) xproto.Atom {
	if a, ok := c.atomNames[name]; ok {
		return a
	}
	r, err := xproto.InternAtom(c.conn, false, uint16(len(name)), name).Reply()
	if err != nil {
		return 0
	}
	c.atomNames[name] = r.Atom
	return r.Atom
}

func (c *client) property(w xproto.Window, name string) []byte {
	a := c.atom(name)
	if a == 0 {
		return nil
	}
	r, err := xproto.GetProperty(c.conn, false, w, a, xproto.GetPropertyTypeAny, 0, 1024).Reply()
	if err != nil || r == nil {
		return nil
	}
	return r.Value
}

// clientWindow returns the window under top carrying WM_STATE (the
// application's window inside a window manager's frame), or top.
func (c *client) clientWindow(top xproto.Window, depth int) (xproto.Window, bool) {
	if c.property(top, "WM_STATE") != nil {
		return top, true
	}
	if depth == 0 {
		return top, false
	}
	t, err := xproto.QueryTree(c.conn, top).Reply()
	if err != nil {
		return top, false
	}
	for _, ch := range t.Children {
		if w, ok := c.clientWindow(ch, depth-1); ok {
			return w, true
		}
	}
	return top, false
}

// Windows lists the mapped top-level windows, bottom to top.
func (c *client) Windows() ([]Window, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tree, err := xproto.QueryTree(c.conn, c.root).Reply()
	if err != nil {
		return nil, fmt.Errorf("query tree: %w", err)
	}
	focus := xproto.Window(0)
	if f, err := xproto.GetInputFocus(c.conn).Reply(); err == nil {
		focus = f.Focus
	}
	var focusTop xproto.Window
	if focus == xproto.InputFocusPointerRoot || focus == xproto.InputFocusNone {
		// No window manager set the focus: keys go to the window under
		// the pointer.
		if p, err := xproto.QueryPointer(c.conn, c.root).Reply(); err == nil && focus == xproto.InputFocusPointerRoot {
			focusTop = p.Child
		}
	} else {
		focusTop = c.topLevel(focus)
	}
	out := []Window{}
	for _, w := range tree.Children {
		attr, err := xproto.GetWindowAttributes(c.conn, w).Reply()
		if err != nil || attr.MapState != xproto.MapStateViewable {
			continue
		}
		geo, err := xproto.GetGeometry(c.conn, xproto.Drawable(w)).Reply()
		if err != nil || geo.Width <= 1 || geo.Height <= 1 {
			continue
		}
		cw, _ := c.clientWindow(w, 2)
		title := string(c.property(cw, "_NET_WM_NAME"))
		if title == "" {
			title = string(c.property(cw, "WM_NAME"))
		}
		class := ""
		if parts := strings.Split(string(c.property(cw, "WM_CLASS")), "\x00"); len(parts) >= 2 {
			class = parts[1]
		}
		out = append(out, Window{
			ID: fmt.Sprintf("0x%x", uint32(cw)), Title: title, Class: class,
			X: int(geo.X), Y: int(geo.Y), Width: int(geo.Width), Height: int(geo.Height),
			Focused: focusTop == w, OverrideRedirect: attr.OverrideRedirect,
		})
	}
	return out, nil
}

// topLevel returns the child of the root containing w, or 0.
func (c *client) topLevel(w xproto.Window) xproto.Window {
	for i := 0; i < 64 && w != 0 && w != c.root && w != xproto.InputFocusPointerRoot; i++ {
		t, err := xproto.QueryTree(c.conn, w).Reply()
		if err != nil {
			return 0
		}
		if t.Parent == c.root {
			return w
		}
		w = t.Parent
	}
	return 0
}

// keyboard is the server's keymap as far as typing needs it.
type keyboard struct {
	min, max xproto.Keycode
	perCode  int
	// syms[kc-min] are the keysyms of keycode kc (level 0 unshifted,
	// level 1 shifted).
	syms  [][]xproto.Keysym
	shift xproto.Keycode // Shift_L, 0 when absent
	// spare keycodes with no keysyms, remapped for keysyms the keymap
	// lacks (non-ASCII text); remapped[ks] is the keycode given to ks.
	spare    []xproto.Keycode
	remapped map[xproto.Keysym]xproto.Keycode
	next     int // round-robin index into spare
}

func loadKeyboard(conn *xgb.Conn, min, max xproto.Keycode) (*keyboard, error) {
	r, err := xproto.GetKeyboardMapping(conn, min, byte(max-min+1)).Reply()
	if err != nil {
		return nil, fmt.Errorf("keyboard mapping: %w", err)
	}
	k := &keyboard{min: min, max: max, perCode: int(r.KeysymsPerKeycode), remapped: map[xproto.Keysym]xproto.Keycode{}}
	if k.perCode == 0 {
		return nil, errors.New("keyboard mapping: no keysyms")
	}
	for i := 0; i <= int(max-min); i++ {
		syms := r.Keysyms[i*k.perCode : (i+1)*k.perCode]
		k.syms = append(k.syms, syms)
		empty := true
		for _, s := range syms {
			if s != 0 {
				empty = false
			}
		}
		if empty {
			k.spare = append(k.spare, min+xproto.Keycode(i))
		}
	}
	if kc, _, ok := k.lookup(ksShiftL); ok {
		k.shift = kc
	}
	return k, nil
}

// lookup finds ks on the first two levels of a keycode.
func (k *keyboard) lookup(ks xproto.Keysym) (xproto.Keycode, bool, bool) {
	if kc, ok := k.remapped[ks]; ok {
		return kc, false, true
	}
	for level := 0; level < 2 && level < k.perCode; level++ {
		for i, syms := range k.syms {
			if syms[level] == ks {
				return k.min + xproto.Keycode(i), level == 1, true
			}
		}
	}
	return 0, false, false
}

// keycode returns the keycode of ks and whether it needs Shift, mapping ks
// onto a spare keycode when the keymap lacks it.
func (k *keyboard) keycode(conn *xgb.Conn, ks xproto.Keysym) (xproto.Keycode, bool, error) {
	if kc, shifted, ok := k.lookup(ks); ok {
		return kc, shifted, nil
	}
	if len(k.spare) == 0 {
		return 0, false, fmt.Errorf("%w: keysym 0x%x is not on the keyboard and no keycode is free", ErrUnknownKey, uint32(ks))
	}
	kc := k.spare[k.next%len(k.spare)]
	k.next++
	for old, c := range k.remapped {
		if c == kc {
			delete(k.remapped, old)
		}
	}
	syms := make([]xproto.Keysym, k.perCode)
	for i := range syms {
		syms[i] = ks
	}
	if err := xproto.ChangeKeyboardMappingChecked(conn, 1, kc, byte(k.perCode), syms).Check(); err != nil {
		return 0, false, fmt.Errorf("remap keycode %d: %w", kc, err)
	}
	k.remapped[ks] = kc
	return kc, false, nil
}
