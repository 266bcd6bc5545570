package auth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// LimiterOptions configure a Limiter. Zero values take the defaults.
type LimiterOptions struct {
	// PerMinute is how many requests an identity of each actor type may
	// make a minute; an actor type absent or at 0 is not limited. The
	// whole minute's allowance may be spent at once; it then comes back
	// evenly over the minute (a token bucket).
	PerMinute map[Actor]int
	// MaxSubjects bounds the identities remembered; default 4096. When
	// full, the identities whose allowance is whole again are forgotten
	// (that loses nothing), then the others if need be.
	MaxSubjects int
	Now         func() time.Time // default time.Now
}

// DefaultRateLimits are the requests a minute each actor type may make
// unless the configuration says otherwise: the owner, hearth's own agents
// and the curator are not limited; the parties the owner let in are.
func DefaultRateLimits() map[Actor]int {
	return map[Actor]int{
		ActorCollaborator:  120,
		ActorExternalAgent: 60,
		ActorService:       300,
	}
}

// Limiter is the per-identity request rate limit every door shares
// (seed 002: 429 with retry_after_ms). It counts an identity's requests,
// whatever door or address they come through: the subject, not the
// source (failed credentials are the Throttle's, per source). All methods
// are safe for concurrent use; it has no goroutine.
type Limiter struct {
	o LimiterOptions

	mu       sync.Mutex
	subjects map[limitKey]*rate.Limiter
	limited  uint64
}

type limitKey struct {
	actor   Actor
	subject string
}

// NewLimiter returns a Limiter.
func NewLimiter(o LimiterOptions) *Limiter {
	if o.MaxSubjects <= 0 {
		o.MaxSubjects = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	per := make(map[Actor]int, len(o.PerMinute))
	for a, n := range o.PerMinute {
		if n > 0 {
			per[a] = n
		}
	}
	o.PerMinute = per
	return &Limiter{o: o, subjects: make(map[limitKey]*rate.Limiter)}
}

// Allow takes one request of id from its allowance: 0 when it may go
// ahead, else how long it must wait before its next request would be
// allowed, in whole milliseconds (nothing is taken then). A nil Limiter
// allows everything.
func (l *Limiter) Allow(id Identity) time.Duration {
	if l == nil {
		return 0
	}
	n := l.o.PerMinute[id.Actor]
	if n == 0 {
		return 0 // no clock read, no lock: the owner's path costs nothing
	}
	key := limitKey{id.Actor, id.Subject}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.o.Now()
	lim := l.subjects[key]
	if lim == nil {
		l.makeRoomLocked(now)
		lim = rate.NewLimiter(rate.Limit(float64(n)/60), n)
		lim.SetBurstAt(now, n) // full from now, not from the zero time
		l.subjects[key] = lim
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		l.limited++
		// Whole milliseconds, rounded up (the bucket's float arithmetic
		// may leave 999.999999ms): waiting that long is always enough.
		return (d + time.Millisecond - 1).Truncate(time.Millisecond)
	}
	return 0
}

// Limited is how many requests were refused so far.
func (l *Limiter) Limited() uint64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limited
}

// makeRoomLocked forgets identities once MaxSubjects are remembered:
// first those whose allowance is whole, then any.
func (l *Limiter) makeRoomLocked(now time.Time) {
	if len(l.subjects) < l.o.MaxSubjects {
		return
	}
	for k, lim := range l.subjects {
		if lim.TokensAt(now) >= float64(lim.Burst()) {
			delete(l.subjects, k)
		}
	}
	for k := range l.subjects {
		if len(l.subjects) < l.o.MaxSubjects {
			break
		}
		delete(l.subjects, k)
	}
}
