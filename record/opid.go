package record

import "strconv"

// OpID returns the ID of operation index of step of run:
// "<run>/<step>/<index>". The journal keys operations by it; handlers
// derive ids of their own from it (the external handler's session runs).
func OpID(run string, step uint64, index int) string {
	b := make([]byte, 0, len(run)+24)
	b = append(b, run...)
	b = append(b, '/')
	b = strconv.AppendUint(b, step, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(index), 10)
	return string(b)
}
