package auth

import (
	"net/netip"
	"sync"
	"time"
)

// ThrottleOptions configure a Throttle. Zero values take the defaults.
type ThrottleOptions struct {
	BaseDelay  time.Duration    // delay after a source's first failure; default 250ms
	MaxDelay   time.Duration    // cap of the growing delay; default 10s, at least BaseDelay
	Forget     time.Duration    // a source with no failure for this long starts over; default 10m, at least MaxDelay
	MaxSources int              // failure records kept (oldest forgotten first); default 4096
	Now        func() time.Time // default time.Now
}

func (o *ThrottleOptions) setDefaults() {
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
}

// Throttle slows down the sources whose credentials fail, for every door:
// each failure from a source earns it a delay (BaseDelay, doubled for
// each earlier failure no more than Forget before the next, capped at
// MaxDelay) that the door waits before answering the failure (Failed)
// and before reading the next attempt from that source (Wait), so that
// guessing gains nothing by speed or by opening more connections. A
// success clears the source (Succeeded).
//
// A source is an IPv4 address, or the /64 prefix of an IPv6 address
// (SourceKey). Failure records are at most MaxSources, the oldest
// forgotten first, and expire Forget after their latest failure. The
// Throttle has no goroutine: expired records are dropped when met. All
// methods are safe for concurrent use.
type Throttle struct {
	o ThrottleOptions

	mu      sync.Mutex
	records map[netip.Addr]*failures
	// oldest and newest end the records' list, ordered by latest failure.
	oldest, newest *failures
	throttled      uint64
}

// failures is what the throttle remembers of a source that failed.
type failures struct {
	key        netip.Addr
	n          int       // failures, none more than Forget after the one before
	last       time.Time // the latest failure
	until      time.Time // the source's next attempt is not read before then
	prev, next *failures // the records of an older and a newer failure
}

// NewThrottle returns a Throttle.
func NewThrottle(o ThrottleOptions) *Throttle {
	o.setDefaults()
	return &Throttle{o: o, records: make(map[netip.Addr]*failures)}
}

// Options returns the options in force, defaults filled in.
func (t *Throttle) Options() ThrottleOptions { return t.o }

// SourceKey is the source ip counts as: an IPv4 address or an IPv6 /64.
// One host or one LAN gets a whole /64 (SLAAC, privacy addresses), so
// keying IPv6 by address would let anyone rotate through 2^64 sources.
// IPv4-mapped addresses are their IPv4 address; zones are ignored; the
// zero Addr (a peer a door could not place) is one source.
func SourceKey(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64) // cannot fail for 64 bits of IPv6; drops the zone
		return p.Addr()
	}
	return ip
}

// Suspect reports whether ip's source failed within Forget.
func (t *Throttle) Suspect(ip netip.Addr) bool {
	key := SourceKey(ip)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.records[key] == nil { // a clock read only for a source that failed
		return false
	}
	return t.recordLocked(key, t.o.Now()) != nil
}

// Wait is how long a door must wait before reading a new attempt from
// ip: what is left of the delay its latest failure earned, so that
// reconnecting instead of waiting for the answer gains nothing; 0 for a
// source in good standing.
func (t *Throttle) Wait(ip netip.Addr) time.Duration {
	key := SourceKey(ip)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.records[key] == nil {
		return 0
	}
	now := t.o.Now()
	r := t.recordLocked(key, now)
	if r == nil {
		return 0
	}
	return max(r.until.Sub(now), 0)
}

// Failed records a failed attempt (wrong credential, garbage, timeout)
// from ip and returns how long the door waits before answering it. New
// attempts from ip wait out the same delay (Wait).
func (t *Throttle) Failed(ip netip.Addr) time.Duration {
	key := SourceKey(ip)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.o.Now()
	t.throttled++
	r := t.recordLocked(key, now)
	switch {
	case r != nil:
		t.unlinkLocked(r)
	case len(t.records) >= t.o.MaxSources:
		// Forget the oldest failure (the first to expire, if any has)
		// and reuse its record: a flood from fresh sources costs no
		// memory beyond MaxSources.
		r = t.oldest
		t.unlinkLocked(r)
		delete(t.records, r.key)
		*r = failures{key: key}
		t.records[key] = r
	default:
		r = &failures{key: key}
		t.records[key] = r
	}
	t.pushLocked(r)
	r.n++
	r.last = now
	d := t.delay(r.n)
	r.until = now.Add(d) // never earlier than before: d only grows with n
	return d
}

// Succeeded clears ip's failures: the credential was right.
func (t *Throttle) Succeeded(ip netip.Addr) {
	key := SourceKey(ip)
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.records[key]; r != nil {
		t.dropLocked(r)
	}
}

// Stats returns the failures counted so far and the sources with a
// failure record now.
func (t *Throttle) Stats() (throttled uint64, sources int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(t.o.Now())
	return t.throttled, len(t.records)
}

// delay is the wait the nth failure in a row earns.
func (t *Throttle) delay(n int) time.Duration {
	d := t.o.BaseDelay
	for range n - 1 {
		if d >= t.o.MaxDelay/2 {
			return t.o.MaxDelay
		}
		d *= 2
	}
	return min(d, t.o.MaxDelay)
}

// recordLocked is key's failure record, nil when it has none or it has
// expired (then it is dropped).
func (t *Throttle) recordLocked(key netip.Addr, now time.Time) *failures {
	r := t.records[key]
	if r != nil && t.expired(r, now) {
		t.dropLocked(r)
		return nil
	}
	return r
}

func (t *Throttle) expired(r *failures, now time.Time) bool {
	return now.Sub(r.last) >= t.o.Forget
}

// expireLocked drops the expired records from the oldest end.
func (t *Throttle) expireLocked(now time.Time) {
	for t.oldest != nil && t.expired(t.oldest, now) {
		t.dropLocked(t.oldest)
	}
}

func (t *Throttle) dropLocked(r *failures) {
	t.unlinkLocked(r)
	delete(t.records, r.key)
}

// pushLocked appends r to the list as the newest failure.
func (t *Throttle) pushLocked(r *failures) {
	r.prev, r.next = t.newest, nil
	if t.newest != nil {
		t.newest.next = r
	} else {
		t.oldest = r
	}
	t.newest = r
}

func (t *Throttle) unlinkLocked(r *failures) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		t.oldest = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		t.newest = r.prev
	}
	r.prev, r.next = nil, nil
}
