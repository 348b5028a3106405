package code_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/sandbox"
	_ "github.com/flockrun/flock/sandbox/code"
	"github.com/flockrun/flock/server/sandboxapi"
)

type env struct {
	t   *testing.T
	url string
}

func newEnv(t *testing.T, codeCfg string) *env {
	t.Helper()
	return newEnvIn(t, codeCfg, t.TempDir())
}

// newEnvIn starts the service with its data dir at dataDir.
func newEnvIn(t *testing.T, codeCfg, dataDir string) *env {
	t.Helper()
	cfg, err := sandbox.ParseConfig([]byte(`{"server":{"session_ttl":300,"cleanup_interval":60},"resources":{"code":{"enabled":true,"config":`+codeCfg+`}}}`),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	srv, err := sandboxapi.NewServer(configs.Server{Addr: "127.0.0.1:0"}, svc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &env{t: t, url: ts.URL}
}

type answer struct {
	status int
	Code   int    `json:"code"`
	Msg    string `json:"message"`
	Data   any    `json:"data"`
}

func (a answer) field(k string) any { m, _ := a.Data.(map[string]any); return m[k] }

func (e *env) post(path string, body map[string]any) answer {
	e.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(e.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode}
	if err := json.Unmarshal(raw, &a); err != nil {
		e.t.Fatalf("%s: status %d, body not JSON: %q", path, resp.StatusCode, raw)
	}
	return a
}

// call runs action for worker; extra top-level fields (timeout) in top.
func (e *env) call(worker, action string, params map[string]any, top ...any) answer {
	e.t.Helper()
	body := map[string]any{"worker_id": worker, "action": action, "params": params}
	for i := 0; i+1 < len(top); i += 2 {
		body[top[i].(string)] = top[i+1]
	}
	return e.post("/api/v1/execute", body)
}

func (e *env) py(worker, src string, top ...any) answer {
	e.t.Helper()
	return e.call(worker, "code:python", map[string]any{"code": src}, top...)
}

func (e *env) create(worker string) {
	e.t.Helper()
	if a := e.post("/api/v1/session/create", map[string]any{"worker_id": worker, "resource_type": "code"}); a.Code != 0 {
		e.t.Fatalf("create %s: %+v", worker, a)
	}
}

// TestPythonGlobalsPersistAndWorkersIsolated: globals carry over between
// calls of a session; another worker sees neither them nor the workspace.
func TestPythonGlobalsPersistAndWorkersIsolated(t *testing.T) {
	e := newEnv(t, `{}`)
	e.create("a")
	e.create("b")
	if a := e.py("a", "x = 41\nimport os\nopen('mine.txt','w').write('a')\nos.getcwd()"); a.Code != 0 || a.field("error") != "" {
		t.Fatalf("define: %+v", a)
	}
	a := e.py("a", "x + 1")
	if a.Code != 0 || a.field("output") != "42\n" || a.field("timed_out") != false {
		t.Fatalf("globals lost: %+v", a)
	}
	b := e.py("b", "print(sorted(os.listdir('.')) if 'os' in globals() else 'no os'); x")
	if b.Code != 0 || !strings.Contains(b.field("error").(string), "NameError") || b.field("output") != "no os\n" {
		t.Fatalf("worker b sees a's globals: %+v", b)
	}
	b = e.py("b", "import os; os.path.exists('mine.txt'), os.path.basename(os.getcwd())")
	if out := b.field("output").(string); !strings.HasPrefix(out, "(False, 'code_b_") {
		t.Fatalf("worker b sees a's workspace: %q", out)
	}
	// A traceback is a result, not an envelope error.
	if a := e.py("a", "1/0"); a.Code != 0 || !strings.Contains(a.field("error").(string), "ZeroDivisionError") ||
		a.field("stderr") != a.field("error") || a.field("return_code") != float64(1) {
		t.Fatalf("exception: %+v", a)
	}
	// AgentFlow's formatter fields.
	if a := e.py("a", "print('hi')"); a.field("stdout") != "hi\n" || a.field("stderr") != "" || a.field("return_code") != float64(0) {
		t.Fatalf("formatter fields: %+v", a)
	}
}

// TestPythonTimeout: a cell past its timeout (the call's, and the
// parameter's) answers 5006 with HTTP 500; the globals survive.
func TestPythonTimeout(t *testing.T) {
	e := newEnv(t, `{}`)
	e.create("w")
	e.py("w", "import time\nkept = 'yes'")
	for _, tc := range []struct {
		name   string
		params map[string]any
		top    []any
	}{
		{"call timeout", map[string]any{"code": "time.sleep(30)"}, []any{"timeout", 1}},
		{"param timeout", map[string]any{"code": "print('before'); time.sleep(30)", "timeout": 0.5}, nil},
	} {
		a := e.call("w", "code:python", tc.params, tc.top...)
		if a.status != 500 || a.Code != sandbox.CodeTimeout {
			t.Fatalf("%s: %d %+v", tc.name, a.status, a)
		}
		if a := e.py("w", "kept"); a.Code != 0 || a.field("output") != "'yes'\n" {
			t.Fatalf("%s: session not usable after the timeout: %+v", tc.name, a)
		}
	}
}

// TestBashTool: code:bash answers AgentFlow's plain string in the same
// workspace as python; empty commands are 4000; a timeout is 5006.
func TestBashTool(t *testing.T) {
	e := newEnv(t, `{}`)
	e.create("w")
	e.py("w", "open('from_py.txt','w').write('hello from python')")
	cases := []struct {
		cmd  string
		want any
	}{
		{"cat from_py.txt", "hello from python"},
		{"echo out; echo err >&2", "out\n\n[stderr]:\nerr\n"},
		{"true", "(no output)"},
	}
	for _, c := range cases {
		if a := e.call("w", "code:bash", map[string]any{"command": c.cmd}); a.Code != 0 || a.Data != c.want {
			t.Fatalf("%q: %+v, want %q", c.cmd, a, c.want)
		}
	}
	if a := e.call("w", "code:bash", map[string]any{"command": "  "}); a.status != 400 || a.Code != sandbox.CodeInvalidInput {
		t.Fatalf("empty command: %d %+v", a.status, a)
	}
	if a := e.call("w", "code:bash", map[string]any{"command": "sleep 30", "timeout": 0.5}); a.Code != sandbox.CodeTimeout {
		t.Fatalf("timeout: %+v", a)
	}
	if a := e.call("w", "code:bash", map[string]any{"command": "ls from_py.txt"}); a.Code != 0 || a.Data != "from_py.txt\n" {
		t.Fatalf("after timeout: %+v", a)
	}
}

// TestReadWrite: a round trip through write and read (python sees the file
// too); ".." , absolute paths outside the workspace and symlinks out of it
// are refused with 4000 and nothing is written outside.
func TestReadWrite(t *testing.T) {
	e := newEnv(t, `{}`)
	e.create("w")
	content := "line 1\nünïcode ✓\n"
	if a := e.call("w", "code:write", map[string]any{"path": "sub/dir/f.txt", "content": content}); a.Code != 0 || a.field("size") != float64(len(content)) {
		t.Fatalf("write: %+v", a)
	}
	if a := e.call("w", "code:read", map[string]any{"path": "sub/dir/f.txt"}); a.Code != 0 || a.field("content") != content {
		t.Fatalf("read: %+v", a)
	}
	if a := e.py("w", "print(open('sub/dir/f.txt').read(), end='')"); a.field("output") != content {
		t.Fatalf("python reads: %+v", a)
	}
	ws := strings.TrimSpace(e.py("w", "import os; print(os.getcwd())").field("output").(string))
	if a := e.call("w", "code:read", map[string]any{"path": filepath.Join(ws, "sub/dir/f.txt")}); a.Code != 0 || a.field("content") != content {
		t.Fatalf("absolute path inside the workspace: %+v", a)
	}
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("s3cret"), 0o644)
	if a := e.call("w", "code:bash", map[string]any{"command": "ln -s " + outside + " out; ln -s " + secret + " s; ln -s / rootlink"}); a.Code != 0 {
		t.Fatalf("symlinks: %+v", a)
	}
	escapes := []struct{ tool, path string }{
		{"code:read", "../../../../../../etc/passwd"},
		{"code:read", "sub/../../x"},
		{"code:read", "/etc/passwd"},
		{"code:read", secret},
		{"code:read", "out/secret"},
		{"code:read", "s"},
		{"code:read", "rootlink/etc/passwd"},
		{"code:read", "nope.txt"},
		{"code:read", ""},
		{"code:write", "../evil"},
		{"code:write", "out/evil"},
		{"code:write", "s"},
		{"code:write", "rootlink" + outside + "/evil"},
		{"code:write", filepath.Join(outside, "evil")},
	}
	for _, x := range escapes {
		a := e.call("w", x.tool, map[string]any{"path": x.path, "content": "pwned"})
		if a.status != 400 || a.Code != sandbox.CodeInvalidInput {
			t.Errorf("%s %q: %d %+v, want 4000", x.tool, x.path, a.status, a)
		}
		if s := fmt.Sprint(a.Data) + a.Msg; strings.Contains(s, "s3cret") || strings.Contains(s, "root:") || strings.Contains(s, ws) {
			t.Errorf("%s %q leaks: %+v", x.tool, x.path, a)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "s3cret" {
		t.Fatalf("secret overwritten: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "evil")); err == nil {
		t.Fatal("a file was written outside the workspace")
	}
	if a := e.call("w", "code:write", map[string]any{"path": "x"}); a.Code != sandbox.CodeMissingRequiredField {
		t.Fatalf("missing content: %+v", a)
	}
}

// TestDestroyCleansUp: destroy kills the interpreter and a process it
// started in a new session, and removes the workspace.
func TestDestroyCleansUp(t *testing.T) {
	// Unisolated: the test watches the processes by their host PIDs.
	e := newEnv(t, `{"isolation":"none"}`)
	e.create("w")
	a := e.py("w", "import os, subprocess\n"+
		"p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"+
		"print(os.getpid(), p.pid, os.getcwd())")
	f := strings.Fields(fmt.Sprint(a.field("output")))
	if len(f) != 3 {
		t.Fatalf("python: %+v", a)
	}
	ipid, _ := strconv.Atoi(f[0])
	cpid, _ := strconv.Atoi(f[1])
	ws := f[2]
	if !testkit.Alive(ipid) || !testkit.Alive(cpid) {
		t.Fatal("processes not running before destroy")
	}
	if a := e.post("/api/v1/session/destroy", map[string]any{"worker_id": "w", "resource_type": "code"}); a.Code != 0 {
		t.Fatalf("destroy: %+v", a)
	}
	testkit.WaitFor(t, "interpreter and its child to die", func() bool { return !testkit.Alive(ipid) && !testkit.Alive(cpid) })
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("workspace %s survives destroy: %v", ws, err)
	}
	// A new session starts afresh.
	if a := e.py("w", "'p' in globals()"); a.Code != 0 || a.field("output") != "False\n" {
		t.Fatalf("after destroy: %+v", a)
	}
}

// TestBwrap: with isolation bwrap the code cannot write outside its
// workspace, and the tools still work.
func TestBwrap(t *testing.T) {
	if err := isolation.Available(); err != nil {
		t.Skip("bwrap unavailable: ", err)
	}
	// bwrap puts a private tmpfs on /tmp, which would hide a data dir
	// beneath it anyway: put this one in the package directory so the test
	// shows the backend hiding the data dir itself.
	wd, _ := os.Getwd()
	data, err := os.MkdirTemp(wd, "testdata-bwrap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	e := newEnvIn(t, `{"isolation":"bwrap"}`, data)
	e.create("w")
	outside := t.TempDir()
	a := e.py("w", "import os\nopen('in.txt','w').write('ok')\n"+
		"try:\n    open("+strconv.Quote(filepath.Join(outside, "x"))+",'w').write('no'); print('wrote')\nexcept OSError as err:\n    print('refused')")
	if a.Code != 0 || a.field("output") != "refused\n" {
		t.Fatalf("bwrap python: %+v", a)
	}
	if a := e.call("w", "code:bash", map[string]any{"command": "cat in.txt; touch " + outside + "/y 2>/dev/null || echo refused"}); a.Data != "okrefused\n" {
		t.Fatalf("bwrap bash: %+v", a)
	}
	if a := e.call("w", "code:read", map[string]any{"path": "in.txt"}); a.field("content") != "ok" {
		t.Fatalf("read: %+v", a)
	}
	// Another session's workspace is invisible.
	e.create("other")
	ows := e.py("other", "import os; open('theirs.txt','w').write('x'); print(os.getcwd(), end='')").field("output").(string)
	if a := e.py("w", "import os; os.path.exists("+strconv.Quote(filepath.Join(ows, "theirs.txt"))+")"); a.field("output") != "False\n" {
		t.Fatalf("bwrap: another session's workspace is visible: %+v", a)
	}
	if a := e.call("w", "code:bash", map[string]any{"command": "ls " + ows + "/theirs.txt 2>/dev/null || echo hidden"}); a.Data != "hidden\n" {
		t.Fatalf("bwrap bash: another session's workspace is visible: %+v", a)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []string{`{"isolation":"docker"}`, `{"timeout":-1}`, `{"max_file_size":"big"}`} {
		cfg, err := sandbox.ParseConfig([]byte(`{"resources":{"code":{"enabled":true,"config":`+c+`}}}`), func(string) (string, bool) { return "", false })
		if err == nil {
			_, err = sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
		}
		if err == nil || !strings.Contains(err.Error(), "resources.code.config.") {
			t.Errorf("%s: %v", c, err)
		}
	}
}

// TestForkSession forks a worker's code session over HTTP
// (POST /api/v1/session/fork): the fork starts with the source's files,
// and what either writes afterwards the other does not see.
func TestForkSession(t *testing.T) {
	e := newEnv(t, `{}`)
	if a := e.post("/api/v1/session/create", map[string]any{"worker_id": "a", "resource_type": "code"}); a.Code != 0 {
		t.Fatalf("create: %+v", a)
	}
	if a := e.post("/api/v1/execute", map[string]any{"worker_id": "a", "action": "code:write",
		"params": map[string]any{"path": "notes/one.txt", "content": "from a"}}); a.Code != 0 {
		t.Fatalf("write: %+v", a)
	}
	f := e.post("/api/v1/session/fork", map[string]any{"worker_id": "b", "from_worker_id": "a", "resource_type": "code"})
	if f.Code != 0 || f.field("forked") != true {
		t.Fatalf("fork: %+v", f)
	}
	read := func(worker, path string) answer {
		return e.post("/api/v1/execute", map[string]any{"worker_id": worker, "action": "code:read", "params": map[string]any{"path": path}})
	}
	if a := read("b", "notes/one.txt"); a.Code != 0 || !strings.Contains(fmt.Sprint(a.Data), "from a") {
		t.Fatalf("b reads the forked file: %+v", a)
	}
	if a := e.post("/api/v1/execute", map[string]any{"worker_id": "b", "action": "code:write",
		"params": map[string]any{"path": "two.txt", "content": "from b"}}); a.Code != 0 {
		t.Fatalf("b write: %+v", a)
	}
	if a := e.post("/api/v1/execute", map[string]any{"worker_id": "a", "action": "code:write",
		"params": map[string]any{"path": "three.txt", "content": "from a again"}}); a.Code != 0 {
		t.Fatalf("a write: %+v", a)
	}
	if a := read("a", "two.txt"); a.Code == 0 {
		t.Fatalf("a sees b's file: %+v", a)
	}
	if a := read("b", "three.txt"); a.Code == 0 {
		t.Fatalf("b sees a's later file: %+v", a)
	}
	// No source: a fresh session that says so.
	f = e.post("/api/v1/session/fork", map[string]any{"worker_id": "c", "from_worker_id": "nobody", "resource_type": "code"})
	if f.Code != 0 || f.field("forked") != false || !strings.Contains(fmt.Sprint(f.field("fork_note")), "no code session") {
		t.Fatalf("fork without source: %+v", f)
	}
	if a := e.post("/api/v1/session/fork", map[string]any{"worker_id": "d", "resource_type": "code"}); a.status != http.StatusBadRequest {
		t.Fatalf("fork without from_worker_id: %+v", a)
	}
}
