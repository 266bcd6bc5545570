package audio

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Mode is how the mic and the speaker share the desk.
type Mode int

const (
	// HalfDuplex (the default) drops mic frames while the agent plays and
	// for Hold after, so the agent never hears (and interrupts) itself;
	// BargeIn opens the mic anyway.
	HalfDuplex Mode = iota
	// FullDuplex passes every frame: headphones.
	FullDuplex
	// EchoCancel passes frames while the agent plays, because an echo
	// canceller upstream of the mic removes the speaker from it: the
	// system's (PulseAudio/PipeWire module-echo-cancel, made the default
	// devices by scripts/echo-cancel.sh). The user interrupts by just
	// speaking, from Onset into a reply: the canceller needs that long to
	// converge when a reply starts from silence.
	EchoCancel
)

// String is the mode's name in configuration and the UI: "half",
// "headphones", "echo-cancel".
func (m Mode) String() string {
	switch m {
	case FullDuplex:
		return "headphones"
	case EchoCancel:
		return "echo-cancel"
	}
	return "half"
}

// ParseMode reads a mode's name as String writes it; "full" and
// "full-duplex" are accepted for headphones, "aec" for echo-cancel, ""
// is HalfDuplex.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "half", "half-duplex":
		return HalfDuplex, nil
	case "headphones", "full", "full-duplex":
		return FullDuplex, nil
	case "echo-cancel", "aec", "echocancel":
		return EchoCancel, nil
	}
	return HalfDuplex, fmt.Errorf("audio: unknown echo mode %q (half, headphones, echo-cancel)", s)
}

// DefaultOnset is how long, in EchoCancel mode, the mic stays gated when
// a reply starts from silence: the system canceller lets the first 150 ms
// or so of a reply through almost whole (-24 dBFS of a -21 dBFS voice,
// measured on these machines) before it converges again.
const DefaultOnset = 300 * time.Millisecond

// DefaultHold is how long the mic stays gated after playback stops: the
// device's output latency plus the room's echo tail.
const DefaultHold = 300 * time.Millisecond

// GateState is what the gate is doing, for the UI.
type GateState int

const (
	Listening GateState = iota // mic frames pass
	Gated                      // the agent is playing: mic frames dropped
	Holding                    // playback just stopped: dropped until the hold ends
	BargedIn                   // the agent plays but the user took the mic
)

func (s GateState) String() string {
	switch s {
	case Gated:
		return "gated"
	case Holding:
		return "holding"
	case BargedIn:
		return "barged-in"
	}
	return "listening"
}

// GateConfig configures a Gate. Zero values mean HalfDuplex, DefaultHold,
// DefaultOnset and time.Now.
type GateConfig struct {
	Mode Mode
	Hold time.Duration
	// Onset is EchoCancel's gate at the start of each reply; negative
	// means none.
	Onset time.Duration
	Now   func() time.Time
}

// Gate is the half-duplex state machine (and EchoCancel's onset gate). The Player reports playback
// starting and stopping (SetPlaying); Capture asks Pass for every frame.
// Safe for concurrent use.
//
//	Listening --SetPlaying(true)--> Gated --SetPlaying(false)--> Holding --Hold elapses--> Listening
//	Gated --BargeIn--> BargedIn --SetPlaying(false)--> Listening (no hold)
//	Holding --BargeIn--> Listening
//
// A barge-in lasts until playback next starts from silence.
type Gate struct {
	mu       sync.Mutex
	mode     Mode
	hold     time.Duration
	onset    time.Duration
	now      func() time.Time
	started  time.Time // playback last started from silence
	playing  bool
	override bool
	until    time.Time // end of the hold after playback stopped
	passed   uint64
	dropped  uint64
}

// NewGate returns a gate in the Listening state.
func NewGate(cfg GateConfig) *Gate {
	if cfg.Hold <= 0 {
		cfg.Hold = DefaultHold
	}
	if cfg.Onset == 0 {
		cfg.Onset = DefaultOnset
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Gate{mode: cfg.Mode, hold: cfg.Hold, onset: max(0, cfg.Onset), now: cfg.Now}
}

// SetMode switches the mode; a switch takes effect for the next frame.
func (g *Gate) SetMode(m Mode) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = m
}

// Mode is the current mode.
func (g *Gate) Mode() Mode {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mode
}

// SetPlaying reports that agent audio started (true) or stopped (false)
// reaching the speaker. Repeated calls with the same value change nothing.
func (g *Gate) SetPlaying(playing bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if playing == g.playing {
		return
	}
	g.playing = playing
	if playing {
		g.override = false
		g.started = g.now()
		return
	}
	if g.override {
		g.until = time.Time{}
		return
	}
	g.until = g.now().Add(g.hold)
}

// BargeIn is the user taking the mic (a key): frames pass at once, even
// while the agent plays, and no hold follows.
func (g *Gate) BargeIn() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.override = true
	g.until = time.Time{}
}

// Pass decides for one mic frame, now, and counts the decision.
func (g *Gate) Pass() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateLocked()
	ok := st == Listening || st == BargedIn
	if ok {
		g.passed++
	} else {
		g.dropped++
	}
	return ok
}

// State is the gate's state now.
func (g *Gate) State() GateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stateLocked()
}

func (g *Gate) stateLocked() GateState {
	switch {
	case g.mode == FullDuplex:
		return Listening
	case g.mode == EchoCancel:
		if g.playing && !g.override && g.now().Before(g.started.Add(g.onset)) {
			return Gated
		}
		return Listening
	case g.playing && g.override:
		return BargedIn
	case g.playing:
		return Gated
	case g.now().Before(g.until):
		return Holding
	}
	return Listening
}

// Counts is how many frames Pass let through and dropped.
func (g *Gate) Counts() (passed, dropped uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.passed, g.dropped
}
