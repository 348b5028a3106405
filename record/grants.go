package record

// Grants are directories one run tree may read or write beneath, granted
// by the person at the terminal (absolute, cleaned paths). They are
// stored with a top-level run's spec and read by file access.
type Grants struct {
	ReadRoots  []string `json:"read_roots,omitempty"`
	WriteRoots []string `json:"write_roots,omitempty"`
}
