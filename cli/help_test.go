package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allCommands is every command and subcommand with a help.
func allCommands() []*command {
	all := append([]*command{launchCommand}, commands...)
	all = append(all, runsCommands...)
	return append(all, dbCommands...)
}

// TestEveryCommandHasHelp: every command Main runs, and every subcommand
// of runs and db, has a synopsis, what it does and an example; and each
// of them answers -h with them.
func TestEveryCommandHasHelp(t *testing.T) {
	for name := range runners {
		if lookupCommand(name) == nil {
			t.Errorf("command %s has no help", name)
		}
	}
	for _, c := range allCommands() {
		t.Run(c.name, func(t *testing.T) {
			if len(c.synopsis) == 0 || c.about == "" || c.summary == "" || len(c.examples) == 0 {
				t.Fatalf("incomplete help: %+v", c)
			}
			args := strings.Fields(c.name)
			if c == launchCommand {
				args = nil
			}
			for _, h := range []string{"-h", "--help"} {
				code, out, errs := run(t, append(slices.Clone(args), h)...)
				if code != 0 || errs != "" {
					t.Fatalf("%s %s: exit %d, stderr %q", c.name, h, code, errs)
				}
				for _, want := range append([]string{"Usage:\n", "Examples:\n"}, c.examples...) {
					if !strings.Contains(out, want) {
						t.Fatalf("%s %s lacks %q:\n%s", c.name, h, want, out)
					}
				}
			}
		})
	}
}

// TestCommandExamples: each example of a command's help is a command line
// that command accepts (its flags exist and take the values given), and
// the files it names exist in the repository.
func TestCommandExamples(t *testing.T) {
	fileFlags := map[string]bool{"--settings": true, "--config": true, "--sandbox-config": true, "--workflows": true}
	for _, c := range allCommands() {
		for _, ex := range c.examples {
			t.Run(ex, func(t *testing.T) {
				words := splitWords(t, ex)
				if len(words) == 0 || words[0] != "flock" {
					t.Fatalf("example %q does not start with flock", ex)
				}
				if i := slices.Index(words, ">"); i >= 0 {
					words = words[:i]
				}
				args := words[1:]
				for i, w := range args {
					if fileFlags[w] && i+1 < len(args) {
						if _, err := os.Stat(filepath.Join("..", args[i+1])); err != nil {
							t.Errorf("%s names %s: %v", ex, args[i+1], err)
						}
					}
				}
				// The flags are parsed before -h is seen: an unknown flag or a
				// bad value fails the command.
				if code, _, errs := run(t, append(args, "-h")...); code != 0 {
					t.Fatalf("%s -h: exit %d\n%s", ex, code, errs)
				}
			})
		}
	}
}

// splitWords splits a command line as the shell does for the quoting the
// examples use ('...' and "...").
func splitWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestUsageErrorWording: the flag package's errors are worded as flock's
// other usage errors, naming the flag as typed and what it wants.
func TestUsageErrorWording(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag, near one", []string{"run", "--taks", "x"}, "flock run: unknown flag --taks (did you mean --task?)\n"},
		{"unknown flag, none near", []string{"workflows", "--zzz"}, "flock workflows: unknown flag --zzz\n"},
		{"no value", []string{"runs", "list", "--limit"}, "flock runs list: --limit needs a value\n"},
		{"not a number", []string{"runs", "list", "--limit", "ten"}, `flock runs list: --limit "ten": want a whole number` + "\n"},
		{"negative step", []string{"runs", "fork", "R", "--step", "-1"}, `flock runs fork: --step "-1": want a whole number, 0 or more` + "\n"},
		{"switch with a value", []string{"runs", "list", "--top=yes"}, "flock runs list: --top is a switch: give --top alone (or --top=false), not a value\n"},
		{"bad duration", []string{"serve", "--ack-wait", "soon"}, `flock serve: --ack-wait "soon": want a duration such as 30s or 2m` + "\n"},
		{"bad mode", []string{"rollout", "--mode", "fake"}, `flock rollout: --mode "fake": want live or simulated` + "\n"},
		{"bad address", []string{"sandbox", "--addr", "localhost"}, `flock sandbox: --addr "localhost": want HOST:PORT such as 127.0.0.1:8080 (missing port in address)` + "\n"},
		{"argument where flags go", []string{"run", "script"}, `flock run: unexpected argument "script": flock run takes flags only` + "\n"},
		{"argument of version", []string{"version", "now"}, `flock version: unexpected argument "now": flock version takes no arguments` + "\n"},
		{"unknown command", []string{"sever"}, `flock: unknown command "sever" (did you mean "serve"?)` + "\nRun \"flock help\" for the commands and their usage.\n"},
		{"unknown runs command", []string{"runs", "shwo", "R"}, `flock runs: unknown runs command "shwo" (did you mean "show"?)` + "\n"},
		{"missing argument", []string{"runs", "answer", "R", "--json"}, "flock runs answer: OP_ID and ANSWER are required (flock runs answer RUN_ID OP_ID ANSWER)\n"},
		{"help of nothing", []string{"help", "nothing"}, `flock help: unknown command "nothing"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.args...)
			if code != 2 || out != "" || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, tt.want)
			}
		})
	}
}
