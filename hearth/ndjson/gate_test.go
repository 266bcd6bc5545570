package ndjson

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// clock is a hand-driven Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testGate is a gate on a hand-driven clock; its invariants are checked
// when the test ends.
func testGate(t testing.TB, o gateOptions) (*gate, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	o.Now = c.now
	g := newGate(o)
	t.Cleanup(func() { checkInvariants(t, g) })
	return g, c
}

// checkInvariants checks the gate's books: slot counts agree, and the
// failure records' list holds exactly the map's records, oldest first,
// no more than MaxSources.
func checkInvariants(t testing.TB, g *gate) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	sum := 0
	for k, n := range g.pending {
		if n <= 0 || n > g.o.PerSource {
			t.Errorf("source %v holds %d slots, want 1..%d", k, n, g.o.PerSource)
		}
		sum += n
	}
	if sum != g.total || g.total > g.o.Total || g.suspect < 0 || g.suspect > g.total {
		t.Errorf("slots: per source %d, total %d (max %d), suspect %d", sum, g.total, g.o.Total, g.suspect)
	}
	if _, n := g.throttle.Stats(); n > g.o.MaxSources {
		t.Errorf("%d failure records, want at most %d", n, g.o.MaxSources)
	}
}

var (
	srcA = netip.MustParseAddr("192.0.2.1")
	srcB = netip.MustParseAddr("192.0.2.2")
	srcC = netip.MustParseAddr("2001:db8::c")
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestGateDefaults(t *testing.T) {
	g := newGate(gateOptions{})
	got := g.o
	want := gateOptions{PerSource: 4, Total: 32, Reserve: 8, BaseDelay: 250 * time.Millisecond, MaxDelay: 10 * time.Second, Forget: 10 * time.Minute, MaxSources: 4096}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(gateOptions{}, "Now")); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if g.o.Now == nil {
		t.Error("Now defaults to nil, want time.Now")
	}
}

func TestGateAdmit(t *testing.T) {
	tests := []struct {
		name   string
		o      gateOptions
		failed []netip.Addr // sources that failed a handshake first
		admits []netip.Addr
		want   []bool
	}{
		{
			name:   "per source",
			o:      gateOptions{PerSource: 2, Total: 10},
			admits: addrs("192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.2", "192.0.2.2"),
			want:   []bool{true, true, false, true, true, false},
		},
		{
			name:   "total",
			o:      gateOptions{PerSource: 2, Total: 3, Reserve: -1},
			admits: addrs("192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.2"),
			want:   []bool{true, true, true, false, false},
		},
		{
			name:   "IPv4-mapped addresses are their IPv4 source",
			o:      gateOptions{PerSource: 2},
			admits: addrs("192.0.2.1", "::ffff:192.0.2.1", "::ffff:c000:201", "192.0.2.1"),
			want:   []bool{true, true, false, false},
		},
		{
			name:   "an IPv6 /64 is one source",
			o:      gateOptions{PerSource: 2},
			admits: addrs("2001:db8::1", "2001:db8::1:0:0:2", "2001:db8::ffff:ffff:ffff:ffff", "2001:db8:0:1::1"),
			want:   []bool{true, true, false, true},
		},
		{
			name:   "zones do not make sources",
			o:      gateOptions{PerSource: 1},
			admits: addrs("fe80::1%eth0", "fe80::2%eth1", "fe80::3"),
			want:   []bool{true, false, false},
		},
		{
			name:   "IPv4 and the IPv6 /64 holding its mapped form are apart",
			o:      gateOptions{PerSource: 1},
			admits: addrs("0.0.0.1", "::1", "::ffff:0.0.0.1"),
			want:   []bool{true, true, false},
		},
		{
			name:   "a peer the door could not place is one source",
			o:      gateOptions{PerSource: 1},
			admits: []netip.Addr{{}, {}},
			want:   []bool{true, false},
		},
		{
			// Sources that failed share Total-Reserve = 3 slots; the
			// reserved one is left for a source in good standing.
			name:   "the reserve is kept for sources in good standing",
			o:      gateOptions{PerSource: 4, Total: 4, Reserve: 1},
			failed: addrs("192.0.2.1", "192.0.2.2"),
			admits: addrs("192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.2", "192.0.2.3", "192.0.2.3"),
			want:   []bool{true, true, true, false, true, false},
		},
		{
			name:   "good standing may take any slot",
			o:      gateOptions{PerSource: 4, Total: 4, Reserve: 3},
			admits: addrs("192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1"),
			want:   []bool{true, true, true, true},
		},
		{
			name:   "no reserve",
			o:      gateOptions{PerSource: 4, Total: 4, Reserve: -1},
			failed: addrs("192.0.2.1"),
			admits: addrs("192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.3"),
			want:   []bool{true, true, true, true, false},
		},
		{
			name:   "a reserve of everything still leaves one slot to those that failed",
			o:      gateOptions{Total: 4, Reserve: 100},
			failed: addrs("192.0.2.1", "192.0.2.2"),
			admits: addrs("192.0.2.1", "192.0.2.2", "192.0.2.3"),
			want:   []bool{true, false, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := testGate(t, tt.o)
			for _, ip := range tt.failed {
				g.failed(ip)
			}
			var admitted int
			var refused uint64
			for i, ip := range tt.admits {
				release, ok := g.admit(ip)
				if ok != tt.want[i] {
					t.Errorf("admit #%d (%v) = %v, want %v", i, ip, ok, tt.want[i])
				}
				if release == nil {
					t.Fatalf("admit #%d (%v) returned a nil release", i, ip)
				}
				if ok {
					admitted++
				} else {
					refused++
					release() // a refusal's release is harmless
				}
			}
			st := g.stats()
			if st.Pending != admitted || st.Refused != refused {
				t.Errorf("stats = %+v, want %d pending, %d refused", st, admitted, refused)
			}
		})
	}
}

