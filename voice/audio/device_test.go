//go:build portaudio

package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// needAudio skips without a sound server, unless MNEMO_AUDIO_REQUIRED is
// set (make test-audio sets it: there a missing server is a failure).
func needAudio(t testing.TB) {
	t.Helper()
	if os.Getenv("PULSE_SERVER") != "" {
		return
	}
	if os.Getenv("MNEMO_AUDIO_REQUIRED") != "" {
		t.Fatal("PULSE_SERVER is not set: run scripts/audio-setup.sh (make test-audio)")
	}
	t.Skip("no sound server: make test-audio sets one up")
}

// eachBackend runs a device test on each backend: PulseAudio's native
// protocol and PortAudio, the same devices under the same server.
func eachBackend(t *testing.T, test func(*testing.T, Backend)) {
	needAudio(t)
	for _, b := range []Backend{BackendPulse, BackendPortAudio} {
		t.Run(string(b), func(t *testing.T) { test(t, b) })
	}
}

func TestDevices(t *testing.T) { eachBackend(t, testDevices) }

func testDevices(t *testing.T, b Backend) {
	devs, err := ListDevices(t.Context(), b, DeviceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var in, out bool
	for _, d := range devs {
		t.Logf("%q (%s) host=%s in=%d out=%d rate=%.0f defaultIn=%v defaultOut=%v",
			d.Name, d.Description, d.Host, d.Inputs, d.Outputs, d.DefaultSampleRate, d.DefaultInput, d.DefaultOutput)
		in = in || d.DefaultInput
		out = out || d.DefaultOutput
	}
	if !in || !out {
		t.Fatalf("no default input (%v) or output (%v) among %d devices", in, out, len(devs))
	}
	for _, cfg := range []DeviceConfig{{Output: "no such device"}, {Input: "no such device"}} {
		_, err := Open(t.Context(), b, cfg, NewCapture(CaptureConfig{}), NewPlayer(PlayerConfig{}))
		if err == nil || !strings.Contains(err.Error(), "no such device") {
			t.Errorf("Open(%+v) = %v: want an error naming the device", cfg, err)
		}
	}
}

// recorder collects raw s16le mono from a command's stdout and lets the
// test wait for a sample count.
type recorder struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  []int16
	done bool
	t0   time.Time // when sample 0 was recorded, best estimate
	// cpu is the reading goroutine's CPU time (its own locked thread): the
	// test's, not the client's, so benchmarks take it off.
	cpu atomic.Int64
}

func record(t testing.TB, name string, args ...string) *recorder {
	t.Helper()
	cmd := exec.Command(name, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r := &recorder{}
	r.cond = sync.NewCond(&r.mu)
	go func() {
		runtime.LockOSThread()
		b := make([]byte, 4800)
		var odd []byte
		for {
			n, err := stdout.Read(b)
			chunk := append(odd, b[:n]...)
			odd = nil
			if len(chunk)%2 == 1 {
				odd = []byte{chunk[len(chunk)-1]}
				chunk = chunk[:len(chunk)-1]
			}
			r.mu.Lock()
			for i := 0; i < len(chunk); i += 2 {
				r.buf = append(r.buf, int16(binary.LittleEndian.Uint16(chunk[i:])))
			}
			// Sample n was recorded no later than now - (len-n)/rate; a
			// chunk read late (a loaded machine) only makes that bound
			// looser, so the earliest bound is the best.
			if len(chunk) > 0 {
				at := time.Now().Add(-time.Duration(len(r.buf)) * time.Second / SampleRate)
				if r.t0.IsZero() || at.Before(r.t0) {
					r.t0 = at
				}
			}
			if err != nil {
				r.done = true
			}
			r.cond.Broadcast()
			r.mu.Unlock()
			r.cpu.Store(int64(threadCPU()))
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s stderr: %s", name, stderr.String())
		}
	})
	return r
}

