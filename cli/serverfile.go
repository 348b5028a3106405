package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
)

// serverFileName is the file in a data directory through which the flock
// server holding it tells the command line where it is: flock run,
// rollout and synthesize hand their run to it, and flock runs reads from
// it. It holds the server's operator token, so it is the operator's
// alone (mode 0600); the server removes it at shutdown.
const serverFileName = "server.json"

// serverFile is the content of the server file.
type serverFile struct {
	// URL is where the server answers on this machine.
	URL string `json:"url"`
	// Token is the operator token (server.MountOperator).
	Token string `json:"token"`
	// PID is the server's process id (for people reading the file).
	PID int `json:"pid"`
}

// newOperatorToken returns a fresh random operator token.
func newOperatorToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeServerFile writes f into dataDir (mode 0600, atomically) and
// returns the function that removes it.
func writeServerFile(dataDir string, f serverFile) (func(), error) {
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dataDir, "."+serverFileName+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write the server file: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write the server file: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write the server file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write the server file: %w", err)
	}
	path := filepath.Join(dataDir, serverFileName)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("write the server file: %w", err)
	}
	removed := false
	return func() {
		if !removed {
			removed = true
			_ = os.Remove(path)
		}
	}, nil
}

// readServerFile reads the server file of dataDir; ok is false when there
// is none.
func readServerFile(dataDir string) (f serverFile, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, serverFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return serverFile{}, false, nil
	}
	if err != nil {
		return serverFile{}, false, err
	}
	if err := json.Unmarshal(b, &f); err != nil || f.URL == "" || f.Token == "" {
		return serverFile{}, false, fmt.Errorf("%s: not a server file", filepath.Join(dataDir, serverFileName))
	}
	return f, true, nil
}

// removeStaleServerFile removes the server file of dataDir once this
// process holds the data directory itself: a server killed without its
// shutdown (kill -9) left it.
func removeStaleServerFile(dataDir string) {
	_ = os.Remove(filepath.Join(dataDir, serverFileName))
}

// handle is a live flock server that holds a data directory, found
// through its server file.
type handle struct {
	url  string
	c    *client.Client
	info api.Operator
}

// findServer returns the live server that holds dataDir, or nil when no
// server file names one that answers as the holder of dataDir with its
// operator token (none, or a stale file left by a killed server: its
// address refuses connections or belongs to another process now).
func findServer(ctx context.Context, dataDir string) (*handle, error) {
	f, ok, err := readServerFile(dataDir)
	if err != nil || !ok {
		return nil, err
	}
	c, err := client.New(f.URL, client.WithToken(f.Token))
	if err != nil {
		return nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.Operator(cctx)
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) && ce.Status != http.StatusUnauthorized && ce.Status != http.StatusNotFound {
			return nil, fmt.Errorf("%w (the server file %s names it)", err, filepath.Join(dataDir, serverFileName))
		}
		return nil, nil
	}
	abs, _ := filepath.Abs(dataDir)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	held := info.DataDir
	if real, err := filepath.EvalSymlinks(held); err == nil {
		held = real
	}
	if held != abs {
		return nil, nil
	}
	return &handle{url: f.URL, c: c, info: info}, nil
}
