package auth

import (
	"net/netip"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// checkList checks the failure records' list holds exactly the map's
// records, oldest first, no more than MaxSources.
func checkList(t *testing.T, th *Throttle) {
	t.Helper()
	th.mu.Lock()
	defer th.mu.Unlock()
	if len(th.records) > th.o.MaxSources {
		t.Errorf("%d records, want at most %d", len(th.records), th.o.MaxSources)
	}
	n := 0
	var prev *failures
	for r := th.oldest; r != nil; prev, r = r, r.next {
		n++
		if r.prev != prev || th.records[r.key] != r {
			t.Fatalf("record %v: broken list", r.key)
		}
		if prev != nil && r.last.Before(prev.last) {
			t.Errorf("record %v listed after a newer one", r.key)
		}
	}
	if prev != th.newest || n != len(th.records) {
		t.Errorf("list of %d records, map of %d", n, len(th.records))
	}
}

func TestThrottle(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	b2 := netip.MustParseAddr("2001:db8::2") // same /64 as b
	tests := []struct {
		name  string
		steps func(th *Throttle, c *clock) []time.Duration
		want  []time.Duration
	}{
		{"doubles to the cap", func(th *Throttle, c *clock) []time.Duration {
			return []time.Duration{th.Failed(a), th.Failed(a), th.Failed(a), th.Failed(a), th.Failed(a), th.Wait(a)}
		}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}},
		{"success clears", func(th *Throttle, c *clock) []time.Duration {
			th.Failed(a)
			th.Succeeded(a)
			return []time.Duration{th.Wait(a), th.Failed(a)}
		}, []time.Duration{0, time.Second}},
		{"an IPv6 /64 is one source", func(th *Throttle, c *clock) []time.Duration {
			th.Failed(b)
			return []time.Duration{th.Wait(b2), th.Failed(b2)}
		}, []time.Duration{time.Second, 2 * time.Second}},
		{"wait runs down and records expire", func(th *Throttle, c *clock) []time.Duration {
			th.Failed(a)
			c.add(400 * time.Millisecond)
			w := th.Wait(a)
			c.add(time.Hour)
			return []time.Duration{w, th.Wait(a), th.Failed(a)}
		}, []time.Duration{600 * time.Millisecond, 0, time.Second}},
		{"sources are independent", func(th *Throttle, c *clock) []time.Duration {
			th.Failed(a)
			return []time.Duration{th.Wait(b)}
		}, []time.Duration{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			th := NewThrottle(ThrottleOptions{BaseDelay: time.Second, MaxDelay: 8 * time.Second, Now: c.now})
			got := tt.steps(th, c)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("step %d: %v, want %v", i, got[i], tt.want[i])
				}
			}
			checkList(t, th)
		})
	}
}

func TestThrottleBounded(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	th := NewThrottle(ThrottleOptions{MaxSources: 3, Now: c.now})
	for i := range 10 {
		th.Failed(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}))
		c.add(time.Millisecond)
	}
	checkList(t, th)
	if n, s := th.Stats(); n != 10 || s != 3 {
		t.Errorf("stats = %d failures, %d sources; want 10, 3", n, s)
	}
	if !th.Suspect(netip.AddrFrom4([4]byte{10, 0, 0, 9})) || th.Suspect(netip.AddrFrom4([4]byte{10, 0, 0, 0})) {
		t.Error("the newest source must be remembered and the oldest forgotten")
	}
}
