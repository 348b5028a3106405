package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/testkit"
)

// httpWording matches what an HTTP client says and a tool does not: status
// codes and their names, methods with paths, the client package's and the
// usage sentinel's prefixes.
var httpWording = regexp.MustCompile(`(?i)\b[45]\d\d\b|bad request|not found:|conflict|unauthorized|forbidden|\b(GET|POST|PUT|DELETE) /|client: |usage: `)

// checkWording fails t when a command's stderr speaks HTTP.
func checkWording(t *testing.T, args []string, stderr string) {
	t.Helper()
	if m := httpWording.FindString(stderr); m != "" {
		t.Errorf("flock %s: stderr speaks HTTP (%q):\n%s", strings.Join(args, " "), m, stderr)
	}
}

// TestCLIUsageErrors: through the real binary, every kind of usage error
// (a command, subcommand or flag flock does not have, a flag without its
// value or with a bad one, a missing flag or argument, an extra argument,
// a workflow that is not registered) exits 2 with one line naming what is
// wrong (with the closest name when one is near) and where the usage is.
func TestCLIUsageErrors(t *testing.T) {
	data := t.TempDir()
	ok := filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{"ok.json": `{"workflow_type": "script", "commands": ["true"]}`}), "ok.json")
	if code, out, errs := flock(t, "run", "--settings", ok, "--data", data); code != 0 {
		t.Fatalf("a run to list: exit %d\n%s\n%s", code, out, errs)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"rnu"}, `flock: unknown command "rnu" (did you mean "run"?)`},
		{[]string{"runs", "lsit"}, `flock runs: unknown runs command "lsit" (did you mean "list"?)`},
		{[]string{"runs"}, "flock runs: a runs command is required: list, show, logs, export, cancel"},
		{[]string{"db", "chekc"}, `flock db: unknown db command "chekc" (did you mean "check"?)`},
		{[]string{"run", "--workflwo", "script"}, "flock run: unknown flag --workflwo (did you mean --workflow?)"},
		{[]string{"serve", "--adr", "127.0.0.1:0"}, "flock serve: unknown flag --adr (did you mean --addr?)"},
		{[]string{"--workflow", "script", "--exti"}, "flock: unknown flag --exti (did you mean --exit?)"},
		{[]string{"run", "--workflow"}, "flock run: --workflow needs a value"},
		{[]string{"run", "--workflow", "script", "--mode", "offline"}, `flock run: --mode "offline": want live or simulated`},
		{[]string{"serve", "--addr", "46397", "--data", data}, `flock serve: --addr "46397": want HOST:PORT`},
		{[]string{"runs", "list", "--limit", "many", "--data", data}, `flock runs list: --limit "many": want a whole number`},
		{[]string{"runs", "list", "--limit", "0", "--data", data}, "flock runs list: --limit must be at least 1"},
		{[]string{"runs", "list", "--status", "done", "--data", data}, `flock runs list: --status "done": must be one of running, paused, succeeded, failed, cancelled`},
		{[]string{"runs", "list", "--workflow", "scirpt", "--data", data}, `flock runs list: unknown workflow "scirpt" (did you mean "script"?)`},
		{[]string{"runs", "show", "--data", data}, "flock runs show: RUN_ID is required (flock runs show RUN_ID)"},
		{[]string{"runs", "show", "a", "b", "--data", data}, `flock runs show: unexpected argument "b" (flock runs show takes RUN_ID)`},
		{[]string{"runs", "fork", "R"}, "flock runs fork: --step is required"},
		{[]string{"run", "--data", data}, "flock run: --workflow or --settings is required"},
		{[]string{"run", "--workflow", "scirpt", "--data", data}, `flock run: unknown workflow "scirpt" (did you mean "script"?): "flock workflows" lists the registered ones`},
		{[]string{"run", "--workflow", "script", "now", "--data", data}, `flock run: unexpected argument "now": flock run takes flags only (the flags after it were not read`},
		{[]string{"rollout"}, "flock rollout: --config FILE is required"},
		{[]string{"rollout", "--config", "x.yaml", "--num-chains", "-2"}, "flock rollout: --num-chains -2: want a whole number, 1 or more"},
		{[]string{"synthesize"}, "flock synthesize: --config FILE is required"},
		{[]string{"sandbox"}, "flock sandbox: --config FILE is required"},
		{[]string{"db", "recover", "--data", data}, "flock db recover: --to FILE is required"},
		{[]string{"version", "--short"}, "flock version: unknown flag --short"},
		{[]string{"help", "rollot"}, `flock help: unknown command "rollot" (did you mean "rollout"?)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errs := flock(t, tt.args...)
			if code != 2 || out != "" || !strings.HasPrefix(errs, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and stderr starting %q", code, out, errs, tt.want)
			}
			if lines := strings.Split(strings.TrimSpace(errs), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], `Run "flock `) {
				t.Fatalf("stderr is not the error and where the usage is:\n%s", errs)
			}
			checkWording(t, tt.args, errs)
		})
	}
}

