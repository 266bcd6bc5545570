package embedded

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/memory/recall"
)

// op is one write that makes exactly one record.
type op struct {
	upsert *recall.Doc
	vec    []float32
	del    string
	key    string
	value  string
}

const smallDim = 4

func smallOps() []op {
	ts := time.Date(2024, 5, 7, 10, 0, 0, 0, time.UTC)
	d := func(id, text string, vec ...float32) op {
		return op{upsert: &recall.Doc{ID: id, Kind: recall.KindTurn, Role: "user", Mode: "text", Channel: "chat", Session: "s",
			Text: text, TS: ts, Salience: 0.25}, vec: vec}
	}
	return []op{
		d("a", "alpha coffee", 1, 0, 0, 0),
		d("b", "beta tea"),
		{key: "cursor", value: "1"},
		d("c", "gamma coffee ☕", 0, 1, 0, 0),
		{del: "b"},
		d("a", "alpha replaced", 0, 0, 1, 0),
		{key: "cursor", value: "2"},
		d("d", ""),
	}
}

// model is what an index should hold after some ops.
type model struct {
	docs map[string]recall.Doc
	meta map[string]string
}

func modelAfter(ops []op) model {
	m := model{docs: map[string]recall.Doc{}, meta: map[string]string{}}
	for _, o := range ops {
		switch {
		case o.upsert != nil:
			m.docs[o.upsert.ID] = *o.upsert
		case o.del != "":
			delete(m.docs, o.del)
		default:
			m.meta[o.key] = o.value
		}
	}
	return m
}

// writeOps applies ops to a new index in dir and returns the file's bytes
// and the offset at which each record ends.
func writeOps(t testing.TB, dir string, ops []op) ([]byte, []int64) {
	t.Helper()
	ix := openT(t, dir, smallDim)
	ctx := context.Background()
	var ends []int64
	for _, o := range ops {
		var err error
		switch {
		case o.upsert != nil:
			var vecs [][]float32
			if o.vec != nil {
				vecs = [][]float32{o.vec}
			}
			err = ix.Upsert(ctx, []recall.Doc{*o.upsert}, vecs)
		case o.del != "":
			err = ix.Delete(ctx, []string{o.del})
		default:
			err = ix.SetMeta(ctx, o.key, o.value)
		}
		if err != nil {
			t.Fatalf("op %+v: %v", o, err)
		}
		ends = append(ends, ix.Stats().FileBytes)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != ends[len(ends)-1] {
		t.Fatalf("file is %d bytes, Stats said %d", len(b), ends[len(ends)-1])
	}
	return b, ends
}

// checkModel compares an index with a model.
func checkModel(t *testing.T, ix *Index, want model, allIDs []string) {
	t.Helper()
	ctx := context.Background()
	if n, err := ix.Count(ctx); err != nil || n != len(want.docs) {
		t.Errorf("Count = %d, %v; want %d", n, err, len(want.docs))
	}
	got, err := ix.Docs(ctx, allIDs)
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	var wantDocs []recall.Doc
	for _, id := range allIDs {
		if d, ok := want.docs[id]; ok {
			wantDocs = append(wantDocs, d)
		}
	}
	if diff := cmp.Diff(wantDocs, got, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("Docs mismatch (-want +got):\n%s", diff)
	}
	for _, k := range []string{"cursor"} {
		v, ok, err := ix.Meta(ctx, k)
		w, wok := want.meta[k]
		if err != nil || ok != wok || v != w {
			t.Errorf("Meta(%q) = %q, %v, %v; want %q, %v", k, v, ok, err, w, wok)
		}
	}
	// Every stored doc is found by its own words.
	for id, d := range want.docs {
		if len(recall.Tokens(d.Text)) == 0 {
			continue
		}
		res, err := ix.Lexical(ctx, d.Text, 10, recall.Filter{})
		if err != nil || !slices.ContainsFunc(res, func(s recall.Scored) bool { return s.ID == id }) {
			t.Errorf("Lexical(%q) = %v, %v; want %s among them", d.Text, res, err, id)
		}
	}
}

func allIDs(ops []op) []string {
	var ids []string
	for _, o := range ops {
		if o.upsert != nil && !slices.Contains(ids, o.upsert.ID) {
			ids = append(ids, o.upsert.ID)
		}
	}
	return ids
}

func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTruncated cuts the file at every offset: Open either fails with
// ErrCorrupt (only when the header is cut) or keeps exactly the records
// before the cut, and the index then takes writes and reopens.
func TestTruncated(t *testing.T) {
	ops := smallOps()
	full, ends := writeOps(t, t.TempDir(), ops)
	ids := allIDs(ops)
	for off := 0; off <= len(full); off++ {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			dir := writeFile(t, full[:off])
			ix, err := Open(dir, Options{Dim: smallDim})
			if off < headerSize {
				if !IsCorrupt(err) {
					t.Fatalf("Open(cut at %d) = %v, want ErrCorrupt", off, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(cut at %d): %v", off, err)
			}
			kept := 0
			for kept < len(ends) && ends[kept] <= int64(off) {
				kept++
			}
			checkModel(t, ix, modelAfter(ops[:kept]), ids)
			// The torn tail is gone: new writes land after the kept records.
			extra := recall.Doc{ID: "extra", Kind: recall.KindTurn, Text: "after the tear", TS: time.UnixMilli(0)}
			if err := ix.Upsert(context.Background(), []recall.Doc{extra}, nil); err != nil {
				t.Fatalf("Upsert after the tear: %v", err)
			}
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			ix = openT(t, dir, smallDim)
			defer ix.Close()
			want := modelAfter(append(slices.Clone(ops[:kept]), op{upsert: &extra}))
			checkModel(t, ix, want, append(ids, "extra"))
		})
	}
}

// TestFlipped flips each byte of the file in turn: Open must report
// ErrCorrupt every time, since every byte is covered by a checksum.
func TestFlipped(t *testing.T) {
	full, _ := writeOps(t, t.TempDir(), smallOps())
	for off := range full {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			b := slices.Clone(full)
			b[off] ^= mask
			ix, err := Open(writeFile(t, b), Options{Dim: smallDim})
			if !IsCorrupt(err) {
				t.Errorf("Open(byte %d ^ %#x) = %v, want ErrCorrupt", off, mask, err)
			}
			if err == nil {
				ix.Close()
			}
		}
	}
}

