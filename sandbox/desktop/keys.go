package desktop

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jezek/xgb/xproto"
)

const ksShiftL xproto.Keysym = 0xffe1

// keyNames maps key names, lower-cased, to X keysyms: pyautogui's names
// (what AgentFlow's and OSWorld's prompts teach models) and the common X
// keysym names.
var keyNames = map[string]xproto.Keysym{
	"enter": 0xff0d, "return": 0xff0d, "\n": 0xff0d, "\r": 0xff0d,
	"tab": 0xff09, "\t": 0xff09,
	"space": 0x20, " ": 0x20,
	"backspace": 0xff08,
	"delete":    0xffff, "del": 0xffff,
	"esc": 0xff1b, "escape": 0xff1b,
	"up": 0xff52, "down": 0xff54, "left": 0xff51, "right": 0xff53,
	"home": 0xff50, "end": 0xff57,
	"pageup": 0xff55, "pgup": 0xff55, "page_up": 0xff55, "prior": 0xff55,
	"pagedown": 0xff56, "pgdn": 0xff56, "page_down": 0xff56, "next": 0xff56,
	"insert": 0xff63,
	"shift":  0xffe1, "shiftleft": 0xffe1, "shift_l": 0xffe1, "shiftright": 0xffe2, "shift_r": 0xffe2,
	"ctrl": 0xffe3, "control": 0xffe3, "ctrlleft": 0xffe3, "control_l": 0xffe3, "ctrlright": 0xffe4, "control_r": 0xffe4,
	"alt": 0xffe9, "altleft": 0xffe9, "alt_l": 0xffe9, "option": 0xffe9, "altright": 0xffea, "alt_r": 0xffea,
	"win": 0xffeb, "winleft": 0xffeb, "super": 0xffeb, "super_l": 0xffeb, "command": 0xffeb, "cmd": 0xffeb, "meta": 0xffeb,
	"winright": 0xffec, "super_r": 0xffec,
	"capslock": 0xffe5, "caps_lock": 0xffe5,
	"numlock": 0xff7f, "num_lock": 0xff7f,
	"scrolllock": 0xff14, "scroll_lock": 0xff14,
	"printscreen": 0xff61, "print": 0xff61, "prtsc": 0xff61, "prntscrn": 0xff61,
	"pause": 0xff13,
	"menu":  0xff67, "apps": 0xff67,
}

func init() {
	for i := 1; i <= 24; i++ {
		keyNames[fmt.Sprintf("f%d", i)] = xproto.Keysym(0xffbe + i - 1)
	}
}

// runeKeysym returns the keysym typing r produces: Latin-1 keysyms equal
// the code point, others are 0x01000000 + the code point; newline and tab
// are Return and Tab. Control characters have none.
func runeKeysym(r rune) (xproto.Keysym, bool) {
	switch {
	case r == '\n' || r == '\r':
		return 0xff0d, true
	case r == '\t':
		return 0xff09, true
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError:
		return 0, false
	case r <= 0xff:
		return xproto.Keysym(r), true
	case r <= 0x10ffff:
		return xproto.Keysym(0x01000000 + r), true
	}
	return 0, false
}

// parseKey returns the keysym of a key name (see keyNames) or of a single
// character; the error wraps ErrUnknownKey.
func parseKey(name string) (xproto.Keysym, error) {
	if name == "" {
		return 0, fmt.Errorf("%w: empty key name", ErrUnknownKey)
	}
	if ks, ok := keyNames[strings.ToLower(name)]; ok {
		return ks, nil
	}
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		if ks, ok := runeKeysym(r); ok {
			return ks, nil
		}
	}
	return 0, fmt.Errorf("%w %q (a single character, or one of enter, tab, space, backspace, delete, esc, up, down, left, right, home, end, pageup, pagedown, insert, f1-f24, shift, ctrl, alt, win, capslock, printscreen, pause, menu)", ErrUnknownKey, name)
}
