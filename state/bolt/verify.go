package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// A damaged bbolt file cannot be handed to bbolt safely: bbolt trusts its
// pages, and on open (with NoFreelistSync) it walks the whole tree in a
// goroutine of its own, where a bad page id or a page past the end of a
// truncated file panics or faults beyond any recover. So before bbolt sees
// a file, scanFile walks the same B+tree with plain reads (no mmap) and
// checks everything bbolt relies on: the meta pages' checksums, that the
// file reaches the last transaction's high-water mark, and for every page
// reachable from the root: its id, type, element bounds, key order and
// that nothing is referenced twice. A file that passes cannot make bbolt
// panic or fault on open or on reading (barring changes made to the file
// afterwards). The same walk, told to go on past damage, is what db
// recover reads records with.

// Layout constants of the bbolt file format (go.etcd.io/bbolt, version 2).
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16
	elemSize         = 16 // branch and leaf element headers
	bucketHeaderSize = 16
	metaSize         = 64
	metaSumOffset    = 56
	flagBranch       = 0x01
	flagLeaf         = 0x02
	flagFreelist     = 0x10
	leafFlagBucket   = 0x01
	noFreelist       = ^uint64(0)
	minPageSize      = 512
	maxPageSize      = 1 << 24
)

// boltMeta is a decoded meta page.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64 // high-water mark: pages [0, hwm) belong to the file
	txid     uint64
}

// scanResult is what scanFile found.
type scanResult struct {
	size     int64
	pageSize int
	meta     boltMeta
	// problems describe the damage found, one line each, in walk order.
	problems []string
	// lostPages counts reachable pages that could not be read.
	lostPages int
}

// scanner walks a bbolt file with plain reads.
type scanner struct {
	f        *os.File
	res      *scanResult
	seen     []uint64 // bitset of pages referenced so far
	visit    func(bucket string, k, v []byte) error
	maxIssue int // stop recording problems after this many (the walk goes on)
}

// errTooShort is returned by scanFile for files that hold no bbolt meta page.
var errTooShort = errors.New("file too short")

// scanFile walks the bbolt file at path. visit, if set, receives every
// readable key/value pair of each top-level bucket (bucket name, key,
// value; the slices are valid only during the call); damaged pages are
// skipped and described in the result's problems. It fails only when the
// file cannot be read at all or holds no valid meta page.
func scanFile(path string, visit func(bucket string, k, v []byte) error) (*scanResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	res := &scanResult{size: fi.Size()}
	if res.size < 2*minPageSize {
		return res, fmt.Errorf("%w: %d bytes, not a database", errTooShort, res.size)
	}
	s := &scanner{f: f, res: res, visit: visit, maxIssue: 1000}
	if err := s.readMetas(); err != nil {
		return res, err
	}
	m := res.meta
	if need := int64(m.hwm) * int64(res.pageSize); need > res.size {
		s.problem("truncated: the file has %d bytes but its last transaction reaches byte %d (page %d)", res.size, need, m.hwm-1)
	}
	s.seen = make([]uint64, (m.hwm+63)/64)
	s.mark(0)
	s.mark(1)
	if m.freelist != noFreelist {
		s.checkFreelist(m.freelist)
	}
	if m.root >= m.hwm || m.root < 2 {
		s.problem("meta: root page %d is outside the file's pages [2, %d)", m.root, m.hwm)
		return res, nil
	}
	err = s.walk("", m.root, nil, nil, nil, 0)
	return res, err
}

// problem records one line of damage.
func (s *scanner) problem(format string, args ...any) {
	if len(s.res.problems) < s.maxIssue {
		s.res.problems = append(s.res.problems, fmt.Sprintf(format, args...))
	} else if len(s.res.problems) == s.maxIssue {
		s.res.problems = append(s.res.problems, "(further problems not listed)")
	}
}

// mark records page id as referenced; it reports false if it already was.
func (s *scanner) mark(id uint64) bool {
	w, b := id/64, uint64(1)<<(id%64)
	if s.seen[w]&b != 0 {
		return false
	}
	s.seen[w] |= b
	return true
}