func TestGateRelease(t *testing.T) {
	tests := []struct {
		name   string
		failed bool // whether the source failed before, so holds a slot outside the reserve
	}{
		{"good standing", false},
		{"after a failure", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := testGate(t, gateOptions{PerSource: 1, Total: 2, Reserve: -1})
			if tt.failed {
				g.failed(srcA)
			}
			mustAdmit := func(ip netip.Addr, want bool) func() {
				t.Helper()
				release, ok := g.admit(ip)
				if ok != want {
					t.Fatalf("admit(%v) = %v, want %v", ip, ok, want)
				}
				return release
			}
			first := mustAdmit(srcA, true)
			mustAdmit(srcA, false)
			first()
			first() // a second release frees nothing more
			second := mustAdmit(srcA, true)
			mustAdmit(srcA, false)
			third := mustAdmit(srcB, true)
			mustAdmit(srcC, false) // total still 2: the double release did not count twice
			first()
			mustAdmit(srcC, false)
			second()
			third()
			third()
			if st := g.stats(); st.Pending != 0 {
				t.Errorf("pending after releasing all = %d", st.Pending)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.pending) != 0 || g.suspect != 0 {
				t.Errorf("after releasing all: %d sources hold slots, %d suspect slots", len(g.pending), g.suspect)
			}
		})
	}
}

func TestGateDelays(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		o    gateOptions
		want []time.Duration // failed's answer for each failure in a row
	}{
		{
			name: "defaults",
			want: []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second},
		},
		{
			name: "custom",
			o:    gateOptions{BaseDelay: 100 * ms, MaxDelay: time.Second},
			want: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second},
		},
		{
			name: "the cap is not a doubling",
			o:    gateOptions{BaseDelay: 3 * time.Second, MaxDelay: 10 * time.Second},
			want: []time.Duration{3 * time.Second, 6 * time.Second, 10 * time.Second, 10 * time.Second},
		},
		{
			name: "a cap below the base is the base",
			o:    gateOptions{BaseDelay: time.Second, MaxDelay: 10 * ms},
			want: []time.Duration{time.Second, time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := testGate(t, tt.o)
			for i, want := range tt.want {
				if got := g.failed(srcA); got != want {
					t.Errorf("failure #%d: delay %v, want %v", i+1, got, want)
				}
				// The clock stands still, so the next connection waits it all.
				if got := g.penalty(srcA); got != want {
					t.Errorf("failure #%d: penalty %v, want %v", i+1, got, want)
				}
			}
			if got := g.stats().Throttled; got != uint64(len(tt.want)) {
				t.Errorf("throttled = %d, want %d", got, len(tt.want))
			}
		})
	}

	t.Run("no overflow", func(t *testing.T) {
		g, _ := testGate(t, gateOptions{BaseDelay: 1, MaxDelay: math.MaxInt64})
		var d time.Duration
		for range 200 {
			d = g.failed(srcA)
		}
		if d != math.MaxInt64 {
			t.Errorf("delay after 200 failures = %v, want the cap", d)
		}
	})
}

