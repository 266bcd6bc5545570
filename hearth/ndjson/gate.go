package ndjson

import (
	"net/netip"
	"sync"
	"time"
)

// gateOptions bound the connections that have not authenticated yet and
// slow down sources that fail to. Zero values take the defaults.
type gateOptions struct {
	PerSource int // unauthenticated connections at once from one source; default 4
	Total     int // unauthenticated connections at once in all; default 32
	// Reserve is how many of Total only sources in good standing (no
	// failure within Forget) may take, so that sources that keep failing
	// cannot fill the gate by themselves; default Total/4, negative for
	// none, at most Total-1.
	Reserve    int
	BaseDelay  time.Duration    // delay after the first failed handshake from a source; default 250ms
	MaxDelay   time.Duration    // cap of the growing delay; default 10s, at least BaseDelay
	Forget     time.Duration    // a source with no failure for this long starts over; default 10m, at least MaxDelay
	MaxSources int              // failure records kept (oldest forgotten first); default 4096
	Now        func() time.Time // default time.Now
}

// gateStats are the gate's counters, for health.
type gateStats struct {
	Pending   int    // unauthenticated connections holding a slot now
	Refused   uint64 // connections refused because a budget was spent
	Throttled uint64 // failed handshakes, each answered after a delay
	Sources   int    // sources with a failure record
}

// gate admits the connections that have not authenticated yet. The door
// asks it before it reads a connection's handshake and tells it how the
// handshake went. Authenticated clients never count against it: the door
// keeps a separate cap for them, so connections that never authenticate
// cannot lock the owner out of that one.
//
// The door's accept loop uses it so, for a connection from ip:
//
//	release, ok := g.admit(ip)
//	if !ok {
//		// refuse with one error line, without reading anything; close
//	}
//	defer release()
//	// wait g.penalty(ip), then read the handshake under its timeout
//	// on failure (wrong token, garbage, timeout): wait g.failed(ip),
//	//   then answer the error and close
//	// on success: g.succeeded(ip); release(); count the client against
//	//   the authenticated cap
//
// Both waits are done by the door while the connection still holds its
// slot. A source therefore has at most PerSource handshakes in flight,
// each costing it the delay its failures earned; closing a connection
// early or opening more gains it nothing (penalty makes a new connection
// wait out what its predecessors left), so an attacker cannot fan out:
// wrong tokens are answered at about PerSource per MaxDelay per source.
// Slots are also bounded in all (Total), and part of them (Reserve) are
// kept for sources with no recent failure: a silent connection's timeout
// counts as a failure, so sources that keep connecting and saying
// nothing are confined to the rest.
//
// A source is an IPv4 address, or the /64 prefix of an IPv6 address:
// one host or one LAN gets a whole /64 (SLAAC, privacy addresses), so
// keying IPv6 by address would let anyone rotate through 2^64 sources,
// while sharing a budget with one's own LAN costs a personal daemon
// nothing. (Who holds a /56 or a /48 still has hundreds or thousands of
// sources; Total, Reserve and MaxSources bound what they can do.)
// IPv4-mapped IPv6 addresses are their IPv4 address; zones are ignored;
// the zero Addr (a peer the door could not place) is one source.
//
// Failure records are at most MaxSources, the oldest forgotten first,
// and expire Forget after their latest failure. The gate has no
// goroutine: expired records are dropped when met. All methods are safe
// for concurrent use.
type gate struct {
	o gateOptions

	mu      sync.Mutex
	pending map[netip.Addr]int // slots held per source; only sources holding some
	total   int                // slots held in all
	suspect int                // slots held by sources that had failed when admitted
	records map[netip.Addr]*failures
	// oldest and newest end the records' list, ordered by latest failure.
	oldest, newest *failures
	refused        uint64
	throttled      uint64
}

// failures is what the gate remembers of a source that failed.
type failures struct {
	key        netip.Addr
	n          int       // failures, none more than Forget after the one before
	last       time.Time // the latest failure
	until      time.Time // the source's next handshake is not read before then
	prev, next *failures // the records of an older and a newer failure
}

// slot is one admitted connection's hold on the gate.
type slot struct {
	g       *gate
	key     netip.Addr
	suspect bool
	done    bool // guarded by g.mu
}

// noRelease is the release of a refused connection.
func noRelease() {}

func newGate(o gateOptions) *gate {
	if o.PerSource <= 0 {
		o.PerSource = 4
	}
	if o.Total <= 0 {
		o.Total = 32
	}
	switch {
	case o.Reserve == 0:
		o.Reserve = o.Total / 4
	case o.Reserve < 0:
		o.Reserve = 0
	}
	o.Reserve = min(o.Reserve, o.Total-1)
	if o.BaseDelay <= 0 {
		o.BaseDelay = 250 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 10 * time.Second
	}
	o.MaxDelay = max(o.MaxDelay, o.BaseDelay)
	if o.Forget <= 0 {
		o.Forget = 10 * time.Minute
	}
	// A record must outlive the wait it imposes.
	o.Forget = max(o.Forget, o.MaxDelay)
	if o.MaxSources <= 0 {
		o.MaxSources = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &gate{o: o, pending: make(map[netip.Addr]int), records: make(map[netip.Addr]*failures)}
}

// sourceKey is the source ip counts as: an IPv4 address or an IPv6 /64.
func sourceKey(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64) // cannot fail for 64 bits of IPv6; drops the zone
		return p.Addr()
	}
	return ip
}