// readMetas decodes both meta pages and picks the one bbolt would use:
// the valid one with the higher transaction id.
func (s *scanner) readMetas() error {
	var buf [4096]byte
	n, err := s.f.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	m0, err0 := decodeMeta(buf[:n])
	pageSize := 0
	if err0 == nil {
		pageSize = int(m0.pageSize)
	}
	// The second meta page sits one page in; without a valid first meta,
	// try the page sizes bbolt tries.
	var (
		m1   boltMeta
		err1 = errors.New("not found")
	)
	try := func(ps int) bool {
		if int64(ps)+metaSize+pageHeaderSize > s.res.size {
			return false
		}
		n, err := s.f.ReadAt(buf[:], int64(ps))
		if err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		m, err := decodeMeta(buf[:n])
		if err == nil && int(m.pageSize) == ps {
			m1, err1 = m, nil
			return true
		}
		if err1 == nil || pageSize != 0 {
			err1 = err
		}
		return false
	}
	if pageSize != 0 {
		try(pageSize)
	} else {
		for ps := 1024; ps <= maxPageSize && !try(ps); ps <<= 1 {
		}
	}
	switch {
	case err0 != nil && err1 != nil:
		return fmt.Errorf("both meta pages are damaged (page 0: %v; page 1: %v)", err0, err1)
	case err0 != nil:
		s.problem("meta page 0 is damaged (%v); the older state of meta page 1 (transaction %d) is what remains", err0, m1.txid)
		s.res.meta = m1
	case err1 != nil:
		s.problem("meta page 1 is damaged (%v); the state of meta page 0 (transaction %d) is what remains", err1, m0.txid)
		s.res.meta = m0
	case m1.txid > m0.txid:
		s.res.meta = m1
	default:
		s.res.meta = m0
	}
	s.res.pageSize = int(s.res.meta.pageSize)
	return nil
}