func TestGatePenalty(t *testing.T) {
	const ms = time.Millisecond
	type step struct {
		advance time.Duration
		fail    netip.Addr // fails a handshake when valid
		src     netip.Addr
		want    time.Duration // penalty(src) after the step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name:  "good standing waits nothing",
			steps: []step{{src: srcA, want: 0}},
		},
		{
			name: "what is left of the delay",
			steps: []step{
				{fail: srcA, src: srcA, want: 250 * ms},
				{advance: 100 * ms, src: srcA, want: 150 * ms},
				{advance: 150 * ms, src: srcA, want: 0},
				{advance: time.Minute, src: srcA, want: 0},
				{fail: srcA, src: srcA, want: 500 * ms},
			},
		},
		{
			name: "asking does not count as failing",
			steps: []step{
				{fail: srcA, src: srcA, want: 250 * ms},
				{src: srcA, want: 250 * ms},
				{src: srcA, want: 250 * ms},
				{advance: 250 * ms, fail: srcA, src: srcA, want: 500 * ms},
			},
		},
		{
			name: "other sources are not penalised",
			steps: []step{
				{fail: srcA, src: srcB, want: 0},
				{fail: srcA, src: srcC, want: 0},
			},
		},
		{
			name: "failures at once: the longest wait holds",
			steps: []step{
				{fail: srcA, src: srcA, want: 250 * ms},
				{fail: srcA, src: srcA, want: 500 * ms},
				{fail: srcA, src: srcA, want: time.Second},
				{advance: 400 * ms, src: srcA, want: 600 * ms},
			},
		},
		{
			name: "IPv4-mapped addresses share the penalty",
			steps: []step{
				{fail: netip.MustParseAddr("::ffff:192.0.2.1"), src: srcA, want: 250 * ms},
			},
		},
		{
			name: "an IPv6 /64 shares the penalty",
			steps: []step{
				{fail: netip.MustParseAddr("2001:db8::1"), src: netip.MustParseAddr("2001:db8::2:3:4:5"), want: 250 * ms},
				{src: netip.MustParseAddr("2001:db8:0:1::1"), want: 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, c := testGate(t, gateOptions{})
			for i, s := range tt.steps {
				c.advance(s.advance)
				if s.fail.IsValid() {
					g.failed(s.fail)
				}
				if got := g.penalty(s.src); got != s.want {
					t.Errorf("step %d: penalty(%v) = %v, want %v", i, s.src, got, s.want)
				}
			}
		})
	}
}

