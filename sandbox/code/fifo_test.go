package code_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/sandbox"
)

// TestSpecialFilesRefused is the attack of issue 23.5: a FIFO made in the
// workspace (mkfifo works under bwrap too) blocked code:read forever (an
// open for reading waits for a writer), and with it its session. Every
// file tool refuses anything that is not a regular file, promptly, with
// 4000 naming the path; code:grep skips it. The same holds with the
// workspace isolated by bwrap.
func TestSpecialFilesRefused(t *testing.T) {
	for _, iso := range []string{"none", "bwrap"} {
		t.Run(iso, func(t *testing.T) {
			if iso == "bwrap" {
				if err := isolation.Available(); err != nil {
					t.Skip("bwrap unavailable: ", err)
				}
			}
			wd, _ := os.Getwd()
			data, err := os.MkdirTemp(wd, "testdata-fifo-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(data) })
			e := newEnvIn(t, `{"isolation":"`+iso+`"}`, data)
			e.create("f")
			a := e.call("f", "code:bash", map[string]any{"command": "mkfifo pipe && mkdir d && mkfifo d/p2 && printf 'x\\n' > d/ok.txt && ln -s pipe link && pwd"})
			ws := strings.TrimSpace(strings.Split(a.Data.(string), "\n")[0])
			if a.Code != 0 || ws == "" {
				t.Fatalf("mkfifo: %+v", a)
			}
			// Should a tool block before the fix, release it so that the
			// test ends (writers unblock the readers, and the reverse).
			t.Cleanup(func() {
				for _, p := range []string{"pipe", "d/p2"} {
					if f, err := os.OpenFile(filepath.Join(ws, p), os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}
			})
			const tmo = "timeout"
			for _, c := range []struct {
				action string
				params map[string]any
			}{
				{"code:read", map[string]any{"path": "pipe"}},
				{"code:read", map[string]any{"path": "link"}},
				{"code:edit", map[string]any{"path": "pipe", "old_string": "a", "new_string": "b"}},
				{"code:write", map[string]any{"path": "pipe", "content": "x"}},
			} {
				a := e.call("f", c.action, c.params, tmo, 5)
				if a.Code != sandbox.CodeInvalidInput || !strings.Contains(a.Msg, "not a regular file") || !strings.Contains(a.Msg, c.params["path"].(string)) {
					t.Errorf("%s %v: %d %+v, want 4000 not a regular file", c.action, c.params, a.status, a)
				}
			}
			a = e.call("f", "code:grep", map[string]any{"pattern": "x", "path": "d"}, tmo, 5)
			if a.Code != 0 || a.field("count") != float64(1) || a.field("files_searched") != float64(1) {
				t.Errorf("grep over a FIFO: %+v", a)
			}
			if a := e.call("f", "code:grep", map[string]any{"pattern": "x", "path": "pipe"}, tmo, 5); a.Code != 0 || a.field("count") != float64(0) {
				t.Errorf("grep of a FIFO: %+v", a)
			}
			// The session still works.
			if a := e.call("f", "code:read", map[string]any{"path": "d/ok.txt"}); a.Code != 0 || a.field("content") != "x\n" {
				t.Fatalf("read after: %+v", a)
			}
		})
	}
}
