package jetstream

import (
	"encoding/base64"
)

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

// subject returns the subject of one of run key's logs (in its shard).
func (s *Store) subject(key, kind string) string {
	return s.shardOf(key).subjRun + key + "." + kind
}
