package desktop

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/flockrun/flock/sandbox"
)

// maxWait bounds vm:wait's seconds; maxScroll vm:scroll's clicks;
// maxInterval vm:type's interval.
const (
	maxWait     = 60.0
	maxScroll   = 100
	maxInterval = 1.0
)

func integer(desc string) map[string]any {
	return map[string]any{"type": "integer", "description": desc}
}
func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

var buttonSchema = map[string]any{"type": "string", "enum": []string{"left", "middle", "right"}, "description": "The mouse button (default left)."}

// Tools returns AgentFlow's vm tools. Every one but done, fail, wait,
// pyautogui and evaluate acts on the session's display; all but
// screenshot answer with the accessibility tree after the action.
func (b *Backend) Tools() []sandbox.Tool {
	xy := map[string]any{"x": integer("X coordinate in screen pixels, from 0 at the left."), "y": integer("Y coordinate in screen pixels, from 0 at the top.")}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	key := map[string]any{"key": str("A key: a single character, or a name such as enter, tab, space, backspace, delete, esc, up, down, left, right, home, end, pageup, pagedown, f1-f24, shift, ctrl, alt, win.")}
	return []sandbox.Tool{
		{
			Name:        Name + ":screenshot",
			Description: "Take a screenshot of the desktop. Returns the PNG image (base64), its size [width, height] and the list of open windows.",
			Parameters:  sandbox.ObjectSchema(map[string]any{}),
			Run:         b.run(screenshot),
		},
		{
			Name:        Name + ":click",
			Description: "Move the mouse to (x, y) and click a button.",
			Parameters:  sandbox.ObjectSchema(with(xy, "button", buttonSchema), "x", "y"),
			Run:         b.run(click),
		},
		{
			Name:        Name + ":double_click",
			Description: "Move the mouse to (x, y) and double-click the left button.",
			Parameters:  sandbox.ObjectSchema(xy, "x", "y"),
			Run:         b.run(doubleClick),
		},
		{
			Name:        Name + ":right_click",
			Description: "Right-click at (x, y), or where the mouse is when both are omitted.",
			Parameters:  sandbox.ObjectSchema(xy),
			Run:         b.run(rightClick),
		},
		{
			Name:        Name + ":move",
			Description: "Move the mouse to (x, y).",
			Parameters:  sandbox.ObjectSchema(xy, "x", "y"),
			Run:         b.run(move),
		},
		{
			Name:        Name + ":drag",
			Description: "Drag with the left button held from (start_x, start_y) to (end_x, end_y).",
			Parameters: sandbox.ObjectSchema(map[string]any{
				"start_x": integer("Start X."), "start_y": integer("Start Y."), "end_x": integer("End X."), "end_y": integer("End Y."),
			}, "start_x", "start_y", "end_x", "end_y"),
			Run: b.run(drag),
		},
		{
			Name:        Name + ":scroll",
			Description: "Move the mouse to (x, y) and scroll the wheel: positive clicks scroll up, negative down.",
			Parameters:  sandbox.ObjectSchema(with(xy, "clicks", integer("Wheel clicks, -100 to 100; positive scrolls up.")), "x", "y", "clicks"),
			Run:         b.run(scroll),
		},
		{
			Name:        Name + ":type",
			Description: "Type text with the keyboard into the focused window (\"\\n\" presses Enter).",
			Parameters: sandbox.ObjectSchema(map[string]any{"text": str("The text to type."),
				"interval": map[string]any{"type": "number", "description": "Seconds between keys, 0 to 1 (default 0)."}}, "text"),
			Run: b.run(typeText),
		},
		{
			Name:        Name + ":key",
			Description: "Press and release one key.",
			Parameters:  sandbox.ObjectSchema(key, "key"),
			Run:         b.run(pressKey),
		},
		{
			Name:        Name + ":hotkey",
			Description: "Press keys together, e.g. [\"ctrl\", \"c\"]: pressed in order, released in reverse.",
			Parameters: sandbox.ObjectSchema(map[string]any{"keys": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
				"description": "The keys, as for key."}}, "keys"),
			Run: b.run(hotkey),
		},
		{
			Name:        Name + ":key_down",
			Description: "Press a key and keep it down (until key_up).",
			Parameters:  sandbox.ObjectSchema(key, "key"),
			Run:         b.run(keyUpDown(true)),
		},
		{
			Name:        Name + ":key_up",
			Description: "Release a key pressed with key_down.",
			Parameters:  sandbox.ObjectSchema(key, "key"),
			Run:         b.run(keyUpDown(false)),
		},
		{
			Name:        Name + ":mouse_down",
			Description: "Press a mouse button where the mouse is and keep it down (until mouse_up).",
			Parameters:  sandbox.ObjectSchema(map[string]any{"button": buttonSchema}),
			Run:         b.run(mouseUpDown(true)),
		},
		{
			Name:        Name + ":mouse_up",
			Description: "Release a mouse button where the mouse is.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"button": buttonSchema}),
			Run:         b.run(mouseUpDown(false)),
		},
		{
			Name:        Name + ":wait",
			Description: "Wait some seconds (default 1, at most 60) for the screen to change.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"seconds": map[string]any{"type": "number", "description": "Seconds to wait, 0 to 60 (default 1)."}}),
			Run:         b.run(wait),
		},
		{
			Name:        Name + ":done",
			Description: "Declare the task done.",
			Parameters:  sandbox.ObjectSchema(map[string]any{}),
			Run:         b.run(func(context.Context, *Display, *sandbox.Call) (any, error) { return map[string]any{"done": true}, nil }),
		},
		{
			Name:        Name + ":fail",
			Description: "Declare the task infeasible, with the reason.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"reason": str("Why the task cannot be done.")}),
			Run:         b.run(fail),
		},
		{
			Name:        Name + ":pyautogui",
			Description: "Not supported by flock's desktop: use the other vm tools.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"command": str("A pyautogui command."), "commands": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}),
			Hidden:      true,
			Run:         notSupported("vm:pyautogui runs Python inside AgentFlow's VM image; flock's desktop has no Python controller, use the vm tools (click, type, key, hotkey, scroll, drag)"),
		},
		{
			Name:        Name + ":evaluate",
			Description: "Not supported by flock's desktop: OSWorld's evaluators need its VM image.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"evaluator": map[string]any{"type": "object"}}, "evaluator"),
			Hidden:      true,
			Run:         notSupported("vm:evaluate runs OSWorld's evaluators inside AgentFlow's VM image; flock's desktop has none, grade with a flock grader instead"),
		},
	}
}

