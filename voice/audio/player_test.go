package audio

import (
	"encoding/binary"
	"testing"
	"time"
)

// pcmOf encodes samples as little-endian PCM, as the provider sends them.
func pcmOf(s []int16) []byte {
	b := make([]byte, 2*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

// step is one call on a Player in a scripted case.
type step struct {
	op   string // write, read, finish, flush
	item string // write: item id
	n    int    // write/read: samples
	want int    // write: accepted; read: audio samples returned
	// flush: what was heard
	wantItem string
	wantMS   int
	wantOK   bool
}

func TestPlayer(t *testing.T) {
	const ms = SampleRate / 1000
	tests := []struct {
		name    string
		cfg     PlayerConfig
		latency time.Duration
		steps   []step
		want    PlayerStats
		playing []bool // gate notifications, in order
	}{
		{
			name: "silent until the pre-buffer fills, then in order",
			steps: []step{
				{op: "write", item: "a", n: 60 * ms, want: 60 * ms},
				{op: "read", n: 20 * ms, want: 0},
				{op: "write", item: "a", n: 20 * ms, want: 20 * ms},
				{op: "read", n: 20 * ms, want: 20 * ms},
				{op: "read", n: 30 * ms, want: 30 * ms},
			},
			want:    PlayerStats{Queued: 30 * ms, Written: 80 * ms, Played: 50 * ms},
			playing: []bool{true},
		},
		{
			name: "wraps around a small ring",
			cfg:  PlayerConfig{Capacity: 10 * time.Millisecond, PreBuffer: 5 * time.Millisecond},
			steps: []step{
				{op: "write", item: "a", n: 200, want: 200},
				{op: "read", n: 150, want: 150},
				{op: "write", item: "a", n: 180, want: 180},
				{op: "read", n: 100, want: 100},
				{op: "write", item: "a", n: 60, want: 60},
				{op: "read", n: 190, want: 190},
			},
			want:    PlayerStats{Queued: 0, Written: 440, Played: 440},
			playing: []bool{true},
		},
		{
			name: "overflow drops the newest and counts them",
			cfg:  PlayerConfig{Capacity: 10 * time.Millisecond, PreBuffer: 1 * time.Millisecond},
			steps: []step{
				{op: "write", item: "a", n: 200, want: 200},
				{op: "write", item: "a", n: 100, want: 40},
				{op: "write", item: "b", n: 10, want: 0},
				{op: "read", n: 240, want: 240},
			},
			want:    PlayerStats{Written: 240, Played: 240, Dropped: 70, Overflows: 2},
			playing: []bool{true},
		},
		{
			name: "running dry mid-reply is one underrun and pre-buffers again",
			steps: []step{
				{op: "write", item: "a", n: 100 * ms, want: 100 * ms},
				{op: "read", n: 60 * ms, want: 60 * ms},
				{op: "read", n: 60 * ms, want: 40 * ms},
				{op: "read", n: 60 * ms, want: 0},
				{op: "write", item: "a", n: 50 * ms, want: 50 * ms},
				{op: "read", n: 20 * ms, want: 0},
				{op: "write", item: "a", n: 50 * ms, want: 50 * ms},
				{op: "read", n: 20 * ms, want: 20 * ms},
			},
			want:    PlayerStats{Queued: 80 * ms, Written: 200 * ms, Played: 120 * ms, Underruns: 1},
			playing: []bool{true, false, true},
		},
		{
			name: "finish plays a reply shorter than the pre-buffer and ends without underrun",
			steps: []step{
				{op: "write", item: "a", n: 30 * ms, want: 30 * ms},
				{op: "read", n: 20 * ms, want: 0},
				{op: "finish"},
				{op: "read", n: 20 * ms, want: 20 * ms},
				{op: "read", n: 20 * ms, want: 10 * ms},
				{op: "read", n: 20 * ms, want: 0},
			},
			want:    PlayerStats{Written: 30 * ms, Played: 30 * ms},
			playing: []bool{true, false},
		},
		{
			name: "finish on an exact boundary ends at once",
			steps: []step{
				{op: "write", item: "a", n: 80 * ms, want: 80 * ms},
				{op: "finish"},
				{op: "read", n: 80 * ms, want: 80 * ms},
			},
			want:    PlayerStats{Written: 80 * ms, Played: 80 * ms},
			playing: []bool{true, false},
		},
		{
			name: "a write after finish continues the next reply",
			steps: []step{
				{op: "write", item: "a", n: 100 * ms, want: 100 * ms},
				{op: "finish"},
				{op: "write", item: "b", n: 10 * ms, want: 10 * ms},
				{op: "read", n: 120 * ms, want: 110 * ms},
			},
			want:    PlayerStats{Written: 110 * ms, Played: 110 * ms, Underruns: 1},
			playing: []bool{true, false},
		},
		{
			name: "flush reports the item playing and the ms heard",
			steps: []step{
				{op: "write", item: "a", n: 100 * ms, want: 100 * ms},
				{op: "write", item: "b", n: 100 * ms, want: 100 * ms},
				{op: "read", n: 140 * ms, want: 140 * ms},
				{op: "flush", wantItem: "b", wantMS: 40, wantOK: true},
				{op: "read", n: 20 * ms, want: 0},
				{op: "flush"},
			},
			want:    PlayerStats{Written: 200 * ms, Played: 140 * ms, Flushed: 60 * ms},
			playing: []bool{true, false},
		},
		{
			// The device plays out what it holds after a flush (measured on
			// the speaker: TestSessionBargeInOnDevice), so it was heard.
			name:    "flush counts what the device still holds as heard",
			latency: 30 * time.Millisecond,
			steps: []step{
				{op: "write", item: "a", n: 100 * ms, want: 100 * ms},
				{op: "write", item: "b", n: 100 * ms, want: 100 * ms},
				{op: "read", n: 140 * ms, want: 140 * ms},
				{op: "flush", wantItem: "b", wantMS: 40, wantOK: true},
			},
			want:    PlayerStats{Written: 200 * ms, Played: 140 * ms, Flushed: 60 * ms},
			playing: []bool{true, false},
		},
		{
			name: "flush before playback starts heard nothing",
			steps: []step{
				{op: "write", item: "a", n: 50 * ms, want: 50 * ms},
				{op: "flush", wantItem: "a", wantMS: 0, wantOK: true},
				{op: "write", item: "c", n: 100 * ms, want: 100 * ms},
				{op: "read", n: 30 * ms, want: 30 * ms},
				{op: "flush", wantItem: "c", wantMS: 30, wantOK: true},
			},
			want:    PlayerStats{Written: 150 * ms, Played: 30 * ms, Flushed: 120 * ms},
			playing: []bool{true, false, true, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &playRecorder{}
			tt.cfg.OnPlaying = rec.note
			p := NewPlayer(tt.cfg)
			p.SetOutputLatency(tt.latency)
			var next int16 = 1
			var model []int16 // accepted, unplayed samples in order
			for i, s := range tt.steps {
				switch s.op {
				case "write":
					in := make([]int16, s.n)
					for j := range in {
						in[j] = next
						next++
					}
					got := p.Write(s.item, pcmOf(in))
					if got != s.want {
						t.Fatalf("step %d: Write accepted %d, want %d", i, got, s.want)
					}
					model = append(model, in[:got]...)
				case "read":
					out := make([]int16, s.n)
					for j := range out {
						out[j] = -1 // must be overwritten
					}
					got := p.Read(out)
					if got != s.want {
						t.Fatalf("step %d: Read returned %d audio samples, want %d", i, got, s.want)
					}
					for j := range got {
						if out[j] != model[j] {
							t.Fatalf("step %d: sample %d = %d, want %d", i, j, out[j], model[j])
						}
					}
					model = model[got:]
					for j := got; j < len(out); j++ {
						if out[j] != 0 {
							t.Fatalf("step %d: fill sample %d = %d, want 0", i, j, out[j])
						}
					}
				case "finish":
					p.Finish()
				case "flush":
					item, heard, ok := p.Flush()
					if item != s.wantItem || heard != s.wantMS || ok != s.wantOK {
						t.Fatalf("step %d: Flush = %q %d %v, want %q %d %v", i, item, heard, ok, s.wantItem, s.wantMS, s.wantOK)
					}
					model = nil
				}
			}
			if got := p.Stats(); got != tt.want {
				t.Errorf("Stats = %+v, want %+v", got, tt.want)
			}
			if !equalBools(rec.got, tt.playing) {
				t.Errorf("playing notifications %v, want %v", rec.got, tt.playing)
			}
		})
	}
}

type playRecorder struct{ got []bool }

func (r *playRecorder) note(on bool) { r.got = append(r.got, on) }

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPlayerConcurrent: the socket reader writes while the device reads;
// every accepted sample plays once, in order (run with -race).
func TestPlayerConcurrent(t *testing.T) {
	p := NewPlayer(PlayerConfig{Capacity: 50 * time.Millisecond, PreBuffer: 5 * time.Millisecond})
	const total = 200_000
	accepted := make(chan int, 1)
	go func() {
		var next int16
		sum := 0
		chunk := make([]int16, 997)
		for sent := 0; sent < total; sent += len(chunk) {
			for j := range chunk {
				chunk[j] = next
				next++
			}
			n := p.Write("a", pcmOf(chunk))
			sum += n
			next -= int16(len(chunk) - n) // resend the refused tail's values next time
		}
		p.Finish()
		accepted <- sum
	}()
	var want int16
	out := make([]int16, FrameSamples)
	played := 0
	var sum int
	done := false
	for !done || p.Playing() {
		if !done {
			select {
			case sum = <-accepted:
				done = true
			default:
			}
		}
		n := p.Read(out)
		for j := range n {
			if out[j] != want {
				t.Fatalf("sample %d = %d, want %d", played+j, out[j], want)
			}
			want++
		}
		played += n
	}
	if played != sum {
		t.Errorf("played %d samples, accepted %d", played, sum)
	}
}

// TestPlayerDrivesGate: with a real gate, playback closes the mic and its
// end starts the hold.
func TestPlayerDrivesGate(t *testing.T) {
	now := time.Unix(0, 0)
	g := NewGate(GateConfig{Now: func() time.Time { return now }})
	p := NewPlayer(PlayerConfig{Gate: g})
	if g.State() != Listening {
		t.Fatalf("before: %v", g.State())
	}
	p.Write("a", make([]byte, 2*FrameSamples))
	if g.State() != Gated {
		t.Fatalf("after Write: %v, want gated", g.State())
	}
	p.Flush()
	if g.State() != Holding {
		t.Fatalf("after Flush: %v, want holding", g.State())
	}
	now = now.Add(DefaultHold)
	if g.State() != Listening {
		t.Fatalf("after the hold: %v, want listening", g.State())
	}
}

// TestPlayerHotPathAllocs: a steady write/read of one item allocates nothing.
func TestPlayerHotPathAllocs(t *testing.T) {
	p := NewPlayer(PlayerConfig{})
	in := pcmOf(make([]int16, FrameSamples))
	out := make([]int16, FrameSamples)
	for range 10 {
		p.Write("a", in)
	}
	if n := testing.AllocsPerRun(1000, func() {
		p.Write("a", in)
		p.Read(out)
	}); n != 0 {
		t.Errorf("Write+Read allocates %v times per frame, want 0", n)
	}
}

func BenchmarkPlayer(b *testing.B) {
	p := NewPlayer(PlayerConfig{})
	in := pcmOf(make([]int16, FrameSamples))
	out := make([]int16, FrameSamples)
	p.Write("a", in)
	p.Write("a", in)
	p.Write("a", in)
	p.Write("a", in)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		p.Write("a", in)
		p.Read(out)
	}
}

// TestPlayerStarted: Started is signalled when a reply starts being
// queued, once per reply, not for every delta; a start after the output
// drained it is never missed (the device layer stops the output while
// there is nothing to play and waits on it).
func TestPlayerStarted(t *testing.T) {
	p := NewPlayer(PlayerConfig{PreBuffer: 20 * time.Millisecond})
	started := func() bool {
		select {
		case <-p.Started():
			return true
		default:
			return false
		}
	}
	if started() {
		t.Fatal("started before any audio")
	}
	p.Write("item_1", make([]byte, 2*FrameSamples))
	p.Write("item_1", make([]byte, 2*FrameSamples))
	if !started() {
		t.Fatal("no start for the first reply")
	}
	if started() {
		t.Fatal("a second start for the same reply")
	}
	p.Finish()
	out := make([]int16, FrameSamples)
	for p.Playing() {
		p.Read(out)
	}
	if started() {
		t.Fatal("a start while the reply played out")
	}
	p.Write("item_2", make([]byte, 2*FrameSamples))
	if !started() {
		t.Fatal("no start for the next reply")
	}
	p.Flush()
	p.Write("item_3", make([]byte, 2*FrameSamples))
	if !started() {
		t.Fatal("no start for the reply after a barge-in")
	}
}

// TestPlayerFlushHeld: on a device that drops what it holds when flushed
// (PulseAudio), what it held was handed but never heard: Flush takes it
// off the heard time (never below zero); every Flush is counted and
// signalled, and each read says how many flushes came before it, so the
// device flushes before it sends audio queued after one. readable bounds
// a read to what is queued mid-reply, and to nothing while pre-buffering.
func TestPlayerFlushHeld(t *testing.T) {
	for _, tt := range []struct {
		name     string
		held     int // samples the device holds
		hasHeld  bool
		handedMS int
		wantMS   int
	}{
		{"plays out what it holds", 0, false, 200, 200},
		{"drops 50 ms", samples(50), true, 200, 150},
		{"drops nothing", 0, true, 200, 200},
		{"drops more than this item", samples(300), true, 200, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlayer(PlayerConfig{PreBuffer: 20 * time.Millisecond})
			if tt.hasHeld {
				p.setHeld(func(gen uint64) int {
					if gen != 1 {
						t.Errorf("held asked for flush %d, want 1", gen)
					}
					return tt.held
				})
			}
			p.Write("item_1", make([]byte, 2*samples(1000)))
			out := make([]int16, samples(tt.handedMS))
			if n, flushes := p.read(out); n != len(out) || flushes != 0 {
				t.Fatalf("read = %d, %d flushes; want %d, 0", n, flushes, len(out))
			}
			select {
			case <-p.Flushed():
				t.Fatal("signalled before any flush")
			default:
			}
			item, ms, ok := p.Flush()
			if item != "item_1" || ms != tt.wantMS || !ok {
				t.Errorf("Flush = %q %d ms %v, want item_1 %d ms", item, ms, ok, tt.wantMS)
			}
			select {
			case <-p.Flushed():
			default:
				t.Fatal("Flush not signalled")
			}
			p.Write("item_2", make([]byte, 2*FrameSamples))
			p.Finish()
			if _, flushes := p.read(out[:FrameSamples]); flushes != 1 || p.flushCount() != 1 {
				t.Errorf("a read after one flush says %d flushes (count %d)", flushes, p.flushCount())
			}
		})
	}
}

