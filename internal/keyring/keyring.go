// Package keyring holds the API keys (and tokens) that the person at the
// terminal gave flock literally, in a config file named on the command
// line, for the runs that command starts. They live only in the memory
// of the process that drives those runs (the command's own, or the flock
// server the command handed its run to); settings refer to each by a
// generated name of the form FLOCK_KEY_<hex> where they would otherwise
// name an environment variable (api_key_env, "${VAR}"), so nothing that
// is stored, logged or sent as an event ever holds the key itself.
//
// # Caveats
//
// A run resumed by a process that was not given the key (a restarted
// server, flock run --resume) cannot use it: Missing reports the names it
// lacks, and the run waits until the command that started it runs again.
package keyring

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Prefix starts every name the ring hands out.
const Prefix = "FLOCK_KEY_"

// names finds the ring's names in a document.
var names = regexp.MustCompile(Prefix + `[0-9a-f]{32}`)

// IsName reports whether name is of the ring's form (whether or not this
// ring holds it). Such a name is never read from the environment.
func IsName(name string) bool { return names.MatchString(name) && len(name) == len(Prefix)+32 }

// NewName returns a fresh random name for a key.
func NewName() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return Prefix + hex.EncodeToString(b[:])
}

// Names returns the distinct ring names that occur in doc, sorted.
func Names(doc []byte) []string {
	found := names.FindAll(doc, -1)
	out := make([]string, 0, len(found))
	for _, f := range found {
		out = append(out, string(f))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Ring is a set of named keys in memory. The zero value is empty and
// ready; a nil *Ring holds nothing. It is safe for concurrent use.
type Ring struct {
	mu   sync.RWMutex
	keys map[string]string // guarded by mu
}

// Set stores key under name. Names not of the ring's form are ignored.
func (r *Ring) Set(name, key string) {
	if r == nil || !IsName(name) || key == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]string{}
	}
	r.keys[name] = key
}

// Lookup returns the key stored under name.
func (r *Ring) Lookup(name string) (string, bool) {
	if r == nil {
		return "", false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.keys[name]
	return k, ok
}

// Missing returns the ring names doc refers to that r does not hold.
func (r *Ring) Missing(doc []byte) []string {
	var out []string
	for _, n := range Names(doc) {
		if _, ok := r.Lookup(n); !ok {
			out = append(out, n)
		}
	}
	return out
}

// Getenv returns a lookup of variables for code that reads keys by
// environment variable name: a ring name is answered from r only, any
// other name by getenv.
func (r *Ring) Getenv(getenv func(string) string) func(string) string {
	return func(name string) string {
		if strings.HasPrefix(name, Prefix) {
			k, _ := r.Lookup(name)
			return k
		}
		return getenv(name)
	}
}
