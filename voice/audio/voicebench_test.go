//go:build portaudio

package audio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/voicetest"
)

// standInReplyMS is the length of every reply of the benchmark's stand-in.
const standInReplyMS = 3000

// TestVoiceStandInProcess is BenchmarkVoiceSession's stand-in server, run
// in a process of its own so that the benchmark's CPU time is the
// client's alone. It prints its URLs as one JSON line and serves until
// its stdin closes.
func TestVoiceStandInProcess(t *testing.T) {
	if os.Getenv("MNEMO_VOICE_STANDIN") == "" {
		t.Skip("the stand-in process of BenchmarkVoiceSession")
	}
	turns := make([]voicetest.Turn, 100)
	for i := range turns {
		turns[i] = voicetest.Turn{User: "tell me", Reply: voicetest.Reply{
			Transcript: "The garden is quiet this morning and the tomatoes are doing well.", AudioMS: standInReplyMS}}
	}
	srv := voicetest.Start(t, voicetest.Options{Turns: turns})
	json.NewEncoder(os.Stdout).Encode(map[string]string{"url": srv.URL(), "secrets": srv.SecretsURL()})
	io.Copy(io.Discard, os.Stdin)
}

// remoteCreds mints from a stand-in in another process.
type remoteCreds struct{ url, secrets string }

