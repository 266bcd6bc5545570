package audio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jfreymuth/pulse/proto"
)

// The PulseAudio backend talks the server's native protocol over its
// socket from Go (github.com/jfreymuth/pulse/proto, MIT): one goroutine
// reads the socket, the server pushes capture fragments and asks for
// playback bytes when it has room for them, and nothing polls. Through
// PortAudio every sample also crossed ALSA's pulse plugin and its thread,
// and libpulse's (DESIGN.md, "Voice measurements").

// ErrNoPulse: no PulseAudio server answers where the environment says
// one lives.
var ErrNoPulse = errors.New("no PulseAudio server answers")

// pulseDialTimeout bounds one attempt to reach a server.
const pulseDialTimeout = 500 * time.Millisecond

// PulseServers are the PulseAudio server strings to try, as libpulse
// finds them: $PULSE_SERVER's entries (a "{host}" prefix is dropped), else
// $XDG_RUNTIME_DIR/pulse/native. Each is "unix:PATH" or "tcp:HOST:PORT".
func PulseServers(getenv func(string) string) []string {
	if env := strings.TrimSpace(getenv("PULSE_SERVER")); env != "" {
		var out []string
		for _, f := range strings.Fields(env) {
			if s, ok := normServer(f); ok {
				out = append(out, s)
			}
		}
		return out
	}
	if dir := getenv("XDG_RUNTIME_DIR"); dir != "" {
		return []string{"unix:" + strings.TrimRight(dir, "/") + "/pulse/native"}
	}
	return nil
}

// normServer turns one server string into "unix:PATH" or "tcp:HOST:PORT"
// (tcp4:/tcp6: kept); false for what is not one.
func normServer(s string) (string, bool) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", false
		}
		s = s[end+1:]
	}
	switch {
	case strings.HasPrefix(s, "/"):
		return "unix:" + s, true
	case strings.HasPrefix(s, "unix:") && len(s) > len("unix:"):
		return s, true
	}
	for _, pre := range []string{"tcp:", "tcp4:", "tcp6:"} {
		if rest, ok := strings.CutPrefix(s, pre); ok {
			hp, ok := hostPort(rest)
			return pre + hp, ok
		}
	}
	if !strings.Contains(s, ":") {
		hp, ok := hostPort(s) // a bare host name
		return "tcp:" + hp, ok
	}
	return "", false
}