// TestCLIOperationalErrors: a command that is well formed but fails (a
// run that does not succeed, a run or server that does not exist, a token
// the server refuses) exits 1 and says what is wrong without HTTP words,
// in its own process and through a flock server alike.
func TestCLIOperationalErrors(t *testing.T) {
	const token = "cli-usage-test-token-0123456789"
	data := t.TempDir()
	p := startServer(t, data, freePort(t), "--mode", "simulated", "--auth-token", token)
	failing := filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{
		"fail.json": `{"workflow_type": "script", "commands": ["echo one", "exit 3"]}`}), "fail.json")
	alone := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		stdout string
		want   string
	}{
		{"failed run", []string{"run", "--settings", failing, "--data", alone}, "failed (command_failed: exit 3)", ""},
		{"failed run in a server", []string{"run", "--settings", failing, "--data", data}, "failed (command_failed: exit 3)", ""},
		{"unknown run to resume", []string{"run", "--resume", "nosuch", "--data", alone}, "", `flock run: no run "nosuch" in ` + alone},
		{"unknown run to resume in a server", []string{"run", "--resume", "nosuch", "--data", data}, "", `flock run: no run "nosuch" in ` + data},
		{"unknown run to show", []string{"runs", "show", "nosuch", "--data", alone}, "", `flock runs show: no run "nosuch" in ` + alone},
		{"unknown run to show in a server", []string{"runs", "show", "nosuch", "--server", p.base, "--token", token}, "", `flock runs show: no run "nosuch" in the flock server at ` + p.base},
		{"unknown run to cancel", []string{"runs", "cancel", "nosuch", "--server", p.base, "--token", token}, "", `flock runs cancel: run "nosuch" not found`},
		{"refused token", []string{"runs", "list", "--server", p.base, "--token", "not-the-token-0123456789"}, "",
			"flock runs list: the flock server at " + p.base + " refused the token: give its token with --token (or FLOCK_AUTH_TOKEN)"},
		{"no server", []string{"runs", "pause", "R", "--server", "http://" + freePort(t)}, "", "flock runs pause: no flock server answers at http://127.0.0.1:"},
		{"missing settings file", []string{"run", "--settings", filepath.Join(alone, "nope.json"), "--data", alone}, "",
			"flock run: --settings " + filepath.Join(alone, "nope.json") + ": no such file or directory"},
		{"missing server config", []string{"serve", "--config", filepath.Join(alone, "nope.yaml"), "--data", alone}, "",
			"flock serve: --config " + filepath.Join(alone, "nope.yaml") + ": no such file or directory"},
		{"missing sandbox config", []string{"sandbox", "--config", filepath.Join(alone, "nope.json")}, "",
			"flock sandbox: --config " + filepath.Join(alone, "nope.json") + ": no such file or directory"},
		{"no database", []string{"db", "check", "--data", t.TempDir()}, "", "holds no flock.db: give the data directory with --data DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := flock(t, tt.args...)
			if code != 1 || !strings.Contains(out, tt.stdout) || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1, stdout with %q, stderr with %q", code, out, errs, tt.stdout, tt.want)
			}
			checkWording(t, tt.args, errs)
		})
	}
}