func (c *remoteCreds) Credential(ctx context.Context) (voice.Credential, voice.Settings, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.secrets, strings.NewReader(`{"expires_after":{"seconds":600}}`))
	if err != nil {
		return voice.Credential{}, voice.Settings{}, err
	}
	req.Header.Set("Authorization", "Bearer test-api-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return voice.Credential{}, voice.Settings{}, err
	}
	defer resp.Body.Close()
	var out struct {
		Value     string `json:"value"`
		ExpiresAt int64  `json:"expires_at"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return voice.Credential{}, voice.Settings{}, fmt.Errorf("mint: HTTP %d: %w", resp.StatusCode, err)
	}
	return voice.Credential{Value: out.Value, ExpiresAt: time.Unix(out.ExpiresAt, 0), URL: c.url,
		Model: "grok-voice-latest", Dialect: voice.DialectXAI}, voice.Settings{}, nil
}

func startStandInProcess(b *testing.B) *remoteCreds {
	cmd := exec.Command(os.Args[0], "-test.run=^TestVoiceStandInProcess$")
	cmd.Env = append(os.Environ(), "MNEMO_VOICE_STANDIN=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var urls map[string]string
		if json.Unmarshal(sc.Bytes(), &urls) == nil && urls["url"] != "" {
			go io.Copy(io.Discard, stdout)
			return &remoteCreds{url: urls["url"], secrets: urls["secrets"]}
		}
	}
	b.Fatalf("the stand-in process printed no URLs: %v", sc.Err())
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU is the calling thread's CPU time (Linux RUSAGE_THREAD; 0
// elsewhere). Lock the goroutine to its thread for it to mean anything.
func threadCPU() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDevices are the device set-ups the benchmarks compare, in one run
// so a shared machine's load hits them alike: mnemo before pacing (40 ms
// capture, 20 ms playback at the pulse plugin's 40 ms output latency,
// waiting inside PortAudio's blocking calls), paced in Go at 60 ms output
// latency with the output always running (always-on), and the defaults
// (the same, the output stopped after 500 ms of silence).
//
// Then the backends A/B: portaudio is PortAudio's defaults (as
// "default" was), pulse the PulseAudio backend's.
func benchDevices() []benchDevice {
	return []benchDevice{
		{name: "blocking", backend: BackendPortAudio, cfg: DeviceConfig{OutputLatency: 40 * time.Millisecond, blocking: true}},
		{name: "always-on", backend: BackendPortAudio, cfg: DeviceConfig{OutputHangover: -1}},
		{name: "portaudio", backend: BackendPortAudio, cfg: DeviceConfig{}},
		{name: "pulse", backend: BackendPulse, cfg: DeviceConfig{}},
	}
}

type benchDevice struct {
	name    string
	backend Backend
	cfg     DeviceConfig
	// only opens one direction: "in" or "out" (BenchmarkVoiceDevicesIdle)
	only string
}

// benchRounds is how many times BenchmarkVoiceSession runs each set-up,
// interleaved: MNEMO_VOICE_ROUNDS, default 2.
func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("MNEMO_VOICE_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 2
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// BenchmarkVoiceSession measures, for each of benchDevices, a 30 s voice session at the desk
// (headphones mode, the stand-in in its own process): the user speaks
// (espeak-ng into the mic sink), the agent answers 3 s of audio, every
// third answer the user interrupts after a second. Reported:
//   - send_p50_ms/send_max_ms: mic frames taken from Capture (Next: the
//     frames waiting, joined) → their append written to the socket
//     (SendAudio returned); queue_max is the most frames ever waiting in
//     Capture when the pump came for them (beyond a device buffer's, each
//     adds 20 ms);
//   - heard_ms: a reply's first delta received → its first sample on the
//     speaker sink's recording (Player pre-buffer, the 20 ms device
//     buffer, the device's output latency, PulseAudio and the recorder);
//   - bargein_ms: speech_started received → the speaker silent in the
//     recording;
//   - cpu_%: client CPU (getrusage of this process: session, capture,
//     player, PortAudio, less the test's own threads: recorder, speaking,
//     cross-correlation) per wall second, in % of one core;
//   - underruns/min: the Player's and the device's.
//
// Run it with make bench-voice (no -race: the race detector costs 5-10x CPU).
func BenchmarkVoiceSession(b *testing.B) {
	for range benchRounds() {
		for _, dev := range benchDevices() {
			b.Run(dev.name, func(b *testing.B) { benchVoiceSession(b, dev.backend, dev.cfg) })
		}
	}
}

func benchVoiceSession(b *testing.B, backend Backend, cfg DeviceConfig) {
	// The test's own work (speaking, waiting, cross-correlating) on one
	// thread, the recorder's on another: both are taken off the client's CPU.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	needAudio(b)
	user := speech(b, "en-us", "Tell me how the garden is doing this morning.")
	stop := speech(b, "en-us", "Wait.")
	creds := startStandInProcess(b)
	rec := record(b, "parec", "--device=spk.monitor", "--rate=24000", "--channels=1",
		"--format=s16le", "--raw", "--latency-msec=10")
	rec.wait(b, 1)
	d := openDeskOn(b, backend, creds, http.DefaultClient, FullDuplex, cfg)
	var firstRec, flushRec int
	d.mu.Lock()
	d.onFirst = func() { firstRec = rec.at(time.Now()) }
	d.onFlush = func() { flushRec = rec.at(time.Now()) }
	d.mu.Unlock()
	d.await(b, "session.updated", 10*time.Second, func() bool { return d.ready })

	const session = 30 * time.Second
	probe := replyRamp(SampleRate / 10)
	var heard, barge []time.Duration
	start, cpu0, own0, rec0 := time.Now(), cpuTime(), threadCPU(), rec.cpu.Load()
	turns := 0
	for turn := 1; time.Since(start) < session; turn++ {
		turns = turn
		d.mu.Lock()
		replies, flushes := len(d.done), d.flushAt
		firstRec = 0
		d.mu.Unlock()
		say(b, user)
		d.await(b, "a reply", 20*time.Second, func() bool { return firstRec > 0 })
		d.mu.Lock()
		from := firstRec
		d.mu.Unlock()
		want := replies + 1
		got := rec.wait(b, from+SampleRate/2)
		if lag, score := locate(got[from:], probe, len(probe)); score > 0.999 {
			heard = append(heard, time.Duration(lag)*time.Second/SampleRate)
		}
		if turn%3 == 0 {
			rec.wait(b, from+SampleRate) // a second in
			say(b, stop)
			d.await(b, "barge-in", 10*time.Second, func() bool { return d.flushAt != flushes })
			d.mu.Lock()
			at := flushRec
			d.mu.Unlock()
			// The answer to "wait" starts only after 500 ms of silence.
			last := lastSound(rec.wait(b, at+SampleRate/2)[:at+SampleRate/2], at)
			barge = append(barge, time.Duration(last-at)*time.Second/SampleRate)
			want++ // the cancelled reply, then the answer to "wait"
		}
		// The reply (or the one to the interruption) plays out.
		d.await(b, "the reply to end", 20*time.Second, func() bool { return len(d.done) >= want && !d.p.Playing() })
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	harness := threadCPU() - own0 + time.Duration(rec.cpu.Load()-rec0)
	cpu -= harness
	if len(heard) == 0 || len(barge) == 0 {
		b.Fatalf("%d turns in %v: %d replies heard, %d barge-ins measured", turns, wall, len(heard), len(barge))
	}
	d.mu.Lock()
	sends, frames, maxQueue := slices.Clone(d.sends), d.frames, d.maxQueue
	d.mu.Unlock()
	ps, ds := d.p.Stats(), d.st.Stats()
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	mean := func(xs []time.Duration) time.Duration {
		var s time.Duration
		for _, x := range xs {
			s += x
		}
		return s / time.Duration(max(1, len(xs)))
	}
	b.ReportMetric(ms(pct(sends, 0.5)), "send_p50_ms")
	b.ReportMetric(ms(slices.Max(sends)), "send_max_ms")
	b.ReportMetric(float64(maxQueue), "queue_max")
	b.ReportMetric(ms(mean(heard)), "heard_ms")
	b.ReportMetric(ms(slices.Max(barge)), "bargein_max_ms")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu_%")
	b.ReportMetric(float64(ps.Underruns+ds.OutputUnderflows)/wall.Minutes(), "underruns/min")
	b.Logf("%v session: %d mic frames sent in %d appends (p50 %v, p99 %v, max %v; queue max %d); replies heard after %v (each %v; device output latency %v); barge-in silent after %v; CPU %v (%.2f%% of a core; the test's own %v taken off); player %+v; device %+v",
		wall.Round(time.Millisecond), frames, len(sends), pct(sends, 0.5), pct(sends, 0.99), slices.Max(sends), maxQueue,
		mean(heard), heard, d.st.OutputLatency(), barge, cpu, 100*cpu.Seconds()/wall.Seconds(), harness, ps, ds)
}

// BenchmarkVoiceDevicesIdle is the device layer's share of
// BenchmarkVoiceSession's CPU: both streams open, playing and capturing
// silence, nothing else, for each of benchDevices in turn, three rounds
// interleaved (the waits are the measurement windows, not
// synchronisation).
func BenchmarkVoiceDevicesIdle(b *testing.B) {
	needAudio(b)
	const window, rounds = 5 * time.Second, 3
	devs := benchDevices()
	for _, dev := range benchDevices() {
		devs = append(devs, benchDevice{name: "in-only-" + dev.name, backend: dev.backend, cfg: dev.cfg, only: "in"},
			benchDevice{name: "out-only-" + dev.name, backend: dev.backend, cfg: dev.cfg, only: "out"})
	}
	cpus := make([][]float64, len(devs))
	for round := range rounds {
		for i, dev := range devs {
			c := NewCapture(CaptureConfig{})
			p := NewPlayer(PlayerConfig{})
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				for range c.Frames() {
				}
			}()
			oc, op := c, p
			switch dev.only {
			case "in":
				op = nil
			case "out":
				oc = nil
			}
			st, err := Open(b.Context(), dev.backend, dev.cfg, oc, op)
			if err != nil {
				b.Fatal(err)
			}
			start, cpu0 := time.Now(), cpuTime()
			time.Sleep(window)
			wall, cpu := time.Since(start), cpuTime()-cpu0
			st.Close()
			c.Close()
			<-drained
			pc := 100 * cpu.Seconds() / wall.Seconds()
			cpus[i] = append(cpus[i], pc)
			b.Logf("round %d %s: idle %v: CPU %v (%.2f%% of a core); output latency %v; capture %+v; device %+v",
				round, dev.name, wall.Round(time.Millisecond), cpu, pc, st.OutputLatency(), c.Stats(), st.Stats())
		}
	}
	for i, dev := range devs {
		slices.Sort(cpus[i])
		b.ReportMetric(cpus[i][len(cpus[i])/2], dev.name+"_cpu_%")
	}
}
