package embedded

import (
	"fmt"
	"testing"
)

// memLog is an index file in memory, for tests of the state alone.
type memLog struct{ b []byte }

func newMemState(dim int) (*state, *memLog) {
	l := &memLog{b: make([]byte, headerSize)}
	st := newState(dim)
	st.read = func(off uint64, n uint32) ([]byte, error) {
		if off+uint64(n) > uint64(len(l.b)) {
			return nil, fmt.Errorf("read %d at %d past %d", n, off, len(l.b))
		}
		return checkRecord(append([]byte(nil), l.b[off:off+uint64(n)]...))
	}
	return st, l
}

// put appends p's record to the log and applies it to st.
func (l *memLog) put(t testing.TB, st *state, p *prepared) {
	t.Helper()
	off := uint64(len(l.b))
	l.b = appendRecord(l.b, encodeUpsert(nil, &p.rec))
	if _, err := st.put(p, off, uint32(uint64(len(l.b))-off)); err != nil {
		t.Fatal(err)
	}
}
