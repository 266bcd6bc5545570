// Package backoff is the one retry delay of mnemo: capped exponential
// growth with optional jitter. The client's reconnects, recall's attempts
// to open its backend, the indexer, the embedders and the model adapters
// all wait by it. It imports only the standard library, so every package
// of the module may use it without depending on another's domain.
package backoff

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Policy is how long to wait after the n-th failure: Initial times
// Multiplier to the n−1, at most Max, then spread by jitter.
type Policy struct {
	Initial time.Duration // the first delay; must be positive
	Max     time.Duration // the cap before jitter; below Initial means Initial
	// Multiplier is the growth per attempt; 0 means 2.
	Multiplier float64
	// JitterBelow and JitterAbove spread each delay d uniformly over
	// [d·(1−JitterBelow), d·(1+JitterAbove)], so that peers failing
	// together do not retry in step. Both 0: no jitter.
	JitterBelow, JitterAbove float64
}

// Delay is the wait after the attempt-th failure (1-based; below 1 counts
// as 1).
func (p Policy) Delay(attempt int) time.Duration {
	d := p.base(attempt)
	if p.JitterBelow == 0 && p.JitterAbove == 0 {
		return d
	}
	lo := float64(d) * (1 - p.JitterBelow)
	hi := float64(d) * (1 + p.JitterAbove)
	if hi > math.MaxInt64 {
		hi = math.MaxInt64
	}
	return time.Duration(lo + rand.Float64()*(hi-lo))
}

// base is the delay before jitter.
func (p Policy) base(attempt int) time.Duration {
	m := p.Multiplier
	if m <= 1 {
		m = 2
	}
	hi := max(p.Max, p.Initial)
	d := float64(p.Initial)
	for i := 1; i < attempt && d < float64(hi); i++ {
		d *= m
	}
	if d >= float64(hi) {
		return hi
	}
	return time.Duration(d)
}

// Sleep waits d; false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
