package handlers

import "github.com/flockrun/flock/internal/elide"

// Truncate caps s at about limit bytes, keeping the head and the tail and
// replacing the middle with a note counting the elided bytes. It reports
// whether anything was cut. limit <= 0 means no cap. Cuts never split a
// UTF-8 sequence. It is the cap of the bash and python operations' output.
func Truncate(s string, limit int) (string, bool) {
	return elide.Middle(s, limit)
}