// hostPort is "host:port", PulseAudio's port 4713 when s has none; false
// when s names no host.
func hostPort(s string) (string, bool) {
	if _, _, err := net.SplitHostPort(s); err != nil {
		s = net.JoinHostPort(strings.Trim(s, "[]"), "4713")
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil || host == "" || strings.ContainsAny(host, "[]/") {
		return "", false
	}
	return s, true
}

// serverAddr splits a normalised server string into net.Dial's arguments.
func serverAddr(s string) (network, addr string) {
	network, addr, _ = strings.Cut(s, ":")
	return network, addr
}

// ProbePulse returns the first of PulseServers that accepts a connection.
// It only connects: a server that is there but refuses us says why when
// the streams open.
func ProbePulse(ctx context.Context, getenv func(string) string) (string, error) {
	servers := PulseServers(getenv)
	if len(servers) == 0 {
		return "", fmt.Errorf("%w: neither PULSE_SERVER nor XDG_RUNTIME_DIR is set", ErrNoPulse)
	}
	var errs []string
	for _, s := range servers {
		d := net.Dialer{Timeout: pulseDialTimeout}
		network, addr := serverAddr(s)
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil {
			conn.Close()
			return s, nil
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("%w at %s (%s)", ErrNoPulse, strings.Join(servers, ", "), strings.Join(errs, "; "))
}

// ChooseBackend resolves want: BackendAuto is pulse when a PulseAudio
// server answers and PortAudio otherwise (when this build has it:
// havePortAudio). For pulse it also returns the server that answered.
func ChooseBackend(ctx context.Context, want Backend, getenv func(string) string, havePortAudio bool) (Backend, string, error) {
	noPA := errors.New("this mnemo is built without PortAudio (install portaudio19-dev and pkg-config: `make voice-deps`, then `make build`)")
	switch want {
	case BackendPortAudio:
		if !havePortAudio {
			return "", "", fmt.Errorf("audio backend portaudio: %w", noPA)
		}
		return BackendPortAudio, "", nil
	case BackendPulse:
		s, err := ProbePulse(ctx, getenv)
		if err != nil {
			return "", "", fmt.Errorf("audio backend pulse: %w", err)
		}
		return BackendPulse, s, nil
	case BackendAuto, "":
		s, err := ProbePulse(ctx, getenv)
		if err == nil {
			return BackendPulse, s, nil
		}
		if havePortAudio {
			return BackendPortAudio, "", nil
		}
		return "", "", fmt.Errorf("%w; %w", err, noPA)
	}
	return "", "", fmt.Errorf("audio backend %q: use auto, pulse or portaudio", want)
}

// pulseConn is one connection to the server.
type pulseConn struct {
	c    *proto.Client
	conn net.Conn
}

// dialPulse connects to server ("" : ProbePulse on the process's
// environment), with callback receiving what the server sends on its own
// (it runs on the socket's reader goroutine and must not make requests).
func dialPulse(ctx context.Context, server string, callback func(any)) (*pulseConn, error) {
	if server == "" {
		s, err := ProbePulse(ctx, os.Getenv)
		if err != nil {
			return nil, err
		}
		server = s
	}
	c, conn, err := proto.Connect(server)
	if err != nil {
		return nil, fmt.Errorf("pulseaudio at %s: %w", server, err)
	}
	// Set before the first request: the reader reads it once that request's
	// reply has passed through the client's lock.
	c.Callback = callback
	props := proto.PropList{
		"application.name":       proto.PropListString("mnemo"),
		"application.process.id": proto.PropListString(fmt.Sprint(os.Getpid())),
		"media.role":             proto.PropListString("phone"),
	}
	if err := c.Request(&proto.SetClientName{Props: props}, &proto.SetClientNameReply{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("pulseaudio at %s: %w", server, err)
	}
	return &pulseConn{c: c, conn: conn}, nil
}

func (pc *pulseConn) close() { pc.conn.Close() }

// pulseDevice is one sink or source.
type pulseDevice struct {
	name, desc string
	channels   int
	rate       uint32
}

// list returns the sources (input) or the sinks and the server's default.
func (pc *pulseConn) list(input bool) (devs []pulseDevice, def string, err error) {
	var info proto.GetServerInfoReply
	if err := pc.c.Request(&proto.GetServerInfo{}, &info); err != nil {
		return nil, "", fmt.Errorf("pulseaudio server info: %w", err)
	}
	if input {
		var l proto.GetSourceInfoListReply
		if err := pc.c.Request(&proto.GetSourceInfoList{}, &l); err != nil {
			return nil, "", fmt.Errorf("pulseaudio sources: %w", err)
		}
		for _, s := range l {
			devs = append(devs, pulseDevice{s.SourceName, propString(s.Properties, "device.description"), int(s.Channels), s.Rate})
		}
		return devs, info.DefaultSourceName, nil
	}
	var l proto.GetSinkInfoListReply
	if err := pc.c.Request(&proto.GetSinkInfoList{}, &l); err != nil {
		return nil, "", fmt.Errorf("pulseaudio sinks: %w", err)
	}
	for _, s := range l {
		devs = append(devs, pulseDevice{s.SinkName, propString(s.Properties, "device.description"), int(s.Channels), s.Rate})
	}
	return devs, info.DefaultSinkName, nil
}

func propString(p proto.PropList, key string) string {
	if v, ok := p[key]; ok {
		return v.String()
	}
	return ""
}

// pickPulse chooses a device by name as findDevice does for PortAudio: ""
// is the server's default; otherwise an exact name, else the one device
// whose name or description contains it (case-insensitive).
func pickPulse(devs []pulseDevice, name string, input bool) (string, error) {
	kind := "output (sink)"
	if input {
		kind = "input (source)"
	}
	if name == "" {
		return "", nil
	}
	var matches []string
	low := strings.ToLower(name)
	for _, d := range devs {
		if d.name == name {
			return d.name, nil
		}
		if strings.Contains(strings.ToLower(d.name), low) || strings.Contains(strings.ToLower(d.desc), low) {
			matches = append(matches, d.name)
		}
	}
	switch len(matches) {
	case 0:
		all := make([]string, len(devs))
		for i, d := range devs {
			all[i] = d.name
		}
		return "", fmt.Errorf("no %s device named %q (PulseAudio has: %s)", kind, name, strings.Join(all, ", "))
	case 1:
		return matches[0], nil
	}
	return "", fmt.Errorf("%s device %q is ambiguous: %s", kind, name, strings.Join(matches, ", "))
}

// PulseDevices lists the server's sources (inputs, monitors included) and
// sinks (outputs). server "" asks the environment (PulseServers).
func PulseDevices(ctx context.Context, server string) ([]Device, error) {
	pc, err := dialPulse(ctx, server, func(any) {})
	if err != nil {
		return nil, err
	}
	defer pc.close()
	var out []Device
	for _, input := range []bool{true, false} {
		devs, def, err := pc.list(input)
		if err != nil {
			return nil, err
		}
		for _, d := range devs {
			dev := Device{Name: d.name, Description: d.desc, Host: "PulseAudio", DefaultSampleRate: float64(d.rate)}
			if input {
				dev.Inputs, dev.DefaultInput = d.channels, d.name == def
			} else {
				dev.Outputs, dev.DefaultOutput = d.channels, d.name == def
			}
			out = append(out, dev)
		}
	}
	return out, nil
}

// PulseAttrs are the buffer attributes the server granted, in bytes of
// s16le mono at SampleRate (2 a sample).
type PulseAttrs struct {
	FragSize                        uint32 // capture: bytes a fragment
	TLength, MinReq, PreBuf, MaxLen uint32 // playback
	SinkLatency, SourceLatency      time.Duration
}

// PulseStreams are the capture and playback streams of one connection to
// a PulseAudio server: 24 kHz s16le mono, as the PortAudio Streams. The
// server pushes capture fragments (DeviceConfig.InputPeriod long) to the
// socket's reader, which hands them to the Capture; it asks for playback
// bytes (DeviceConfig.OutputPeriod at a time, keeping OutputLatency
// queued) and the play loop answers each request from the Player. After
// OutputHangover of silence the playback stream is corked and flushed
// until the next reply; a Player.Flush (barge-in) flushes what the server
// holds. Underflows the server reports are counted.
type PulseStreams struct {
	log     *slog.Logger
	pc      *pulseConn
	capture *Capture
	latency time.Duration
	attrs   PulseAttrs

	rec, play atomic.Uint32 // stream indexes (proto.Undefined: none)
	pending   atomic.Int64  // playback bytes the server asked for, not yet sent
	filledAt  atomic.Int64  // when the server's queue was last topped up (unix ns; 0: corked)
	flushing  atomic.Bool   // flushed, nothing sent since: the server's underflow is ours
	calmAt    atomic.Int64  // until then (unix ns) an underflow is still the flush's
	tlength   int           // samples the server keeps queued
	wake      chan struct{} // a playback request came
	inBuf     []int16       // the reader's: one fragment as samples
	odd       []byte        // the reader's: a fragment's trailing odd byte

	hangover int // silent samples before playback corks (0: never)

	// qmu orders what changes the server's playback queue: the play
	// loop's sends, corks and flushes, and a barge-in's flush, which must
	// see every sample read before it already sent and nothing read after
	// it sent yet.
	qmu     sync.Mutex
	cutDone uint64 // the last Player flush the stream was flushed for
	cutHeld int    // samples that flush dropped

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	oversent  atomic.Uint64 // the server's overflows: sent more than asked (a bug)
	underflow atomic.Uint64
	stops     atomic.Uint64
	errMu     sync.Mutex
	err       error
}

// The PulseAudio backend's playback buffer: the server keeps
// DefaultPulseOutputLatency queued and asks for DefaultPulseOutputPeriod
// at a time, so the play loop may be that much less a period late (a
// starved process on a loaded machine) before the speaker hears a gap.
// The depth costs no latency where it would be heard: a reply starts on
// an empty stream (corked after the hang-over, or its queued silence
// flushed), and barge-in flushes what the server holds.
const (
	DefaultPulseOutputLatency = 150 * time.Millisecond
	DefaultPulseOutputPeriod  = 40 * time.Millisecond
)

// pulseRetry is how soon the play loop comes back for the rest of a
// request the Player could not fill: reply audio arrives faster than real
// time, and the server holds most of its queue meanwhile.
const pulseRetry = 5 * time.Millisecond

// bytesOf is d of s16le mono in bytes, whole 20 ms frames.
func bytesOf(d, def time.Duration) uint32 { return uint32(2 * periodFrames(d, def)) }

// OpenPulse opens and starts the streams on a PulseAudio server: capture
// (when c is not nil) and playback (when p is not nil). It tells p the
// output latency. Close stops them.
func OpenPulse(ctx context.Context, cfg DeviceConfig, c *Capture, p *Player) (_ *PulseStreams, err error) {
	if c == nil && p == nil {
		return nil, errors.New("audio: nothing to open")
	}
	s := &PulseStreams{log: cfg.Logger, capture: c, wake: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.rec.Store(proto.Undefined)
	s.play.Store(proto.Undefined)
	s.pc, err = dialPulse(ctx, cfg.PulseServer, s.callback)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.pc.close()
		}
	}()
	spec := proto.SampleSpec{Format: proto.FormatInt16LE, Channels: 1, Rate: SampleRate}
	vol := proto.ChannelVolumes{uint32(proto.VolumeNorm)}
	if c != nil {
		devs, _, err := s.pc.list(true)
		if err != nil {
			return nil, err
		}
		name, err := pickPulse(devs, cfg.Input, true)
		if err != nil {
			return nil, err
		}
		req := proto.CreateRecordStream{
			SampleSpec: spec, ChannelMap: proto.ChannelMap{proto.ChannelMono},
			SourceIndex: proto.Undefined, SourceName: name,
			BufferMaxLength: proto.Undefined, BufferFragSize: bytesOf(cfg.InputPeriod, DefaultInputPeriod),
			Corked: true, AdjustLatency: true, DirectOnInputIndex: proto.Undefined,
			Properties:     proto.PropList{"media.name": proto.PropListString("mnemo voice: microphone")},
			ChannelVolumes: vol,
		}
		var rpl proto.CreateRecordStreamReply
		if err := s.pc.c.Request(&req, &rpl); err != nil {
			return nil, fmt.Errorf("open input %s: %w", orDefault(name), err)
		}
		s.rec.Store(rpl.StreamIndex)
		s.attrs.FragSize = rpl.BufferFragSize
		s.attrs.SourceLatency = time.Duration(rpl.SourceLatency) * time.Microsecond
		s.inBuf = make([]int16, SampleRate/10)
	}
	if p != nil {
		devs, _, err := s.pc.list(false)
		if err != nil {
			return nil, err
		}
		name, err := pickPulse(devs, cfg.Output, false)
		if err != nil {
			return nil, err
		}
		lat := cfg.OutputLatency
		if lat <= 0 {
			lat = DefaultPulseOutputLatency
		}
		minreq := bytesOf(cfg.OutputPeriod, DefaultPulseOutputPeriod)
		req := proto.CreatePlaybackStream{
			SampleSpec: spec, ChannelMap: proto.ChannelMap{proto.ChannelMono},
			SinkIndex: proto.Undefined, SinkName: name,
			BufferMaxLength:    proto.Undefined,
			BufferTargetLength: bytesOf(lat, DefaultPulseOutputLatency),
			// A stream that ran dry starts again after one period, not
			// after a whole target length.
			BufferPrebufferLength: minreq,
			BufferMinimumRequest:  minreq,
			SyncID:                proto.Undefined,
			Corked:                true, AdjustLatency: true,
			Properties:     proto.PropList{"media.name": proto.PropListString("mnemo voice: agent")},
			ChannelVolumes: vol,
		}
		var rpl proto.CreatePlaybackStreamReply
		if err := s.pc.c.Request(&req, &rpl); err != nil {
			return nil, fmt.Errorf("open output %s: %w", orDefault(name), err)
		}
		s.play.Store(rpl.StreamIndex)
		s.pending.Add(int64(rpl.Missing))
		s.attrs.TLength, s.attrs.MinReq, s.attrs.PreBuf, s.attrs.MaxLen = rpl.BufferTargetLength, rpl.BufferMinimumRequest, rpl.BufferPrebufferLength, rpl.BufferMaxLength
		s.attrs.SinkLatency = time.Duration(rpl.SinkLatency) * time.Microsecond
		s.latency = frameTime(int(rpl.BufferTargetLength/2)) + s.attrs.SinkLatency
		p.SetOutputLatency(s.latency)
		s.tlength = int(rpl.BufferTargetLength / 2)
		p.setHeld(s.held)
		if h := cfg.OutputHangover; h >= 0 {
			s.hangover = periodFrames(max(h, 0), DefaultOutputHangover)
		}
	}
	s.log.Debug("pulseaudio streams", "attrs", fmt.Sprintf("%+v", s.attrs))
	if c != nil {
		if err := s.pc.c.Request(&proto.CorkRecordStream{StreamIndex: s.rec.Load(), Corked: false}, nil); err != nil {
			return nil, fmt.Errorf("start input: %w", err)
		}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	if p != nil {
		s.wg.Go(func() { s.playLoop(ctx, p) })
	}
	return s, nil
}

func orDefault(name string) string {
	if name == "" {
		return "(the default device)"
	}
	return fmt.Sprintf("%q", name)
}

// callback takes what the server sends unasked, on the socket's reader
// goroutine: capture fragments go to the Capture (which copies), playback
// requests wake the play loop. It never waits and never makes a request
// (the reply would have to come through this goroutine).
func (s *PulseStreams) callback(msg any) {
	switch m := msg.(type) {
	case *proto.DataPacket:
		if m.StreamIndex != s.rec.Load() || s.capture == nil {
			return
		}
		data := m.Data
		if len(s.odd) > 0 {
			data = append(s.odd, data...)
			s.odd = s.odd[:0]
		}
		if len(data)%2 == 1 {
			s.odd = append(s.odd, data[len(data)-1])
			data = data[:len(data)-1]
		}
		for len(data) > 0 {
			n := min(len(data)/2, len(s.inBuf))
			for i := range n {
				s.inBuf[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
			}
			s.capture.Write(s.inBuf[:n])
			data = data[2*n:]
		}
	case *proto.Request:
		if m.StreamIndex == s.play.Load() {
			s.pending.Add(int64(m.Length))
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	case *proto.Underflow:
		// A flush empties the queue on purpose, and the server reports
		// that as an underflow when it next looks (by then the queue may
		// have been refilled): not counted.
		if m.StreamIndex == s.play.Load() && !s.flushing.Load() && time.Now().UnixNano() > s.calmAt.Load() {
			s.warn(&s.underflow, "audio output underflowed: the server played a gap")
		}
	case *proto.Overflow:
		if m.StreamIndex == s.play.Load() {
			s.warn(&s.oversent, "audio output overflowed: more was sent than the server asked for")
		}
	case *proto.PlaybackStreamKilled:
		if m.StreamIndex == s.play.Load() {
			s.fail(errors.New("pulseaudio ended the playback stream (its sink went away?)"))
		}
	case *proto.RecordStreamKilled:
		if m.StreamIndex == s.rec.Load() {
			s.fail(errors.New("pulseaudio ended the capture stream (its source went away?)"))
		}
	case *proto.ConnectionClosed:
		s.fail(errors.New("pulseaudio closed the connection"))
	}
}

// playLoop answers the server's requests for playback bytes from the
// Player. It starts corked and uncorks when a reply starts
// (Player.Started) with the requested bytes already sent; after the
// hang-over of silence it corks and flushes again. Every Player.Flush is
// a flush of the stream, issued before any audio read after it is sent.
func (s *PulseStreams) playLoop(ctx context.Context, p *Player) {
	idx := s.play.Load()
	buf := make([]int16, 2*SampleRate/10) // 200 ms: more than the server asks at once
	out := make([]byte, 2*len(buf))
	corked, quiet := true, 0
	request := func(req proto.RequestArgs, what string) bool {
		if err := s.pc.c.Request(req, nil); err != nil {
			if ctx.Err() == nil {
				s.fail(fmt.Errorf("%s: %w", what, err))
			}
			return false
		}
		return true
	}
	flush := func() bool {
		s.flushing.Store(true)
		return request(&proto.FlushPlaybackStream{StreamIndex: idx}, "flush output")
	}
	cut := func(gen uint64) bool {
		if err := s.cutLocked(gen); err != nil {
			if ctx.Err() == nil {
				s.fail(err)
			}
			return false
		}
		return true
	}
	// A request the Player could not answer whole (mid-reply, the rest
	// not yet arrived) is finished when this fires.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	// fill sends what the server asked for, as far as the Player has it,
	// and counts the silence sent since the Player's last audio (quiet).
	// The caller holds qmu.
	fill := func() bool {
		want := s.pending.Swap(0)
		if want%2 == 1 {
			s.pending.Add(1)
			want--
		}
		for want > 0 {
			k := min(int(want/2), len(buf))
			have, bounded := p.readable()
			if bounded && !corked && quiet >= s.tlength {
				// A reply in the hang-over: all the server holds is
				// silence; drop it so the reply starts as soon as on a
				// corked stream.
				quiet = 0
				if !flush() {
					return false
				}
			}
			if bounded && have < k {
				if k = have; k == 0 {
					s.pending.Add(want)
					retry.Reset(pulseRetry)
					break
				}
			}
			got, n := p.read(buf[:k])
			if !cut(n) {
				return false
			}
			for i, v := range buf[:k] {
				binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
			}
			if err := s.pc.c.Send(idx, out[:2*k]); err != nil {
				if ctx.Err() == nil {
					s.fail(fmt.Errorf("write output: %w", err))
				}
				return false
			}
			want -= int64(2 * k)
			quiet += k
			if got > 0 {
				quiet = k - got // the reply's end, if it ended here
			}
			if s.flushing.Swap(false) {
				s.calmAt.Store(time.Now().Add(s.attrs.SinkLatency + 50*time.Millisecond).UnixNano())
			}
		}
		if !corked {
			s.filledAt.Store(time.Now().UnixNano())
		}
		return true
	}
	if s.hangover == 0 {
		// It never stops: start at once.
		s.qmu.Lock()
		ok := fill() && request(&proto.CorkPlaybackStream{StreamIndex: idx, Corked: false}, "start output")
		if ok {
			corked = false
			s.filledAt.Store(time.Now().UnixNano())
		}
		s.qmu.Unlock()
		if !ok {
			return
		}
	}
	for {
		if corked {
			// Drain Started, then look, then wait: no start is missed.
			select {
			case <-p.Started():
			default:
			}
			if !p.Playing() {
				select {
				case <-ctx.Done():
					return
				case <-p.Started():
				}
			}
			quiet = 0
			s.qmu.Lock()
			ok := fill()
			if ok {
				s.flushing.Store(true) // an empty queue, if the reply is not there yet
				ok = request(&proto.CorkPlaybackStream{StreamIndex: idx, Corked: false}, "start output")
			}
			if ok {
				corked = false
				s.filledAt.Store(time.Now().UnixNano())
			}
			s.qmu.Unlock()
			if !ok {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-p.Flushed():
			s.qmu.Lock()
			ok := cut(p.flushCount())
			s.qmu.Unlock()
			if !ok {
				return
			}
			continue
		case <-p.Started(): // fill flushes the silence queued ahead of it
		case <-s.wake:
		case <-retry.C:
		}
		s.qmu.Lock()
		ok := fill()
		s.qmu.Unlock()
		if !ok {
			return
		}
		// quiet counts the silence sent since the last audio (fill).
		if p.Playing() || s.hangover == 0 || quiet < s.hangover {
			continue
		}
		// Idle: cork, and drop the silence the server holds.
		select {
		case <-p.Started():
		default:
		}
		if p.Playing() {
			continue // a reply came: fill flushes the silence ahead of it
		}
		s.qmu.Lock()
		ok = request(&proto.CorkPlaybackStream{StreamIndex: idx, Corked: true}, "stop output") && flush()
		s.filledAt.Store(0)
		s.qmu.Unlock()
		if !ok {
			return
		}
		s.stops.Add(1)
		corked = true
	}
}

// held is the Player's question at barge-in (setHeld): how many of the
// samples it handed the stream did the flush numbered gen drop. The play
// loop may have flushed for it already, at its next read; if not, this
// does, and either way the flush comes before anything read after it is
// sent.
func (s *PulseStreams) held(gen uint64) int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if err := s.cutLocked(gen); err != nil {
		s.log.Warn("flush output", "err", err)
	}
	if s.cutDone != gen {
		return 0 // a later flush came first: this one held nothing more
	}
	return s.cutHeld
}

// cutLocked flushes the playback stream for the Player's flush numbered
// gen, once, and keeps what the flush dropped (cutHeld). The caller holds
// qmu, so every sample read before that flush is already sent and none
// read after it is: the server's write index, less where a flush leaves
// it (its read index at that instant), is exactly what was handed and not
// played. The sink may take more audio between any two requests, and
// that is heard: so the flush is measured on both sides of it, not
// estimated before it.
func (s *PulseStreams) cutLocked(gen uint64) error {
	if gen <= s.cutDone {
		return nil
	}
	s.cutDone, s.cutHeld = gen, 0
	if s.filledAt.Load() == 0 {
		return nil // corked, and flushed when it corked: nothing queued
	}
	idx := s.play.Load()
	before, berr := s.queueIndexes(idx)
	s.flushing.Store(true)
	if err := s.pc.c.Request(&proto.FlushPlaybackStream{StreamIndex: idx}, nil); err != nil {
		return fmt.Errorf("flush output: %w", err)
	}
	after, aerr := s.queueIndexes(idx)
	if berr == nil && aerr == nil {
		s.cutHeld = max(0, int(before.WriteIndex-after.WriteIndex)/2)
		s.log.Debug("pulseaudio flush", "dropped", s.cutHeld, "write", before.WriteIndex, "read", before.ReadIndex,
			"write_after", after.WriteIndex, "read_after", after.ReadIndex)
		return nil
	}
	// No answer: estimate from when the queue was last topped up.
	gone := int(time.Since(time.Unix(0, s.filledAt.Load())) * SampleRate / time.Second)
	s.cutHeld = max(0, s.tlength-gone)
	return nil
}

// queueIndexes asks the server where the playback stream's write and read
// indexes stand (bytes since the stream began).
func (s *PulseStreams) queueIndexes(idx uint32) (proto.GetPlaybackLatencyReply, error) {
	var rpl proto.GetPlaybackLatencyReply
	now := time.Now()
	err := s.pc.c.Request(&proto.GetPlaybackLatency{StreamIndex: idx,
		Time: proto.Time{Seconds: uint32(now.Unix()), Microseconds: uint32(now.Nanosecond() / 1000)}}, &rpl)
	return rpl, err
}

func (s *PulseStreams) warn(n *atomic.Uint64, msg string) {
	// The first, then every hundredth: a struggling device must not flood the log.
	if k := n.Add(1); k == 1 || k%100 == 0 {
		s.log.Warn(msg, "count", k)
	}
}

func (s *PulseStreams) fail(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.err == nil {
		s.err = err
		s.log.Error("audio stream stopped", "err", err)
	}
}

// OutputLatency is how far written audio runs ahead of heard audio: the
// playback buffer the server granted and its sink's latency (0 without
// playback).
func (s *PulseStreams) OutputLatency() time.Duration { return s.latency }

// Attrs are the buffer attributes the server granted.
func (s *PulseStreams) Attrs() PulseAttrs { return s.attrs }

// Stats is a snapshot of the device's warnings. InputOverflows stays 0:
// PulseAudio does not tell a client it dropped capture it did not read.
func (s *PulseStreams) Stats() DeviceStats {
	return DeviceStats{OutputUnderflows: s.underflow.Load(), OutputStops: s.stops.Load()}
}

// Err is the error that stopped a stream, if one did.
func (s *PulseStreams) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Close stops the play loop, deletes the streams and hangs up.
func (s *PulseStreams) Close() error {
	s.cancel()
	s.wg.Wait()
	var errs []error
	if i := s.rec.Swap(proto.Undefined); i != proto.Undefined {
		if err := s.pc.c.Request(&proto.DeleteRecordStream{StreamIndex: i}, nil); err != nil {
			errs = append(errs, fmt.Errorf("close input: %w", err))
		}
	}
	if i := s.play.Swap(proto.Undefined); i != proto.Undefined {
		if err := s.pc.c.Request(&proto.DeletePlaybackStream{StreamIndex: i}, nil); err != nil {
			errs = append(errs, fmt.Errorf("close output: %w", err))
		}
	}
	s.pc.close()
	if err := s.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
