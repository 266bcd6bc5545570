package ndjson

import (
	"net/netip"
	"sync"
	"time"

	"github.com/mnemo/mnemo/hearth/auth"
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
	o        gateOptions
	throttle *auth.Throttle // the failure records, shared with other doors when given

	mu      sync.Mutex
	pending map[netip.Addr]int // slots held per source; only sources holding some
	total   int                // slots held in all
	suspect int                // slots held by sources that had failed when admitted
	refused uint64
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
	return newGateWith(o, nil)
}

// newGateWith is newGate over a throttle shared with other doors; nil
// makes one from o.
func newGateWith(o gateOptions, t *auth.Throttle) *gate {
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
	if t == nil {
		t = auth.NewThrottle(auth.ThrottleOptions{BaseDelay: o.BaseDelay, MaxDelay: o.MaxDelay, Forget: o.Forget, MaxSources: o.MaxSources, Now: o.Now})
	}
	to := t.Options()
	o.BaseDelay, o.MaxDelay, o.Forget, o.MaxSources, o.Now = to.BaseDelay, to.MaxDelay, to.Forget, to.MaxSources, to.Now
	return &gate{o: o, throttle: t, pending: make(map[netip.Addr]int)}
}

// sourceKey is the source ip counts as: an IPv4 address or an IPv6 /64.
func sourceKey(ip netip.Addr) netip.Addr { return auth.SourceKey(ip) }

// admit reserves a slot for an unauthenticated connection from ip. ok is
// false when the source's budget (PerSource) or the total one is spent,
// or when a source with a recent failure would take a reserved slot: the
// door then refuses the connection at once, with an error line, without
// reading anything. release must be called when the connection
// authenticates or closes; calling it again is harmless. A refusal's
// release does nothing.
func (g *gate) admit(ip netip.Addr) (release func(), ok bool) {
	key := sourceKey(ip)
	suspect := g.throttle.Suspect(ip)
	g.mu.Lock()
	defer g.mu.Unlock()
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
// a new connection from ip (auth.Throttle.Wait).
func (g *gate) penalty(ip netip.Addr) time.Duration { return g.throttle.Wait(ip) }

// failed records a failed handshake (wrong token, garbage, timeout) from
// ip and returns how long the door waits before answering it
// (auth.Throttle.Failed).
func (g *gate) failed(ip netip.Addr) time.Duration { return g.throttle.Failed(ip) }

// succeeded clears ip's failures: the owner typed the token right.
func (g *gate) succeeded(ip netip.Addr) { g.throttle.Succeeded(ip) }

// stats returns the gate's counters.
func (g *gate) stats() gateStats {
	throttled, sources := g.throttle.Stats()
	g.mu.Lock()
	defer g.mu.Unlock()
	return gateStats{Pending: g.total, Refused: g.refused, Throttled: throttled, Sources: sources}
}