func notSupported(msg string) func(context.Context, *sandbox.Call) (any, error) {
	return func(context.Context, *sandbox.Call) (any, error) {
		return nil, &sandbox.Error{Code: sandbox.CodeBusinessFailure, Message: "not supported: " + msg, Data: map[string]any{"supported": false}}
	}
}

// run adapts an action to a tool: it finds the session's display, maps
// errors to AgentFlow codes and adds the accessibility tree to the data of
// actions (maps with an "accessibility_tree" key set to nil).
func (b *Backend) run(fn func(context.Context, *Display, *sandbox.Call) (any, error)) func(context.Context, *sandbox.Call) (any, error) {
	return func(ctx context.Context, c *sandbox.Call) (any, error) {
		if c.Session == nil {
			return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "vm tools need a vm session")
		}
		d, ok := c.Session.State.(*Display)
		if !ok || d == nil || d.x == nil {
			return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "the session has no display")
		}
		if !d.alive() {
			return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "%v: display :%d is gone (Xvfb exited); destroy the session and create a new one", ErrClosed, d.Num)
		}
		data, err := fn(ctx, d, c)
		if err != nil {
			return nil, toolError(d, err)
		}
		if m, ok := data.(map[string]any); ok {
			if v, has := m["accessibility_tree"]; has && v == nil {
				tree, err := d.x.Windows()
				if err != nil {
					return nil, toolError(d, err)
				}
				m["accessibility_tree"] = tree
			}
		}
		if m, ok := data.(map[string]any); ok && c.Session != nil {
			if _, has := m["session"]; has {
				m["session"] = c.Session.Name
			}
		}
		return data, nil
	}
}

func toolError(d *Display, err error) error {
	var se *sandbox.Error
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, ErrUnknownKey):
		return sandbox.Errorf(sandbox.CodeInvalidInput, "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err // the core answers 5006 or cancelled
	case !d.alive():
		return sandbox.Errorf(sandbox.CodeResourceNotInitialized, "%v: display :%d is gone", ErrClosed, d.Num)
	}
	return sandbox.Errorf(sandbox.CodeExecutionError, "display :%d: %v", d.Num, err)
}

// invalid is a 4000 naming the parameter.
func invalid(param, format string, args ...any) *sandbox.Error {
	return &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: param + ": " + fmt.Sprintf(format, args...), Data: map[string]any{"parameter": param}}
}

// coord reads the integer parameter name and checks it lies on the screen
// (0 to limit-1).
func coord(c *sandbox.Call, name string, limit int) (int, error) {
	v, err := c.Int(name)
	if err != nil {
		return 0, err
	}
	if v < 0 || v >= limit {
		return 0, invalid(name, "%d is outside the screen (0 to %d)", v, limit-1)
	}
	return v, nil
}