// TestWorkflowTypo: a workflow name that is not registered is answered
// with the closest registered one and exit 2, the same in the command's
// own process and when its run would be handed to the server holding the
// data directory (whose registry, with its --workflows, is the one asked),
// and by the Flock-style launch before it starts anything.
func TestWorkflowTypo(t *testing.T) {
	alone := t.TempDir()
	code0, _, err0 := flock(t, "run", "--workflow", "scirpt", "--data", alone)
	if code0 != 2 || !strings.HasPrefix(err0, `flock run: unknown workflow "scirpt" (did you mean "script"?)`) {
		t.Fatalf("in-process: exit %d\n%s", code0, err0)
	}
	data := t.TempDir()
	p := startServer(t, data, freePort(t), "--workflows", "../configs/workflows")
	code1, out1, err1 := flock(t, "run", "--workflow", "scirpt", "--data", data)
	if code1 != 2 || err1 != err0 {
		t.Fatalf("handed to the server: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the in-process stderr:\n%s", code1, out1, err1, err0)
	}
	// The server's own workflows count: bash-agent is registered there
	// (--workflows), not in this process.
	if code, _, errs := flock(t, "run", "--workflow", "bash-agnet", "--data", data); code != 2 ||
		!strings.Contains(errs, `unknown workflow "bash-agnet" (did you mean "bash-agent"?)`) {
		t.Fatalf("a workflow of the server's: exit %d\n%s", code, errs)
	}
	if code, _, errs := flock(t, "runs", "list", "--workflow", "bash-agnet", "--data", data); code != 2 ||
		!strings.Contains(errs, `unknown workflow "bash-agnet" (did you mean "bash-agent"?)`) {
		t.Fatalf("runs list of the server: exit %d\n%s", code, errs)
	}
	// The settings' workflow_type is checked the same way.
	typo := filepath.Join(testkit.WriteFiles(t, t.TempDir(), map[string]string{"typo.json": `{"workflow_type": "scrip", "commands": ["true"]}`}), "typo.json")
	for _, d := range []string{alone, data} {
		if code, _, errs := flock(t, "run", "--settings", typo, "--data", d); code != 2 ||
			!strings.HasPrefix(errs, `flock run: unknown workflow "scrip" (did you mean "script"?)`) {
			t.Fatalf("workflow_type, data %s: exit %d\n%s", d, code, errs)
		}
	}
	if page, err := p.c.Runs(context.Background(), client.RunsQuery{}); err != nil || len(page.Runs) != 0 {
		t.Fatalf("the server's runs after refused starts: %+v, %v", page.Runs, err)
	}
	// The Flock-style launch refuses it and exits, its server stopped.
	code, out, errs := flock(t, "--workflow", "scirpt", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--log-level", "error")
	if code != 2 || !strings.Contains(errs, `flock: unknown workflow "scirpt" (did you mean "script"?)`) {
		t.Fatalf("launch: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestCLIHelp: every command and subcommand the overview lists answers
// -h, --help and "flock help ..." on stdout with exit 0: its usage and at
// least one example.
func TestCLIHelp(t *testing.T) {
	code, overview, errs := flock(t, "help")
	if code != 0 || errs != "" || !strings.Contains(overview, "Usage:") || !strings.Contains(overview, "Exit codes:") {
		t.Fatalf("flock help: exit %d\n%s\n%s", code, overview, errs)
	}
	if _, o, _ := flock(t, "-h"); o != overview {
		t.Fatalf("flock -h differs from flock help:\n%s", o)
	}
	cmds := [][]string{nil}
	for _, name := range listed(t, overview, "Commands:") {
		cmds = append(cmds, []string{name})
		if name == "runs" || name == "db" {
			_, sub, _ := flock(t, name, "-h")
			for _, s := range listed(t, sub, "Commands (") {
				cmds = append(cmds, []string{name, s})
			}
		}
	}
	if len(cmds) < 20 {
		t.Fatalf("only %d commands listed: %q", len(cmds), cmds)
	}
	example := regexp.MustCompile(`(?m)^Examples:\n  flock( |$)`)
	for _, c := range cmds {
		name := strings.Join(c, " ")
		t.Run("flock "+name, func(t *testing.T) {
			forms := [][]string{append(append([]string{}, c...), "-h"), append(append([]string{}, c...), "--help")}
			if len(c) > 0 {
				forms = append(forms, append([]string{"help"}, c...))
			}
			for _, args := range forms {
				code, out, errs := flock(t, args...)
				if code != 0 || errs != "" || !strings.Contains(out, "Usage:\n  flock") || !example.MatchString(out) {
					t.Fatalf("flock %s: exit %d, stderr %q, stdout:\n%s", strings.Join(args, " "), code, errs, out)
				}
			}
		})
	}
}

// listed is the first word of each indented line of the section of help
// that starts with a line beginning with header.
func listed(t *testing.T, help, header string) []string {
	t.Helper()
	var names []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case in && line == "":
			return names
		case in && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   "):
			names = append(names, strings.Fields(line)[0])
		}
	}
	if len(names) == 0 {
		t.Fatalf("no %q section in:\n%s", header, help)
	}
	return names
}
