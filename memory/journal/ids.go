package journal

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oklog/ulid/v2"
)

var errIDSpace = errors.New("no ULID left after the last one")

// idGen makes ULIDs that strictly increase, even within one millisecond and
// when the clock goes back: within the millisecond of the last ID (or before
// it) the next ID is the last one plus one. It is owned by the writer
// goroutine and needs no lock.
type idGen struct {
	last    ulid.ULID // zero until the first ID, or the journal's last ID
	entropy io.Reader // nil: crypto/rand.Reader
}

func (g *idGen) next(now time.Time) (ulid.ULID, error) {
	ms := ulid.Timestamp(now)
	if now.Before(time.UnixMilli(0)) {
		ms = 0
	}
	var id ulid.ULID
	if !g.last.IsZero() && ms <= g.last.Time() {
		id = g.last
		if increment(id[6:]) {
			g.last = id
			return id, nil
		}
		// The entropy of this millisecond is used up: move to the next.
		ms = g.last.Time() + 1
	}
	if err := id.SetTime(ms); err != nil {
		return ulid.ULID{}, errIDSpace
	}
	r := g.entropy
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, id[6:]); err != nil {
		return ulid.ULID{}, fmt.Errorf("id entropy: %w", err)
	}
	g.last = id
	return id, nil
}

// increment adds one to the big-endian number b, reporting false when it
// overflows.
func increment(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}

// parseID parses a record ID.
func parseID(s string) (ulid.ULID, error) {
	return ulid.ParseStrict(s)
}

// idTime is the time encoded in a record id, if it is a ULID.
func idTime(id string) (time.Time, bool) {
	u, err := parseID(id)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()), true
}
