package embedded

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"unsafe"
)

// The index file is an append-only log: a header, then records.
//
//	header  = magic "mnemoidx" | version u16 | flags u16 | dim u32 | crc u32
//	record  = length u32 | crc(length) u32 | crc(payload) u32 | payload
//	payload = type u8 | body
//
// All integers are little-endian; crc is CRC-32C (Castagnoli); the header
// crc covers the 16 bytes before it. Strings in bodies are a uvarint length
// then the bytes.
//
//	upsert = id | kind | role | mode | channel | session | text | context |
//	         ts (varint, Unix milliseconds) | salience (u32 float bits) |
//	         vector encoding u8 (0 none, 1 affine 8-bit) |
//	         [min f32 | step f32 | dim codes u8]
//	delete = id
//	meta   = key | value
//
// A record whose length is intact but whose payload runs past the end of
// the file is a torn write from a crash: Open keeps the records before it
// and cuts the file there. Anything else that does not check out — a short
// or wrong header, a length whose crc fails, a payload whose crc fails, a
// body that does not decode — is corruption: Open fails with ErrCorrupt.
// Compaction rewrites the live records to a temporary file, syncs it and
// renames it over the log.
//
// Versions: 1 had no context in upserts; 2 adds it (recall.Doc.Context).
// A file of another version fails with ErrCorrupt, so that it is rebuilt
// from the journal.
const (
	magic      = "mnemoidx"
	version    = 2
	headerSize = 20
	recHeader  = 12
	// maxRecord bounds a record's payload, so a length that passes its crc
	// by chance cannot make Open allocate without limit.
	maxRecord = 1 << 30
)

// Record types.
const (
	recUpsert = 1
	recDelete = 2
	recMeta   = 3
)

// Vector encodings in an upsert record.
const (
	vecNone   = 0
	vecAffine = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt reports an index file that is damaged: the caller should
// remove the index directory and rebuild it from the journal.
var ErrCorrupt = errors.New("embedded: index file is corrupt")

// IsCorrupt reports whether err means the index on disk is damaged.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }

func encodeHeader(dim int) []byte {
	b := make([]byte, headerSize)
	copy(b, magic)
	binary.LittleEndian.PutUint16(b[8:], version)
	binary.LittleEndian.PutUint16(b[10:], 0)
	binary.LittleEndian.PutUint32(b[12:], uint32(dim))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	return b
}

// decodeHeader returns the dimension recorded in a header.
func decodeHeader(b []byte) (int, error) {
	if len(b) < headerSize {
		return 0, fmt.Errorf("header is %d bytes, want %d: %w", len(b), headerSize, ErrCorrupt)
	}
	if string(b[:8]) != magic {
		return 0, fmt.Errorf("bad magic %q: %w", b[:8], ErrCorrupt)
	}
	if got, want := binary.LittleEndian.Uint32(b[16:]), crc32.Checksum(b[:16], castagnoli); got != want {
		return 0, fmt.Errorf("header crc %#x, want %#x: %w", got, want, ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != version {
		return 0, fmt.Errorf("version %d, want %d: %w", v, version, ErrCorrupt)
	}
	dim := binary.LittleEndian.Uint32(b[12:])
	if dim > maxDim {
		return 0, fmt.Errorf("dimension %d over %d: %w", dim, maxDim, ErrCorrupt)
	}
	return int(dim), nil
}

// record is one decoded upsert, delete or meta record. Strings point into
// the read buffer only until the next record is read; apply copies them.
type record struct {
	typ   byte
	id    string // upsert, delete; meta: key
	text  string // upsert; meta: value
	ctx   string // upsert: the document's Context
	kind  string
	role  string
	mode  string
	chann string
	sess  string
	ts    int64
	sal   float32
	vec   *quantized // upsert with a vector; codes alias the buffer
}

// appendRecord appends a framed record with the given payload to dst.
func appendRecord(dst, payload []byte) []byte {
	var h [recHeader]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(h[0:4], castagnoli))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(payload, castagnoli))
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeUpsert(b []byte, r *record) []byte {
	b = append(b, recUpsert)
	for _, s := range [...]string{r.id, r.kind, r.role, r.mode, r.chann, r.sess, r.text, r.ctx} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, r.ts)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.sal))
	if r.vec == nil {
		return append(b, vecNone)
	}
	b = append(b, vecAffine)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.vec.min))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.vec.step))
	return append(b, r.vec.codes...)
}

func encodeDelete(b []byte, id string) []byte {
	return appendString(append(b, recDelete), id)
}

func encodeMeta(b []byte, key, value string) []byte {
	return appendString(appendString(append(b, recMeta), key), value)
}

// decoder reads a payload.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("bad %s: %w", what, ErrCorrupt)
	}
}