func point(c *sandbox.Call, d *Display, xName, yName string) (int, int, error) {
	x, err := coord(c, xName, d.Width)
	if err != nil {
		return 0, 0, err
	}
	y, err := coord(c, yName, d.Height)
	if err != nil {
		return 0, 0, err
	}
	return x, y, nil
}

func button(c *sandbox.Call) (string, byte, error) {
	if !c.Has("button") {
		return "left", 1, nil
	}
	s, err := c.String("button")
	if err != nil {
		return "", 0, err
	}
	switch s {
	case "left":
		return s, 1, nil
	case "middle":
		return s, 2, nil
	case "right":
		return s, 3, nil
	}
	return "", 0, invalid("button", "%q is not left, middle or right", s)
}

func keyParam(c *sandbox.Call, name string) (string, xproto.Keysym, error) {
	k, err := c.String(name)
	if err != nil {
		return "", 0, err
	}
	ks, err := parseKey(k)
	if err != nil {
		return "", 0, invalid(name, "%v", err)
	}
	return k, ks, nil
}

func screenshot(_ context.Context, d *Display, _ *sandbox.Call) (any, error) {
	img, err := d.x.Screenshot()
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"image": base64.StdEncoding.EncodeToString(img), "size": []int{d.Width, d.Height},
		"session": "", "accessibility_tree": nil,
	}, nil
}

func click(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	x, y, err := point(c, d, "x", "y")
	if err != nil {
		return nil, err
	}
	name, btn, err := button(c)
	if err != nil {
		return nil, err
	}
	if err := d.x.Move(x, y); err != nil {
		return nil, err
	}
	if err := d.x.Click(btn, 1); err != nil {
		return nil, err
	}
	return map[string]any{"clicked": []int{x, y}, "button": name, "accessibility_tree": nil}, nil
}

func doubleClick(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	x, y, err := point(c, d, "x", "y")
	if err != nil {
		return nil, err
	}
	if err := d.x.Move(x, y); err != nil {
		return nil, err
	}
	if err := d.x.Click(1, 2); err != nil {
		return nil, err
	}
	return map[string]any{"clicked": []int{x, y}, "accessibility_tree": nil}, nil
}

func rightClick(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	hasX, hasY := c.Has("x"), c.Has("y")
	var clicked any
	switch {
	case hasX && hasY:
		x, y, err := point(c, d, "x", "y")
		if err != nil {
			return nil, err
		}
		if err := d.x.Move(x, y); err != nil {
			return nil, err
		}
		clicked = []int{x, y}
	case hasX:
		return nil, &sandbox.Error{Code: sandbox.CodeMissingRequiredField, Message: "missing required parameter: y (x and y go together)", Data: map[string]any{"parameter": "y"}}
	case hasY:
		return nil, &sandbox.Error{Code: sandbox.CodeMissingRequiredField, Message: "missing required parameter: x (x and y go together)", Data: map[string]any{"parameter": "x"}}
	}
	if err := d.x.Click(3, 1); err != nil {
		return nil, err
	}
	return map[string]any{"clicked": clicked, "accessibility_tree": nil}, nil
}

func move(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	x, y, err := point(c, d, "x", "y")
	if err != nil {
		return nil, err
	}
	if err := d.x.Move(x, y); err != nil {
		return nil, err
	}
	return map[string]any{"position": []int{x, y}, "accessibility_tree": nil}, nil
}

// drag presses the left button at the start, moves in 10 steps (so that
// applications see motion while the button is down) and releases it at
// the end.
func drag(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	sx, sy, err := point(c, d, "start_x", "start_y")
	if err != nil {
		return nil, err
	}
	ex, ey, err := point(c, d, "end_x", "end_y")
	if err != nil {
		return nil, err
	}
	if err := d.x.Move(sx, sy); err != nil {
		return nil, err
	}
	if err := d.x.Button(1, true); err != nil {
		return nil, err
	}
	const steps = 10
	for i := 1; i <= steps; i++ {
		if err := d.x.Move(sx+(ex-sx)*i/steps, sy+(ey-sy)*i/steps); err != nil {
			_ = d.x.Button(1, false)
			return nil, err
		}
	}
	if err := d.x.Button(1, false); err != nil {
		return nil, err
	}
	return map[string]any{"from": []int{sx, sy}, "to": []int{ex, ey}, "accessibility_tree": nil}, nil
}

func scroll(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	x, y, err := point(c, d, "x", "y")
	if err != nil {
		return nil, err
	}
	n, err := c.Int("clicks")
	if err != nil {
		return nil, err
	}
	if n < -maxScroll || n > maxScroll {
		return nil, invalid("clicks", "%d is outside -%d to %d", n, maxScroll, maxScroll)
	}
	if err := d.x.Move(x, y); err != nil {
		return nil, err
	}
	btn, count := byte(4), n
	if n < 0 {
		btn, count = 5, -n
	}
	if err := d.x.Click(btn, count); err != nil {
		return nil, err
	}
	return map[string]any{"position": []int{x, y}, "clicks": n, "accessibility_tree": nil}, nil
}