func TestOpenCorruptCases(t *testing.T) {
	full, ends := writeOps(t, t.TempDir(), smallOps())
	rec := func(payload []byte) []byte { return appendRecord(nil, payload) }
	tests := []struct {
		name string
		file []byte
	}{
		{"empty file", nil},
		{"short header", full[:headerSize-1]},
		{"bad magic", append([]byte("notmnemo"), full[8:]...)},
		{"unknown version", func() []byte {
			h := encodeHeader(smallDim)
			h[8] = 9
			return h
		}()},
		{"version 1 (before Context)", func() []byte {
			h := encodeHeader(smallDim)
			binary.LittleEndian.PutUint16(h[8:], 1)
			binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], castagnoli))
			return append(h, full[headerSize:]...)
		}()},
		{"record of unknown type", append(slices.Clone(full), rec([]byte{42})...)},
		{"record with trailing bytes", append(slices.Clone(full), rec(append(encodeDelete(nil, "a"), 0))...)},
		{"record with short string", append(slices.Clone(full), rec([]byte{recDelete, 5, 'a'})...)},
		{"vector on a lexical index", append(encodeHeader(0), full[headerSize:ends[0]]...)},
		{"zero-length record", append(slices.Clone(full), rec(nil)...)},
		{"garbage after records", append(slices.Clone(full), bytes.Repeat([]byte{0xAB}, 40)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dim := smallDim
			if tt.name == "vector on a lexical index" {
				dim = 0
			}
			ix, err := Open(writeFile(t, tt.file), Options{Dim: dim})
			if !IsCorrupt(err) {
				t.Errorf("Open = %v, want ErrCorrupt", err)
			}
			if err == nil {
				ix.Close()
			}
		})
	}
}

func TestMissingFileIsEmptyIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index", "nested")
	ix := openT(t, dir, smallDim)
	defer ix.Close()
	if n, err := ix.Count(context.Background()); err != nil || n != 0 {
		t.Errorf("Count = %d, %v; want 0", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Errorf("index file not created: %v", err)
	}
}

func TestStaleTempFileRemoved(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, FileName+".tmp")
	if err := os.WriteFile(tmp, []byte("half a compaction"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix := openT(t, dir, smallDim)
	defer ix.Close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	ix := openT(t, dir, smallDim)
	ix.compactMin = 1 << 10
	ctx := context.Background()
	var ops []op
	for round := range 50 {
		for i := range 10 {
			d := recall.Doc{ID: fmt.Sprintf("d%d", i), Kind: recall.KindTurn, Role: "user", Session: "s",
				Text: fmt.Sprintf("round %d document %d words", round, i), TS: time.UnixMilli(int64(round*1000 + i))}
			o := op{upsert: &d, vec: []float32{1, float32(round), float32(i), 0}}
			ops = append(ops, o)
			if err := ix.Upsert(ctx, []recall.Doc{d}, [][]float32{o.vec}); err != nil {
				t.Fatal(err)
			}
		}
		ops = append(ops, op{key: "cursor", value: fmt.Sprint(round)})
		if err := ix.SetMeta(ctx, "cursor", fmt.Sprint(round)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Delete(ctx, []string{"d3"}); err != nil {
		t.Fatal(err)
	}
	ops = append(ops, op{del: "d3"})
	st := ix.Stats()
	if st.Slots > 3*st.Docs {
		t.Errorf("after 500 replacements: %d slots for %d docs, want compaction to have dropped dead slots", st.Slots, st.Docs)
	}
	if st.FileBytes > 8<<10 {
		t.Errorf("file is %d bytes, want compaction to keep it small", st.FileBytes)
	}
	want := modelAfter(ops)
	checkModel(t, ix, want, allIDs(ops))
	res, err := ix.Vector(ctx, []float32{1, 49, 9, 0}, 1, recall.Filter{})
	if err != nil || len(res) != 1 || res[0].ID != "d9" {
		t.Errorf("Vector after compaction = %v, %v; want d9", res, err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openT(t, dir, smallDim)
	defer ix.Close()
	checkModel(t, ix, want, allIDs(ops))
}

func TestRecordRoundTrip(t *testing.T) {
	q := quantized{min: -0.5, step: 0.004, codes: []byte{0, 1, 254, 255}}
	tests := []record{
		{typ: recUpsert, id: "id", kind: "turn", role: "user", mode: "voice", chann: "voice", sess: "s", text: "héllo\x00", ts: -62135596800000, sal: 1},
		{typ: recUpsert, id: "", text: "", ts: 1 << 50, vec: &q},
		{typ: recDelete, id: "gone"},
		{typ: recMeta, id: "key", text: ""},
	}
	for _, want := range tests {
		var payload []byte
		switch want.typ {
		case recUpsert:
			payload = encodeUpsert(nil, &want)
		case recDelete:
			payload = encodeDelete(nil, want.id)
		case recMeta:
			payload = encodeMeta(nil, want.id, want.text)
		}
		framed := appendRecord(nil, payload)
		buf, n, err := readRecord(bufio.NewReader(bytes.NewReader(framed)), int64(len(framed)), nil)
		if err != nil || n != int64(len(framed)) {
			t.Fatalf("readRecord = %d, %v; want %d, nil", n, err, len(framed))
		}
		var got record
		var gq quantized
		if err := decodePayload(buf, len(q.codes), &got, &gq); err != nil {
			t.Fatalf("decodePayload: %v", err)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(record{}, quantized{})); diff != "" {
			t.Errorf("record mismatch (-want +got):\n%s", diff)
		}
	}
	// A clean end and a short header.
	if _, _, err := readRecord(bufio.NewReader(bytes.NewReader(nil)), 0, nil); err != io.EOF {
		t.Errorf("readRecord at the end = %v, want io.EOF", err)
	}
	if _, _, err := readRecord(bufio.NewReader(bytes.NewReader([]byte{1, 2})), 2, nil); !errors.Is(err, errTorn) {
		t.Errorf("readRecord of 2 bytes = %v, want errTorn", err)
	}
}

// FuzzOpen opens arbitrary bytes as an index file: never a panic; either
// an error or an index that works and survives a reopen.
func FuzzOpen(f *testing.F) {
	full, ends := writeOps(f, f.TempDir(), smallOps())
	f.Add(full)
	f.Add(full[:ends[2]+5])
	f.Add(full[:headerSize])
	f.Add([]byte{})
	f.Add(append(slices.Clone(full), appendRecord(nil, []byte{recMeta, 1, 'k'})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := writeFile(t, b)
		ix, err := Open(dir, Options{Dim: smallDim})
		if err != nil {
			return
		}
		ctx := context.Background()
		n, err := ix.Count(ctx)
		if err != nil {
			t.Fatalf("Count: %v", err)
		}
		if _, err := ix.Lexical(ctx, "alpha coffee", 10, recall.Filter{}); err != nil {
			t.Fatalf("Lexical: %v", err)
		}
		res, err := ix.Vector(ctx, []float32{1, 0, 0, 0}, 10, recall.Filter{})
		if err != nil {
			t.Fatalf("Vector: %v", err)
		}
		if _, err := ix.Docs(ctx, []string{"a", "b", "c"}); err != nil {
			t.Fatalf("Docs: %v", err)
		}
		for _, r := range res {
			if r.Score != r.Score || r.Score > 1.01 || r.Score < -1.01 {
				t.Fatalf("Vector score %v out of [-1, 1]", r.Score)
			}
		}
		if err := ix.Upsert(ctx, []recall.Doc{{ID: "fuzz", Text: "fuzz"}}, [][]float32{{0, 1, 0, 0}}); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		if err := ix.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ix, err = Open(dir, Options{Dim: smallDim})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer ix.Close()
		if got, _ := ix.Count(ctx); got < 1 || got > n+1 {
			t.Fatalf("Count after reopen = %d, want in [1, %d]", got, n+1)
		}
	})
}

// FuzzDecodePayload decodes arbitrary payloads (past the checksums that
// keep FuzzOpen from reaching the decoder): never a panic, and whatever
// decodes re-encodes to the same bytes.
func FuzzDecodePayload(f *testing.F) {
	q := quantized{min: -0.25, step: 0.002, codes: []byte{1, 2, 3, 4}}
	f.Add(encodeUpsert(nil, &record{typ: recUpsert, id: "a", kind: "turn", text: "hello", ts: 1715864645000, sal: 0.5, vec: &q}))
	f.Add(encodeUpsert(nil, &record{typ: recUpsert, id: "b"}))
	f.Add(encodeDelete(nil, "a"))
	f.Add(encodeMeta(nil, "cursor", "01J"))
	f.Add([]byte{recUpsert, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F})
	f.Fuzz(func(t *testing.T, payload []byte) {
		var r record
		var q quantized
		if err := decodePayload(payload, smallDim, &r, &q); err != nil {
			if !IsCorrupt(err) {
				t.Fatalf("decodePayload error %v is not ErrCorrupt", err)
			}
			return
		}
		var again []byte
		switch r.typ {
		case recUpsert:
			again = encodeUpsert(nil, &r)
		case recDelete:
			again = encodeDelete(nil, r.id)
		case recMeta:
			again = encodeMeta(nil, r.id, r.text)
		}
		// Varints have one canonical encoding here except for padding,
		// which the decoder accepts; compare by decoding again.
		var r2 record
		var q2 quantized
		if err := decodePayload(again, smallDim, &r2, &q2); err != nil {
			t.Fatalf("re-encoded payload does not decode: %v", err)
		}
		if diff := cmp.Diff(r, r2, cmp.AllowUnexported(record{}, quantized{})); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}