func TestGateForget(t *testing.T) {
	const forget = 10 * time.Minute
	tests := []struct {
		name    string
		o       gateOptions
		gaps    []time.Duration // before each failure after the first
		want    time.Duration   // the last failure's delay
		sources int             // records tracked after the last failure
	}{
		{"starts over after the window", gateOptions{}, []time.Duration{time.Second, time.Second, forget}, 250 * time.Millisecond, 1},
		{"remembered just within it", gateOptions{}, []time.Duration{time.Second, time.Second, forget - 1}, 2 * time.Second, 1},
		{"failures that keep coming are never forgotten", gateOptions{}, []time.Duration{forget - 1, forget - 1, forget - 1}, 2 * time.Second, 1},
		{"a window shorter than the cap is the cap", gateOptions{Forget: time.Second, MaxDelay: 10 * time.Second}, []time.Duration{5 * time.Second}, 500 * time.Millisecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, c := testGate(t, tt.o)
			g.failed(srcA)
			var got time.Duration
			for _, gap := range tt.gaps {
				c.advance(gap)
				got = g.failed(srcA)
			}
			if got != tt.want {
				t.Errorf("last delay = %v, want %v", got, tt.want)
			}
			if st := g.stats(); st.Sources != tt.sources {
				t.Errorf("sources = %d, want %d", st.Sources, tt.sources)
			}
		})
	}

	t.Run("expired records are dropped when met", func(t *testing.T) {
		g, c := testGate(t, gateOptions{PerSource: 4, Total: 4, Reserve: 1})
		for _, ip := range addrs("192.0.2.1", "192.0.2.2", "2001:db8::1") {
			g.failed(ip)
		}
		c.advance(time.Minute)
		g.failed(srcB)
		if st := g.stats(); st.Sources != 3 {
			t.Fatalf("sources = %d, want 3", st.Sources)
		}
		c.advance(forget - time.Minute)
		if st := g.stats(); st.Sources != 1 {
			t.Errorf("sources a window after the first failures = %d, want 1 (the later one)", st.Sources)
		}
		// A forgotten source is in good standing: it may take the reserve.
		for i := range 4 {
			if _, ok := g.admit(srcA); !ok {
				t.Errorf("admit #%d of a forgiven source refused", i)
			}
		}
		if got := g.penalty(srcA); got != 0 {
			t.Errorf("penalty of a forgiven source = %v", got)
		}
	})
}

func TestGateSucceeded(t *testing.T) {
	tests := []struct {
		name      string
		fail, win netip.Addr
	}{
		{"same address", srcA, srcA},
		{"IPv4-mapped", netip.MustParseAddr("::ffff:192.0.2.1"), srcA},
		{"same /64", netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := testGate(t, gateOptions{PerSource: 2, Total: 2, Reserve: 1})
			for range 5 {
				g.failed(tt.fail)
			}
			g.succeeded(tt.win)
			if got := g.penalty(tt.fail); got != 0 {
				t.Errorf("penalty after success = %v, want 0", got)
			}
			if st := g.stats(); st.Sources != 0 {
				t.Errorf("sources after success = %d, want 0", st.Sources)
			}
			// In good standing again: the reserved slot is open to it.
			for i := range 2 {
				if _, ok := g.admit(tt.fail); !ok {
					t.Errorf("admit #%d after success refused", i)
				}
			}
			if got := g.failed(tt.fail); got != 250*time.Millisecond {
				t.Errorf("first delay after success = %v, want the base", got)
			}
			g.succeeded(srcB) // a source with no record: nothing happens
		})
	}
}

func TestGateMaxSources(t *testing.T) {
	t.Run("the oldest failure is forgotten first", func(t *testing.T) {
		g, c := testGate(t, gateOptions{MaxSources: 3})
		a, b, d := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11"), netip.MustParseAddr("192.0.2.13")
		g.failed(a)
		c.advance(time.Millisecond)
		g.failed(b)
		g.failed(srcC)
		g.failed(a) // now newer than b
		g.failed(d) // evicts b
		if st := g.stats(); st.Sources != 3 {
			t.Errorf("sources = %d, want 3", st.Sources)
		}
		for _, ip := range []netip.Addr{a, srcC, d} {
			if g.penalty(ip) == 0 {
				t.Errorf("%v was forgotten", ip)
			}
		}
		if got := g.penalty(b); got != 0 {
			t.Errorf("%v, the oldest failure, is still remembered (penalty %v)", b, got)
		}
		if got := g.failed(a); got != time.Second {
			t.Errorf("third failure of %v: delay %v, want 1s", a, got)
		}
	})

	t.Run("a flood from fresh sources stays bounded", func(t *testing.T) {
		const max = 64
		g, c := testGate(t, gateOptions{MaxSources: max})
		var i uint32
		fresh := func() netip.Addr {
			i++
			if i%2 == 0 {
				return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
			}
			var a [16]byte
			a[0], a[1], a[4], a[5], a[6], a[7] = 0x20, 0x01, byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
			return netip.AddrFrom16(a)
		}
		for range 10_000 {
			c.advance(time.Millisecond)
			g.failed(fresh())
		}
		if st := g.stats(); st.Sources != max {
			t.Errorf("sources = %d, want %d", st.Sources, max)
		}
		checkInvariants(t, g)
		// At capacity a new source reuses the oldest record.
		allocs := testing.AllocsPerRun(1000, func() { g.failed(fresh()) })
		if allocs >= 1 {
			t.Errorf("failed from a fresh source at capacity: %v allocs, want none", allocs)
		}
	})
}

