//go:build portaudio

package audio

import (
	"bytes"
	"net/http"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/voicetest"
)

// testDesk is the smallest pump between a voice.Session and the devices:
// mic frames from Capture go to SendAudio, reply audio goes to the
// Player, the server's speech_started flushes playback and truncates the
// item at the point heard (barge-in). The client's real orchestrator is
// tui/voicectl; this one exists so the audio path can be tested and
// measured on its own. It records when things happened.
type testDesk struct {
	s  *voice.Session
	p  *Player
	c  *Capture
	g  *Gate
	st DeviceStreams

	mu       sync.Mutex
	cond     *sync.Cond
	ready    bool
	speech   int       // speech_started events
	done     []string  // response.done statuses
	firstAt  time.Time // the first reply delta arrived
	flushAt  time.Time // barge-in flushed playback
	flushed  int       // ms heard at the flush (the truncate sent)
	onFlush  func()    // called right after the flush, locked
	onFirst  func()    // called when the first delta of each reply arrives, locked
	lastResp string
	cut      map[string]bool // items flushed by barge-in: their late audio is dropped, as tui/voicectl's Desk drops it
	voice    []int16         // if set, played in place of the reply audio (see speak)
	sends    []time.Duration // each SendAudio (the frames waiting, joined)
	frames   int             // mic frames sent
	maxQueue int             // frames waiting in Capture when the pump took one
	echoRMS  float64         // loudest frame sent while the agent played, dBFS
	closed   error
	spoken   int // samples of voice played so far
}

// speak is the next n samples of d.voice (silence past its end), locked.
// The stand-in's reply audio is a ramp, good for finding it sample for
// sample but nothing like a voice; an echo canceller is built for speech,
// so the echo-cancel test plays speech in its place, delta for delta.
func (d *testDesk) speak(n int) []byte {
	out := make([]int16, n)
	if d.spoken < len(d.voice) {
		copy(out, d.voice[d.spoken:])
	}
	d.spoken += n
	return pcmOf(out)
}

// openDesk dials the stand-in and opens the default devices in mode.
func openDesk(t testing.TB, b Backend, srv *voicetest.Server, mode Mode) *testDesk {
	return openDeskWith(t, b, &voicetest.Credentials{Server: srv}, srv.HTTPClient(), mode)
}

// openDeskWith dials with creds over client and opens the default devices.
func openDeskWith(t testing.TB, b Backend, creds voice.Credentials, client *http.Client, mode Mode) *testDesk {
	t.Helper()
	return openDeskOn(t, b, creds, client, mode, DeviceConfig{})
}

// openDeskOn is openDeskWith on the devices cfg sets up.
func openDeskOn(t testing.TB, b Backend, creds voice.Credentials, client *http.Client, mode Mode, cfg DeviceConfig) *testDesk {
	t.Helper()
	s, err := voice.Dial(t.Context(), creds, voice.Options{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	d := &testDesk{s: s, g: NewGate(GateConfig{Mode: mode}), echoRMS: MinDBFS}
	d.cond = sync.NewCond(&d.mu)
	// Playback starting and stopping wakes await; the Player calls this
	// locked, and await's conditions ask the Player with the desk locked,
	// so the wake-up takes the desk's lock on its own goroutine.
	d.p = NewPlayer(PlayerConfig{Gate: d.g, OnPlaying: func(bool) {
		go func() {
			d.mu.Lock()
			d.cond.Broadcast()
			d.mu.Unlock()
		}()
	}})
	d.c = NewCapture(CaptureConfig{Gate: d.g})
	d.st, err = Open(t.Context(), b, cfg, d.c, d.p)
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		for {
			q := len(d.c.Frames())
			f, frames, ok := d.c.Next() // as tui/voicectl's pump does
			if !ok {
				return
			}
			var lvl float64 = MinDBFS
			if d.p.Playing() {
				lvl = Measure(samplesOf(f)).RMS
			}
			t0 := time.Now()
			err := s.SendAudio(f)
			dt := time.Since(t0)
			d.mu.Lock()
			d.sends = append(d.sends, dt)
			d.frames += frames
			d.maxQueue = max(d.maxQueue, q)
			d.echoRMS = max(d.echoRMS, lvl)
			d.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	evDone := make(chan struct{})
	go func() {
		defer close(evDone)
		for ev := range s.Events() {
			d.handle(ev)
		}
	}()
	t.Cleanup(func() {
		d.st.Close()
		d.c.Close()
		<-pumped
		s.Close()
		<-evDone
	})
	return d
}

func (d *testDesk) handle(ev voice.Event) {
	switch ev := ev.(type) {
	case voice.SessionReady:
		d.mu.Lock()
		d.ready = true
	case voice.AgentAudio:
		d.mu.Lock()
		if d.cut[ev.ItemID] {
			// Queued before the session learnt of the barge-in.
			break
		}
		if d.firstAt.IsZero() {
			d.firstAt = time.Now()
		}
		if ev.ResponseID != d.lastResp {
			d.lastResp = ev.ResponseID
			if d.onFirst != nil {
				d.onFirst()
			}
		}
		pcm := ev.PCM
		if d.voice != nil {
			pcm = d.speak(len(pcm) / 2)
		}
		d.mu.Unlock()
		d.p.Write(ev.ItemID, pcm)
		d.mu.Lock()
	case voice.ResponseDone:
		d.p.Finish()
		d.mu.Lock()
		d.done = append(d.done, ev.Status)
	case voice.SpeechStarted:
		var heard int
		var item string
		flushed := false
		if d.p.Replying() {
			var ms int
			var ok bool
			item, ms, ok = d.p.Flush()
			if ok {
				d.s.InterruptItem(item, ms)
				heard, flushed = ms, true
			}
		}
		d.mu.Lock()
		d.speech++
		if flushed {
			if d.cut == nil {
				d.cut = make(map[string]bool)
			}
			d.cut[item] = true
			d.flushAt, d.flushed = time.Now(), heard
			if d.onFlush != nil {
				d.onFlush()
			}
		}
	case voice.Closed:
		d.mu.Lock()
		d.closed = ev.Err
	default:
		return
	}
	d.cond.Broadcast()
	d.mu.Unlock()
}

// await blocks until cond (called with the desk locked) holds, or fails
// the test after limit: the stand-in answers in well under that.
func (d *testDesk) await(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	timer := time.AfterFunc(limit, func() {
		d.mu.Lock()
		d.cond.Broadcast()
		d.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(limit)
	d.mu.Lock()
	defer d.mu.Unlock()
	for !cond() {
		if d.closed != nil {
			t.Fatalf("waiting for %s: session closed: %v", what, d.closed)
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("no %s after %v", what, limit)
		}
		d.cond.Wait()
	}
}

// say plays speech into the mic sink, as a user at the desk, and returns
// when it has been played.
func say(t testing.TB, pcm []int16) {
	t.Helper()
	cmd := exec.Command("pacat", "--playback", "--device=mic", "--rate=24000", "--channels=1",
		"--format=s16le", "--raw", "--latency-msec=20")
	cmd.Stdin = bytes.NewReader(pcmOf(pcm))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pacat: %v: %s", err, out)
	}
}

// samplesOf decodes little-endian int16 PCM.
func samplesOf(b []byte) []int16 {
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
	}
	return out
}

// replyRamp is the first n samples of every scripted reply.
func replyRamp(n int) []int16 {
	out := make([]int16, n)
	for k := range out {
		out[k] = voicetest.ReplySample(k)
	}
	return out
}
