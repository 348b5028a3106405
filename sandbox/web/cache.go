package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// cache keeps providers' successful answers on disk, one JSON file per
// request under dir, named by the SHA-256 of the provider's name and the
// request (never the key). Entries older than ttl are ignored and
// overwritten. A cache with ttl 0 or no dir keeps nothing.
type cache struct {
	dir string
	ttl time.Duration
	now func() time.Time
}

type cacheEntry struct {
	Version  int       `json:"version"`
	StoredAt time.Time `json:"stored_at"`
	Body     string    `json:"body"`
}

func cacheKey(provider, request string) string {
	h := sha256.New()
	h.Write([]byte(provider))
	h.Write([]byte{0})
	h.Write([]byte(request))
	return hex.EncodeToString(h.Sum(nil))
}

func (c *cache) path(key string) string { return filepath.Join(c.dir, key[:2], key+".json") }

// get returns the stored answer for key when it is younger than the TTL.
func (c *cache) get(key string) (string, bool) {
	if c == nil || c.dir == "" || c.ttl <= 0 {
		return "", false
	}
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		return "", false
	}
	var e cacheEntry
	if json.Unmarshal(b, &e) != nil || e.Version != 1 || c.now().Sub(e.StoredAt) > c.ttl {
		return "", false
	}
	return e.Body, true
}

// put stores body under key, writing a temporary file and renaming it so a
// concurrent get never reads half an entry.
func (c *cache) put(key, body string) error {
	if c == nil || c.dir == "" || c.ttl <= 0 {
		return nil
	}
	b, err := json.Marshal(cacheEntry{Version: 1, StoredAt: c.now().UTC(), Body: body})
	if err != nil {
		return err
	}
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("web cache: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("web cache: %w", err)
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("web cache: %w", err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("web cache: %w", err)
	}
	return nil
}

// count returns the number of entries on disk (for tests and stats).
func (c *cache) count() int {
	n := 0
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".json" {
			n++
		}
		return nil
	})
	return n
}