// admit reserves a slot for an unauthenticated connection from ip. ok is
// false when the source's budget (PerSource) or the total one is spent,
// or when a source with a recent failure would take a reserved slot: the
// door then refuses the connection at once, with an error line, without
// reading anything. release must be called when the connection
// authenticates or closes; calling it again is harmless. A refusal's
// release does nothing.
func (g *gate) admit(ip netip.Addr) (release func(), ok bool) {
	key := sourceKey(ip)
	g.mu.Lock()
	defer g.mu.Unlock()
	suspect := false
	if g.records[key] != nil { // a clock read only for a source that failed
		suspect = g.recordLocked(key, g.o.Now()) != nil
	}
	if g.pending[key] >= g.o.PerSource || g.total >= g.o.Total ||
		suspect && g.suspect >= g.o.Total-g.o.Reserve {
		g.refused++
		return noRelease, false
	}
	g.pending[key]++
	g.total++
	if suspect {
		g.suspect++
	}
	s := &slot{g: g, key: key, suspect: suspect}
	return s.release, true
}

// release frees the slot, once.
func (s *slot) release() {
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if n := g.pending[s.key] - 1; n > 0 {
		g.pending[s.key] = n
	} else {
		delete(g.pending, s.key)
	}
	g.total--
	if s.suspect {
		g.suspect--
	}
}

// penalty is how long the door must wait before reading the handshake of
// a new connection from ip: what is left of the delay its latest failure
// earned, so that reconnecting instead of waiting for the answer gains
// nothing; 0 for a source in good standing.
func (g *gate) penalty(ip netip.Addr) time.Duration {
	key := sourceKey(ip)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.records[key] == nil {
		return 0
	}
	now := g.o.Now()
	r := g.recordLocked(key, now)
	if r == nil {
		return 0
	}
	return max(r.until.Sub(now), 0)
}

// failed records a failed handshake (wrong token, garbage, timeout) from
// ip and returns how long the door waits before answering it: BaseDelay,
// doubled for each earlier failure no more than Forget before the next,
// capped at MaxDelay. New connections from ip wait out the same delay
// (penalty).
func (g *gate) failed(ip netip.Addr) time.Duration {
	key := sourceKey(ip)
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.o.Now()
	g.throttled++
	r := g.recordLocked(key, now)
	switch {
	case r != nil:
		g.unlinkLocked(r)
	case len(g.records) >= g.o.MaxSources:
		// Forget the oldest failure (the first to expire, if any has)
		// and reuse its record: a flood from fresh sources costs no
		// memory beyond MaxSources.
		r = g.oldest
		g.unlinkLocked(r)
		delete(g.records, r.key)
		*r = failures{key: key}
		g.records[key] = r
	default:
		r = &failures{key: key}
		g.records[key] = r
	}
	g.pushLocked(r)
	r.n++
	r.last = now
	d := g.delay(r.n)
	r.until = now.Add(d) // never earlier than before: d only grows with n
	return d
}

// succeeded clears ip's failures: the owner typed the token right.
func (g *gate) succeeded(ip netip.Addr) {
	key := sourceKey(ip)
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.records[key]; r != nil {
		g.dropLocked(r)
	}
}

// stats returns the gate's counters.
func (g *gate) stats() gateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(g.o.Now())
	return gateStats{Pending: g.total, Refused: g.refused, Throttled: g.throttled, Sources: len(g.records)}
}

// delay is the wait the nth failure in a row earns.
func (g *gate) delay(n int) time.Duration {
	d := g.o.BaseDelay
	for range n - 1 {
		if d >= g.o.MaxDelay/2 {
			return g.o.MaxDelay
		}
		d *= 2
	}
	return min(d, g.o.MaxDelay)
}

// recordLocked is key's failure record, nil when it has none or it has
// expired (then it is dropped).
func (g *gate) recordLocked(key netip.Addr, now time.Time) *failures {
	r := g.records[key]
	if r != nil && g.expired(r, now) {
		g.dropLocked(r)
		return nil
	}
	return r
}

func (g *gate) expired(r *failures, now time.Time) bool {
	return now.Sub(r.last) >= g.o.Forget
}

// expireLocked drops the expired records from the oldest end.
func (g *gate) expireLocked(now time.Time) {
	for g.oldest != nil && g.expired(g.oldest, now) {
		g.dropLocked(g.oldest)
	}
}

func (g *gate) dropLocked(r *failures) {
	g.unlinkLocked(r)
	delete(g.records, r.key)
}

// pushLocked appends r to the list as the newest failure.
func (g *gate) pushLocked(r *failures) {
	r.prev, r.next = g.newest, nil
	if g.newest != nil {
		g.newest.next = r
	} else {
		g.oldest = r
	}
	g.newest = r
}

func (g *gate) unlinkLocked(r *failures) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		g.oldest = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		g.newest = r.prev
	}
	r.prev, r.next = nil, nil
}