// sleep waits dur or until ctx ends.
func sleep(ctx context.Context, dur time.Duration) error {
	if dur <= 0 {
		return nil
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func typeText(ctx context.Context, d *Display, c *sandbox.Call) (any, error) {
	text, err := c.String("text")
	if err != nil {
		return nil, err
	}
	interval := 0.0
	if c.Has("interval") {
		if interval, err = c.Float("interval"); err != nil {
			return nil, err
		}
		if interval < 0 || interval > maxInterval {
			return nil, invalid("interval", "%g is outside 0 to %g seconds", interval, maxInterval)
		}
	}
	syms := make([]xproto.Keysym, 0, len(text))
	n := 0
	for i, r := range text {
		ks, ok := runeKeysym(r)
		if !ok {
			return nil, invalid("text", "character %q at byte %d cannot be typed", r, i)
		}
		syms = append(syms, ks)
		n++
	}
	for i, ks := range syms {
		if i > 0 {
			if err := sleep(ctx, time.Duration(interval*float64(time.Second))); err != nil {
				return nil, err
			}
		} else if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := d.x.Tap(ks); err != nil {
			return nil, err
		}
	}
	return map[string]any{"typed": text, "length": n, "accessibility_tree": nil}, nil
}

func pressKey(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	k, ks, err := keyParam(c, "key")
	if err != nil {
		return nil, err
	}
	if err := d.x.Tap(ks); err != nil {
		return nil, err
	}
	return map[string]any{"key": k, "accessibility_tree": nil}, nil
}

func hotkey(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
	v, ok := c.Params["keys"].([]any)
	if !ok {
		return nil, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter keys must be an array of strings", Data: map[string]any{"parameter": "keys"}}
	}
	if len(v) == 0 {
		return nil, invalid("keys", "empty: name at least one key")
	}
	names := make([]string, len(v))
	syms := make([]xproto.Keysym, len(v))
	for i, e := range v {
		s, ok := e.(string)
		if !ok {
			return nil, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter keys must be an array of strings", Data: map[string]any{"parameter": "keys"}}
		}
		ks, err := parseKey(s)
		if err != nil {
			return nil, invalid(fmt.Sprintf("keys[%d]", i), "%v", err)
		}
		names[i], syms[i] = s, ks
	}
	pressed := 0
	var err error
	for _, ks := range syms {
		if err = d.x.Key(ks, true, true); err != nil {
			break
		}
		pressed++
	}
	for i := pressed - 1; i >= 0; i-- { // release what was pressed, even after an error
		if rerr := d.x.Key(syms[i], false, true); rerr != nil && err == nil {
			err = rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"keys": names, "accessibility_tree": nil}, nil
}

func keyUpDown(down bool) func(context.Context, *Display, *sandbox.Call) (any, error) {
	return func(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
		k, ks, err := keyParam(c, "key")
		if err != nil {
			return nil, err
		}
		if err := d.x.Key(ks, down, false); err != nil {
			return nil, err
		}
		return map[string]any{"key": k, "accessibility_tree": nil}, nil
	}
}

func mouseUpDown(down bool) func(context.Context, *Display, *sandbox.Call) (any, error) {
	return func(_ context.Context, d *Display, c *sandbox.Call) (any, error) {
		name, btn, err := button(c)
		if err != nil {
			return nil, err
		}
		if err := d.x.Button(btn, down); err != nil {
			return nil, err
		}
		return map[string]any{"button": name, "accessibility_tree": nil}, nil
	}
}

func wait(ctx context.Context, _ *Display, c *sandbox.Call) (any, error) {
	secs := 1.0
	if c.Has("seconds") {
		var err error
		if secs, err = c.Float("seconds"); err != nil {
			return nil, err
		}
		if secs < 0 || secs > maxWait {
			return nil, invalid("seconds", "%g is outside 0 to %g", secs, maxWait)
		}
	}
	if err := sleep(ctx, time.Duration(secs*float64(time.Second))); err != nil {
		return nil, err
	}
	return map[string]any{"waited": secs, "accessibility_tree": nil}, nil
}

func fail(_ context.Context, _ *Display, c *sandbox.Call) (any, error) {
	reason := ""
	if c.Has("reason") {
		var err error
		if reason, err = c.String("reason"); err != nil {
			return nil, err
		}
	}
	return map[string]any{"failed": true, "reason": reason}, nil
}
