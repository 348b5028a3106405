package isolation

import (
	"os"
	"strings"

	"github.com/flockrun/flock/configs"
)

// inherited lists the variables of flock's environment that every program
// it starts inherits (and, by prefix, LC_*). Nothing else passes: API
// keys, tokens, passwords, cloud credentials and agent sockets stay out
// whatever they are called.
var inherited = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR"}

// DefaultPath is a program's PATH when flock's environment has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Environ returns the environment of a program flock starts, isolated as
// iso says: the variables of flock's own environment that inherited names
// (LC_* included; PATH defaults to DefaultPath; TMPDIR only for a program
// that is not isolated, since an isolated one has its own /tmp), then
// extra ("KEY=value"), a later entry replacing an earlier one of the same
// name. It is the one place where a program's environment is drawn from
// flock's: callers add only values they mean to give.
func Environ(iso configs.Isolation, extra ...string) []string {
	var out []string
	index := map[string]int{}
	set := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := index[k]; ok {
			out[i] = kv
			return
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	for _, k := range inherited {
		if k == "TMPDIR" && iso.Kind == KindBwrap {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			set(k + "=" + v)
		}
	}
	if _, ok := index["PATH"]; !ok {
		set("PATH=" + DefaultPath)
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LC_") {
			set(kv)
		}
	}
	for _, kv := range extra {
		set(kv)
	}
	return out
}

// Lookup returns the values of the named variables of flock's
// environment as "KEY=value" entries, for the variables a run's settings
// pass on by name and the operator allows (unset ones are left out).
func Lookup(names []string) []string {
	var out []string
	for _, k := range names {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}
