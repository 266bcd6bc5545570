package qdrant

import (
	"crypto/sha1"
	"encoding/hex"
)

// namespaceURL is RFC 9562's NameSpace_URL, 6ba7b811-9dad-11d1-80b4-00c04fd430c8.
var namespaceURL = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// Name prefixes of the UUIDv5 point ids (see PointID).
const (
	docIDPrefix   = "mnemo:doc:"
	metaIDPrefix  = "mnemo:meta:"
	statsIDPrefix = "mnemo:stats:"
)

// PointID is the Qdrant point id of the document with id docID: the
// UUIDv5 of "mnemo:doc:"+docID in the URL namespace, which in Python is
// uuid.uuid5(uuid.NAMESPACE_URL, "mnemo:doc:" + doc_id). It is
// deterministic, so re-indexing a document replaces its point.
func PointID(docID string) string {
	return uuid5(docIDPrefix + docID)
}

// uuid5 returns the RFC 9562 version-5 UUID of name in the URL namespace,
// in canonical lower-case form.
func uuid5(name string) string {
	h := sha1.New()
	h.Write(namespaceURL[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], u[10:])
	return string(buf[:])
}