func (d *decoder) string(what string) string {
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.fail(what)
		d.b = nil
		return ""
	}
	s := d.b[k : k+int(n)]
	d.b = d.b[k+int(n):]
	return unsafeString(s)
}

func (d *decoder) varint(what string) int64 {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail(what)
		d.b = nil
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) u32(what string) uint32 {
	if len(d.b) < 4 {
		d.fail(what)
		d.b = nil
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) byte(what string) byte {
	if len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// decodePayload decodes a record payload for an index of dimension dim.
// q is scratch space for the vector.
func decodePayload(p []byte, dim int, r *record, q *quantized) error {
	*r = record{}
	d := decoder{b: p}
	r.typ = d.byte("record type")
	switch r.typ {
	case recUpsert:
		r.id = d.string("id")
		r.kind = d.string("kind")
		r.role = d.string("role")
		r.mode = d.string("mode")
		r.chann = d.string("channel")
		r.sess = d.string("session")
		r.text = d.string("text")
		r.ctx = d.string("context")
		r.ts = d.varint("timestamp")
		r.sal = math.Float32frombits(d.u32("salience"))
		if d.err == nil && !finite(r.sal) {
			d.fail("salience")
		}
		switch d.byte("vector encoding") {
		case vecNone:
		case vecAffine:
			q.min = math.Float32frombits(d.u32("vector min"))
			q.step = math.Float32frombits(d.u32("vector step"))
			if d.err == nil && (dim == 0 || len(d.b) < dim || !finite(q.min) || !finite(q.step)) {
				d.fail("vector")
			}
			if d.err == nil {
				q.codes = d.b[:dim]
				d.b = d.b[dim:]
				r.vec = q
			}
		default:
			d.fail("vector encoding")
		}
	case recDelete:
		r.id = d.string("id")
	case recMeta:
		r.id = d.string("key")
		r.text = d.string("value")
	default:
		d.fail(fmt.Sprintf("record type %d", r.typ))
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("record: trailing bytes")
	}
	return d.err
}

func finite(f float32) bool {
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}

// errTorn reports a record cut short by the end of the file.
var errTorn = errors.New("torn record at the end of the file")

// readRecord reads the next record's payload into buf (grown as needed).
// remaining is the number of bytes left in the file; a record that claims
// more is torn. It returns io.EOF at a clean end.
func readRecord(r *bufio.Reader, remaining int64, buf []byte) ([]byte, int64, error) {
	if remaining == 0 {
		return buf, 0, io.EOF
	}
	if remaining < recHeader {
		return buf, 0, errTorn
	}
	var h [recHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return buf, 0, fmt.Errorf("read record header: %w", err)
	}
	n := binary.LittleEndian.Uint32(h[0:])
	if got, want := binary.LittleEndian.Uint32(h[4:]), crc32.Checksum(h[0:4], castagnoli); got != want {
		return buf, 0, fmt.Errorf("record length crc %#x, want %#x: %w", got, want, ErrCorrupt)
	}
	if n == 0 || n > maxRecord {
		return buf, 0, fmt.Errorf("record length %d: %w", n, ErrCorrupt)
	}
	if int64(n) > remaining-recHeader {
		return buf, 0, errTorn
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, 0, fmt.Errorf("read record: %w", err)
	}
	if got, want := binary.LittleEndian.Uint32(h[8:]), crc32.Checksum(buf, castagnoli); got != want {
		return buf, 0, fmt.Errorf("record crc %#x, want %#x: %w", got, want, ErrCorrupt)
	}
	return buf, recHeader + int64(n), nil
}

// unsafeString views b as a string without copying. The string is valid
// only while b is not reused: everything that keeps it clones it.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// checkRecord checks a whole framed record read back from the file (its
// length and both checksums) and returns its payload.
func checkRecord(b []byte) ([]byte, error) {
	if len(b) < recHeader {
		return nil, fmt.Errorf("record of %d bytes: %w", len(b), ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(b[0:])
	if got, want := binary.LittleEndian.Uint32(b[4:]), crc32.Checksum(b[0:4], castagnoli); got != want {
		return nil, fmt.Errorf("record length crc %#x, want %#x: %w", got, want, ErrCorrupt)
	}
	if int64(n) != int64(len(b)-recHeader) {
		return nil, fmt.Errorf("record length %d, want %d: %w", n, len(b)-recHeader, ErrCorrupt)
	}
	p := b[recHeader:]
	if got, want := binary.LittleEndian.Uint32(b[8:]), crc32.Checksum(p, castagnoli); got != want {
		return nil, fmt.Errorf("record crc %#x, want %#x: %w", got, want, ErrCorrupt)
	}
	return p, nil
}