// decodeMeta decodes and validates the meta record of a meta page.
func decodeMeta(page []byte) (boltMeta, error) {
	if len(page) < pageHeaderSize+metaSize {
		return boltMeta{}, errors.New("short page")
	}
	b := page[pageHeaderSize : pageHeaderSize+metaSize]
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != boltMagic {
		return boltMeta{}, errors.New("bad magic number")
	}
	if v := le.Uint32(b[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("format version %d, want %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(b[:metaSumOffset])
	if h.Sum64() != le.Uint64(b[metaSumOffset:]) {
		return boltMeta{}, errors.New("checksum mismatch")
	}
	m := boltMeta{
		pageSize: le.Uint32(b[8:]),
		root:     le.Uint64(b[16:]),
		freelist: le.Uint64(b[32:]),
		hwm:      le.Uint64(b[40:]),
		txid:     le.Uint64(b[48:]),
	}
	if m.pageSize < minPageSize || m.pageSize > maxPageSize {
		return boltMeta{}, fmt.Errorf("page size %d out of range", m.pageSize)
	}
	if m.hwm < 3 || m.hwm > 1<<40 {
		return boltMeta{}, fmt.Errorf("page count %d out of range", m.hwm)
	}
	return m, nil
}

// readPage reads page id with its overflow pages after checking its
// header. It returns nil after recording a problem when the page is
// unusable.
func (s *scanner) readPage(id uint64, where string) []byte {
	ps := s.res.pageSize
	hwm := s.res.meta.hwm
	if id < 2 || id >= hwm {
		s.problem("%s: page %d is outside the file's pages [2, %d)", where, id, hwm)
		return nil
	}
	off := int64(id) * int64(ps)
	if off+int64(ps) > s.res.size {
		s.problem("%s: page %d lies past the end of the file (truncated)", where, id)
		s.res.lostPages++
		return nil
	}
	buf := make([]byte, ps)
	if _, err := s.f.ReadAt(buf, off); err != nil {
		s.problem("%s: page %d: read: %v", where, id, err)
		s.res.lostPages++
		return nil
	}
	le := binary.LittleEndian
	if got := le.Uint64(buf); got != id {
		s.problem("%s: page %d is damaged: its header names page %d", where, id, got)
		s.res.lostPages++
		return nil
	}
	if !s.mark(id) {
		s.problem("%s: page %d is referenced twice", where, id)
		return nil
	}
	over := uint64(le.Uint32(buf[12:]))
	if over == 0 {
		return buf
	}
	if id+over >= hwm || off+int64(over+1)*int64(ps) > s.res.size {
		s.problem("%s: page %d is damaged: %d overflow pages run past the end", where, id, over)
		s.res.lostPages++
		return nil
	}
	for i := uint64(1); i <= over; i++ {
		if !s.mark(id + i) {
			s.problem("%s: page %d is referenced twice", where, id+i)
			return nil
		}
	}
	full := make([]byte, int(over+1)*ps)
	copy(full, buf)
	if _, err := s.f.ReadAt(full[ps:], off+int64(ps)); err != nil {
		s.problem("%s: page %d: read overflow: %v", where, id, err)
		s.res.lostPages++
		return nil
	}
	return full
}

// checkFreelist checks a freelist page (files written without
// NoFreelistSync have one).
func (s *scanner) checkFreelist(id uint64) {
	p := s.readPage(id, "freelist")
	if p == nil {
		return
	}
	le := binary.LittleEndian
	if f := le.Uint16(p[8:]); f != flagFreelist {
		s.problem("freelist: page %d is damaged: type %#x, want freelist", id, f)
		return
	}
	count, start := uint64(le.Uint16(p[10:])), uint64(pageHeaderSize)
	if count == 0xFFFF {
		count, start = le.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if start+count*8 > uint64(len(p)) {
		s.problem("freelist: page %d is damaged: %d ids do not fit", id, count)
		return
	}
	for i := uint64(0); i < count; i++ {
		if f := le.Uint64(p[start+i*8:]); f < 2 || f >= s.res.meta.hwm {
			s.problem("freelist: page %d is damaged: free page id %d out of range", id, f)
			return
		}
	}
}

// walk checks the subtree at page id of bucket (the root bucket is "")
// whose keys must lie in [lo, hi) (nil = unbounded). inline, when set,
// is the bucket's inline page instead. depth bounds the recursion.
func (s *scanner) walk(bucket string, id uint64, inline []byte, lo, hi []byte, depth int) error {
	where := "bucket " + bucket
	if bucket == "" {
		where = "root bucket"
	}
	if depth > 64 {
		s.problem("%s: page %d: tree deeper than 64 levels", where, id)
		return nil
	}
	p := inline
	if p == nil {
		if p = s.readPage(id, where); p == nil {
			return nil
		}
	}
	le := binary.LittleEndian
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	if flags != flagBranch && flags != flagLeaf {
		s.problem("%s: page %d is damaged: type %#x is neither branch nor leaf", where, id, flags)
		s.res.lostPages++
		return nil
	}
	if pageHeaderSize+count*elemSize > len(p) {
		s.problem("%s: page %d is damaged: %d elements do not fit in the page", where, id, count)
		s.res.lostPages++
		return nil
	}
	if flags == flagBranch && (inline != nil || count == 0) {
		s.problem("%s: page %d is damaged: empty or inline branch page", where, id)
		s.res.lostPages++
		return nil
	}
	// Decode every element first: a page with one element out of bounds
	// is not trusted at all.
	type elem struct {
		flags      uint32
		key, val   []byte
		child      uint64
		orderIssue bool
	}
	elems := make([]elem, count)
	prev := lo
	for i := range elems {
		e := &elems[i]
		at := pageHeaderSize + i*elemSize
		var pos, ksize, vsize uint64
		if flags == flagBranch {
			pos, ksize = uint64(le.Uint32(p[at:])), uint64(le.Uint32(p[at+4:]))
			e.child = le.Uint64(p[at+8:])
		} else {
			e.flags = le.Uint32(p[at:])
			pos, ksize, vsize = uint64(le.Uint32(p[at+4:])), uint64(le.Uint32(p[at+8:])), uint64(le.Uint32(p[at+12:]))
		}
		start := uint64(at) + pos
		if ksize == 0 || start+ksize+vsize > uint64(len(p)) {
			s.problem("%s: page %d is damaged: element %d lies outside the page", where, id, i)
			s.res.lostPages++
			return nil
		}
		e.key = p[start : start+ksize]
		e.val = p[start+ksize : start+ksize+vsize]
		if (i == 0 && prev != nil && bytes.Compare(e.key, prev) < 0) || (i > 0 && bytes.Compare(e.key, prev) <= 0) ||
			(hi != nil && bytes.Compare(e.key, hi) >= 0) {
			e.orderIssue = true
		}
		prev = e.key
	}
	for i := range elems {
		if elems[i].orderIssue {
			s.problem("%s: page %d is damaged: key %d (%q) is out of order", where, id, i, clip(elems[i].key))
		}
	}
	if flags == flagBranch {
		for i, e := range elems {
			next := hi
			if i+1 < len(elems) {
				next = elems[i+1].key
			}
			if err := s.walk(bucket, e.child, nil, e.key, next, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range elems {
		if e.flags&leafFlagBucket == 0 {
			if bucket == "" {
				s.problem("root bucket: page %d is damaged: key %q is not a bucket", id, clip(e.key))
				continue
			}
			if s.visit != nil && !e.orderIssue {
				if err := s.visit(bucket, e.key, e.val); err != nil {
					return err
				}
			}
			continue
		}
		if bucket != "" {
			s.problem("%s: page %d: unexpected nested bucket %q", where, id, clip(e.key))
			continue
		}
		name := string(e.key)
		if len(e.val) < bucketHeaderSize {
			s.problem("bucket %s: header is damaged", name)
			continue
		}
		root := le.Uint64(e.val)
		if root != 0 {
			if err := s.walk(name, root, nil, nil, nil, depth+1); err != nil {
				return err
			}
			continue
		}
		in := e.val[bucketHeaderSize:]
		if len(in) < pageHeaderSize {
			s.problem("bucket %s: inline page is damaged", name)
			continue
		}
		if err := s.walk(name, 0, in, nil, nil, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// clip shortens a key for a message.
func clip(k []byte) []byte {
	if len(k) > 40 {
		return k[:40]
	}
	return k
}