func TestPlayerReadable(t *testing.T) {
	pre := samples(80)
	for _, tt := range []struct {
		name        string
		setup       func(p *Player)
		wantN       int
		wantBounded bool
	}{
		{"idle: silence, any amount", func(*Player) {}, 0, false},
		{"pre-buffering: nothing yet", func(p *Player) { p.Write("a", make([]byte, 2*(pre-1))) }, 0, true},
		{"playing: what is queued", func(p *Player) { p.Write("a", make([]byte, 2*(pre+100))) }, pre + 100, true},
		{"the reply's end queued: any amount", func(p *Player) { p.Write("a", make([]byte, 2*10)); p.Finish() }, 0, false},
		{"after a flush: silence", func(p *Player) { p.Write("a", make([]byte, 2*(pre+100))); p.Flush() }, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlayer(PlayerConfig{PreBuffer: 80 * time.Millisecond})
			tt.setup(p)
			if n, bounded := p.readable(); n != tt.wantN || bounded != tt.wantBounded {
				t.Errorf("readable = %d, %v; want %d, %v", n, bounded, tt.wantN, tt.wantBounded)
			}
		})
	}
}

// TestPlayerRunsDry: a reply whose audio comes slower than it plays runs
// the Player dry in the middle. It is still under way (Replying), and a
// barge-in then cuts the item at all of it heard, not at what played since
// the gap. Once its end has played out, nothing is left to cut.
func TestPlayerRunsDry(t *testing.T) {
	p := NewPlayer(PlayerConfig{PreBuffer: 20 * time.Millisecond})
	out := make([]int16, samples(200))
	p.Write("item_1", make([]byte, 2*samples(100)))
	if n := p.Read(out); n != samples(100) {
		t.Fatalf("read %d samples, want %d", n, samples(100))
	}
	if p.Playing() || !p.Replying() {
		t.Fatalf("run dry mid-reply: Playing %v, Replying %v; want false, true", p.Playing(), p.Replying())
	}
	p.Write("item_1", make([]byte, 2*samples(100)))
	if n := p.Read(out[:samples(50)]); n != samples(50) {
		t.Fatalf("read %d samples after more came, want %d", n, samples(50))
	}
	if item, ms, ok := p.Flush(); item != "item_1" || ms != 150 || !ok {
		t.Errorf("Flush = %q %d ms %v, want item_1 150 ms", item, ms, ok)
	}

	// Its end comes after the speaker ran dry: nothing more to play.
	p.Write("item_3", make([]byte, 2*samples(100)))
	p.Read(out)
	p.Finish()
	if p.Replying() {
		t.Error("a reply that ran dry and then ended is still under way")
	}

	p.Write("item_2", make([]byte, 2*samples(100)))
	p.Finish()
	p.Read(out)
	if p.Playing() || p.Replying() {
		t.Errorf("played out: Playing %v, Replying %v; want false, false", p.Playing(), p.Replying())
	}
	if item, ms, ok := p.Flush(); ok {
		t.Errorf("Flush after the reply played out = %q %d ms, want nothing to cut", item, ms)
	}
}