// wait blocks until at least n samples are recorded and returns a copy.
func (r *recorder) wait(t testing.TB, n int) []int16 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.buf) < n && !r.done {
		r.cond.Wait()
	}
	if len(r.buf) < n {
		t.Fatalf("recording ended after %d samples, want %d", len(r.buf), n)
	}
	return append([]int16(nil), r.buf...)
}

// waitSound blocks until the recording holds at least n samples that are
// not silence.
func (r *recorder) waitSound(t testing.TB, n int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	sound, seen := 0, 0
	for {
		for _, v := range r.buf[seen:] {
			if v != 0 {
				sound++
			}
		}
		seen = len(r.buf)
		if sound >= n {
			return
		}
		if r.done {
			t.Fatalf("recording ended with %d samples of sound, want %d", sound, n)
		}
		r.cond.Wait()
	}
}

// at is the index of the sample recorded at t: by the recorder's clock,
// not by how much it has read so far, which lags on a loaded machine.
func (r *recorder) at(t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(t.Sub(r.t0) * SampleRate / time.Second)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf)
}

// TestPlaybackReachesSpeaker plays a chirp through the Player and the
// output stream, records the speaker sink's monitor with parec, and finds
// the chirp there by cross-correlation: it arrived intact, this late.
func TestPlaybackReachesSpeaker(t *testing.T) { eachBackend(t, testPlaybackReachesSpeaker) }

func testPlaybackReachesSpeaker(t *testing.T, b Backend) {
	rec := record(t, "parec", "--device=spk.monitor", "--rate=24000", "--channels=1",
		"--format=s16le", "--raw", "--latency-msec=10")
	rec.wait(t, 1) // the monitor is live

	stopped := make(chan struct{}, 1)
	p := NewPlayer(PlayerConfig{OnPlaying: func(on bool) {
		if !on {
			select {
			case stopped <- struct{}{}:
			default:
			}
		}
	}})
	s, err := Open(t.Context(), b, DeviceConfig{}, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	ref := chirp(SampleRate/4, 300, 3000, 0.5)
	start := rec.len()
	wrote := time.Now()
	p.Write("item_1", pcmOf(ref))
	p.Finish()
	<-stopped
	handed := time.Since(wrote)
	got := rec.wait(t, start+len(ref)+SampleRate) // and a second to spare
	checkArrived(t, "played", got[start:], ref)
	t.Logf("device output latency %v; handed to the device in %v; stats %+v %+v",
		s.OutputLatency(), handed, p.Stats(), s.Stats())
	if ps, ok := s.(*PulseStreams); ok {
		t.Logf("the server granted %+v", ps.Attrs())
	}
	if st := p.Stats(); st.Played != uint64(len(ref)) || st.Underruns != 0 {
		t.Errorf("player stats %+v: want all %d samples played, no underrun", st, len(ref))
	}
}

// TestCaptureFromMic plays a chirp into the mic sink with pacat and finds
// it in the frames Capture delivers from the input stream.
func TestCaptureFromMic(t *testing.T) { eachBackend(t, testCaptureFromMic) }

func testCaptureFromMic(t *testing.T, b Backend) {
	c := NewCapture(CaptureConfig{Depth: 500})
	s, err := Open(t.Context(), b, DeviceConfig{}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var got []int16
	go func() {
		for f := range c.Frames() {
			mu.Lock()
			for i := 0; i < len(f); i += 2 {
				got = append(got, int16(binary.LittleEndian.Uint16(f[i:])))
			}
			cond.Broadcast()
			mu.Unlock()
		}
	}()
	waitFor := func(n int) []int16 {
		mu.Lock()
		defer mu.Unlock()
		for len(got) < n {
			cond.Wait()
		}
		return append([]int16(nil), got...)
	}
	waitFor(FrameSamples) // capture is live

	ref := chirp(SampleRate/4, 300, 3000, 0.5)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	mu.Lock()
	start := len(got)
	mu.Unlock()
	cmd := exec.CommandContext(ctx, "pacat", "--playback", "--device=mic", "--rate=24000", "--channels=1",
		"--format=s16le", "--raw", "--latency-msec=100")
	cmd.Stdin = bytes.NewReader(pcmOf(ref))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pacat: %v: %s", err, out)
	}
	all := waitFor(start + len(ref) + SampleRate)
	s.Close()
	c.Close()
	checkArrived(t, "captured", all[start:], ref)
	t.Logf("capture stats %+v; device %+v", c.Stats(), s.Stats())
	if ps, ok := s.(*PulseStreams); ok {
		t.Logf("the server granted %+v", ps.Attrs())
	}
}

// checkArrived asserts that ref is in rec: whole, or (on a loaded machine
// that inserted a gap) in 50 ms pieces each found sample for sample, at
// most two of them damaged. It logs the latency and any gap.
func checkArrived(t *testing.T, what string, rec, ref []int16) {
	t.Helper()
	lag, score := crossCorrelate(rec, ref)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Second / SampleRate }
	if score >= 0.99 {
		t.Logf("%s: chirp whole at +%v (score %.4f)", what, ms(lag), score)
		if ms(lag) > time.Second {
			t.Errorf("%s: chirp arrived %v late", what, ms(lag))
		}
		return
	}
	first, gap, scores := segmentMatch(rec, ref, SampleRate/20)
	t.Logf("%s: whole-chirp score %.3f; in pieces: first at +%v, gaps %v, scores %.3f", what, score, ms(first), ms(gap), scores)
	if n := intact(scores); n < len(scores)-2 {
		t.Fatalf("%s: only %d of %d pieces of the chirp arrived intact", what, n, len(scores))
	}
	if ms(first) > time.Second {
		t.Errorf("%s: chirp arrived %v late", what, ms(first))
	}
}

