package jetstream

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// maxRunIDLen bounds run ids so that subjects stay well inside the
// server's control line (4 KiB).
const maxRunIDLen = 1024

// runKey returns the subject token and KV key of run id: the id itself
// when it is made of letters, digits, '-' and '_' (as the ids flock
// generates are), otherwise "=" and its unpadded base64url encoding. The
// two forms cannot collide: '=' is not a plain character.
func runKey(id string) string {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "=" + base64.RawURLEncoding.EncodeToString([]byte(id))
		}
	}
	return id
}

// checkRunID rejects ids the store cannot key (the rules of the bbolt
// store).
func checkRunID(id string) error {
	switch {
	case id == "":
		return errors.New("empty run id")
	case len(id) > maxRunIDLen:
		return fmt.Errorf("run id longer than %d bytes", maxRunIDLen)
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("run id %q contains a NUL byte", id)
	}
	return nil
}

// Log kinds: the last token of a run's subjects.
const (
	kindSpec   = "spec"
	kindEntry  = "entry"
	kindOp     = "op"
	kindResult = "result"
	kindEvent  = "event"
)

// kinds lists the logs in the order a commit appends them.
var kinds = [...]string{kindSpec, kindEntry, kindOp, kindResult, kindEvent}

// subject returns the subject of one of run key's logs.
func (s *Store) subject(key, kind string) string {
	return s.subjRun + key + "." + kind
}