// TestGateConcurrent hammers one gate from many goroutines (run with
// -race): budgets hold at every moment, and the books balance after.
func TestGateConcurrent(t *testing.T) {
	const (
		workers   = 8
		rounds    = 2000
		perSource = 3
		total     = 10
	)
	g, c := testGate(t, gateOptions{PerSource: perSource, Total: total, MaxSources: 5})
	sources := addrs("192.0.2.1", "::ffff:192.0.2.1", "192.0.2.2", "2001:db8::1", "2001:db8::2", "2001:db8:1::1", "198.51.100.7")
	var held [7]atomic.Int32 // by index into sources, merged by source below
	key := func(i int) int {
		switch i {
		case 1:
			return 0
		case 4:
			return 3
		}
		return i
	}
	var inAll, admitted, refused, failures atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var mine []func()
			for r := range rounds {
				i := (w*7 + r*3) % len(sources)
				ip := sources[i]
				switch r % 5 {
				case 0, 1:
					release, ok := g.admit(ip)
					if !ok {
						refused.Add(1)
						continue
					}
					admitted.Add(1)
					if n := held[key(i)].Add(1); n > perSource {
						t.Errorf("source %v holds %d slots", ip, n)
					}
					if n := inAll.Add(1); n > total {
						t.Errorf("%d slots held", n)
					}
					k := key(i)
					mine = append(mine, func() {
						held[k].Add(-1)
						inAll.Add(-1)
						release()
						release()
					})
				case 2:
					if len(mine) > 0 {
						mine[0]()
						mine = mine[1:]
					}
				case 3:
					failures.Add(1)
					if d := g.failed(ip); d <= 0 || d > 10*time.Second {
						t.Errorf("delay %v", d)
					}
					c.advance(time.Second)
				case 4:
					if r%10 == 4 {
						g.succeeded(ip)
					} else if p := g.penalty(ip); p < 0 || p > 10*time.Second {
						t.Errorf("penalty %v", p)
					}
				}
			}
			for _, release := range mine {
				release()
			}
		})
	}
	wg.Wait()
	st := g.stats()
	want := gateStats{Pending: 0, Refused: uint64(refused.Load()), Throttled: uint64(failures.Load()), Sources: st.Sources}
	if st != want || st.Sources > 5 {
		t.Errorf("stats = %+v, want %+v with at most 5 sources", st, want)
	}
	if admitted.Load() == 0 || refused.Load() == 0 {
		t.Errorf("admitted %d, refused %d: the test did not exercise both", admitted.Load(), refused.Load())
	}
}

func BenchmarkGateAdmit(b *testing.B) {
	b.Run("one source", func(b *testing.B) {
		g := newGate(gateOptions{})
		b.ReportAllocs()
		for b.Loop() {
			release, _ := g.admit(srcA)
			release()
		}
	})
	b.Run("refused", func(b *testing.B) {
		g := newGate(gateOptions{PerSource: 1})
		g.admit(srcA)
		b.ReportAllocs()
		for b.Loop() {
			g.admit(srcA)
		}
	})
	b.Run("many sources with failures", func(b *testing.B) {
		g := newGate(gateOptions{})
		ips := make([]netip.Addr, 4096)
		for i := range ips {
			if i%2 == 0 {
				ips[i] = netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
			} else {
				ips[i] = netip.MustParseAddr(fmt.Sprintf("2001:db8:%x::1", i))
			}
			g.failed(ips[i])
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			release, _ := g.admit(ips[i%len(ips)])
			release()
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		g := newGate(gateOptions{PerSource: 1 << 20, Total: 1 << 20})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				release, _ := g.admit(srcA)
				release()
			}
		})
	})
}