// TestBargeInSilence plays a long tone, flushes the Player once the tone
// is heard on spk.monitor, and measures in the recording how long the
// speaker kept sounding: barge-in → silence.
func TestBargeInSilence(t *testing.T) { eachBackend(t, testBargeInSilence) }

func testBargeInSilence(t *testing.T, b Backend) {
	rec := record(t, "parec", "--device=spk.monitor", "--rate=24000", "--channels=1",
		"--format=s16le", "--raw", "--latency-msec=10")
	rec.wait(t, 1)
	p := NewPlayer(PlayerConfig{})
	s, err := Open(t.Context(), b, DeviceConfig{}, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	tone := chirp(3*SampleRate, 440, 440, 0.5)
	start := rec.len()
	p.Write("item_1", pcmOf(tone))
	loud := func(x []int16) int { // index of the first loud sample, or -1
		for i, v := range x {
			if v > 4000 || v < -4000 {
				return i
			}
		}
		return -1
	}
	// Wait until the tone has been sounding for 200 ms.
	heard := -1
	for n := start + FrameSamples; heard < 0 || n < heard+SampleRate/5; n += FrameSamples {
		got := rec.wait(t, n)
		if heard < 0 {
			if i := loud(got[start:]); i >= 0 {
				heard = start + i
			}
		}
	}
	item, ms, ok := p.Flush()
	flushAt := rec.at(time.Now())
	got := rec.wait(t, flushAt+SampleRate/2)
	last := -1
	for i := len(got) - 1; i >= flushAt; i-- {
		if got[i] > 1000 || got[i] < -1000 {
			last = i
			break
		}
	}
	tail := time.Duration(max(0, last-flushAt)) * time.Second / SampleRate
	t.Logf("flushed %s at %d ms heard (ok %v); speaker silent %v after the flush (recorder chunks 10 ms; device output latency %v)",
		item, ms, ok, tail, s.OutputLatency())
	if !ok || item != "item_1" || ms < 150 {
		t.Errorf("Flush = %q %d ms %v, want item_1 and at least the 200 ms heard less latency", item, ms, ok)
	}
	if tail > 100*time.Millisecond {
		t.Errorf("speaker kept sounding %v after barge-in, want under 100 ms", tail)
	}
}

// TestEchoGated: a room echo (module-loopback spk.monitor → mic) carries
// what the Player plays into the mic. In full duplex Capture hears the
// chirp back (the loop works); in half duplex the gate keeps every frame
// of it out, through the hold, so the agent cannot interrupt itself.
func TestEchoGated(t *testing.T) { eachBackend(t, testEchoGated) }

func testEchoGated(t *testing.T, b Backend) {
	out, err := exec.Command("pactl", "load-module", "module-loopback",
		"source=spk.monitor", "sink=mic", "latency_msec=30").Output()
	if err != nil {
		t.Fatalf("load module-loopback: %v", err)
	}
	idx := string(bytes.TrimSpace(out))
	t.Cleanup(func() { exec.Command("pactl", "unload-module", idx).Run() })

	for _, tc := range []struct {
		mode     Mode
		wantEcho bool
	}{{FullDuplex, true}, {HalfDuplex, false}} {
		t.Run(map[Mode]string{FullDuplex: "full", HalfDuplex: "half"}[tc.mode], func(t *testing.T) {
			g := NewGate(GateConfig{Mode: tc.mode})
			stopped := make(chan struct{}, 1)
			p := NewPlayer(PlayerConfig{Gate: g, OnPlaying: func(on bool) {
				if !on {
					select {
					case stopped <- struct{}{}:
					default:
					}
				}
			}})
			c := NewCapture(CaptureConfig{Gate: g, Depth: 1000})
			s, err := Open(t.Context(), b, DeviceConfig{}, c, p)
			if err != nil {
				t.Fatal(err)
			}
			<-c.Frames() // capture is live (the gate is open before playback)
			ref := chirp(SampleRate/2, 300, 3000, 0.5)
			p.Write("item_1", pcmOf(ref))
			p.Finish()
			<-stopped
			// Collect a second past the end of playback: hold, echo tail, and more.
			var got []int16
			for range 50 {
				f := <-c.Frames()
				for i := 0; i < len(f); i += 2 {
					got = append(got, int16(binary.LittleEndian.Uint16(f[i:])))
				}
			}
			s.Close()
			c.Close()
			for f := range c.Frames() {
				for i := 0; i < len(f); i += 2 {
					got = append(got, int16(binary.LittleEndian.Uint16(f[i:])))
				}
			}
			lag, score := crossCorrelate(got, ref[:SampleRate/10])
			peak := Measure(got).Peak
			passed, dropped := g.Counts()
			t.Logf("%d samples captured, peak %.1f dBFS; echo of the chirp's start: score %.3f at %d; gate passed %d dropped %d",
				len(got), peak, score, lag, passed, dropped)
			if tc.wantEcho && score < 0.9 {
				t.Fatalf("the loopback did not carry the chirp into the mic (score %.3f): the negative case proves nothing", score)
			}
			if !tc.wantEcho && peak > -30 {
				t.Errorf("echo passed the half-duplex gate: captured peak %.1f dBFS", peak)
			}
		})
	}
}

func TestPeriodFrames(t *testing.T) {
	for _, tt := range []struct {
		d, def time.Duration
		want   int
	}{
		{0, DefaultInputPeriod, 2 * FrameSamples},
		{0, DefaultOutputPeriod, FrameSamples},
		{20 * time.Millisecond, DefaultInputPeriod, FrameSamples},
		{40 * time.Millisecond, DefaultOutputPeriod, 2 * FrameSamples},
		{49 * time.Millisecond, 0, 2 * FrameSamples},         // whole frames, rounded
		{51 * time.Millisecond, 0, 3 * FrameSamples},         // up from half a frame
		{time.Millisecond, DefaultInputPeriod, FrameSamples}, // never less than one
		{-time.Second, DefaultOutputPeriod, FrameSamples},
	} {
		if got := periodFrames(tt.d, tt.def); got != tt.want {
			t.Errorf("periodFrames(%v, %v) = %d, want %d", tt.d, tt.def, got, tt.want)
		}
	}
}
