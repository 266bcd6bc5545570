package audio

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestGate(t *testing.T) {
	type op struct {
		do    string // play, stop, barge, wait, full, half
		d     time.Duration
		state GateState
	}
	tests := []struct {
		name            string
		ops             []op
		passed, dropped uint64
	}{
		{
			name:   "listening passes",
			ops:    []op{{do: "check", state: Listening}},
			passed: 1,
		},
		{
			name: "gated while playing and through the hold",
			ops: []op{
				{do: "play", state: Gated},
				{do: "wait", d: time.Second, state: Gated},
				{do: "stop", state: Holding},
				{do: "wait", d: 299 * time.Millisecond, state: Holding},
				{do: "wait", d: time.Millisecond, state: Listening},
			},
			passed: 1, dropped: 4,
		},
		{
			name: "playback resuming in the hold gates again",
			ops: []op{
				{do: "play", state: Gated},
				{do: "stop", state: Holding},
				{do: "wait", d: 100 * time.Millisecond, state: Holding},
				{do: "play", state: Gated},
				{do: "stop", state: Holding},
				{do: "wait", d: 299 * time.Millisecond, state: Holding},
				{do: "wait", d: time.Millisecond, state: Listening},
			},
			passed: 1, dropped: 6,
		},
		{
			name: "barge-in opens the mic during playback and skips the hold",
			ops: []op{
				{do: "play", state: Gated},
				{do: "barge", state: BargedIn},
				{do: "stop", state: Listening},
			},
			passed: 2, dropped: 1,
		},
		{
			name: "barge-in ends the hold",
			ops: []op{
				{do: "play", state: Gated},
				{do: "stop", state: Holding},
				{do: "barge", state: Listening},
			},
			passed: 1, dropped: 2,
		},
		{
			name: "barge-in lasts until playback starts again",
			ops: []op{
				{do: "play", state: Gated},
				{do: "barge", state: BargedIn},
				{do: "stop", state: Listening},
				{do: "play", state: Gated},
				{do: "stop", state: Holding},
			},
			passed: 2, dropped: 3,
		},
		{
			name: "repeated reports change nothing",
			ops: []op{
				{do: "play", state: Gated},
				{do: "wait", d: time.Second, state: Gated},
				{do: "play", state: Gated},
				{do: "stop", state: Holding},
				{do: "wait", d: 200 * time.Millisecond, state: Holding},
				{do: "stop", state: Holding},
				{do: "wait", d: 100 * time.Millisecond, state: Listening},
			},
			passed: 1, dropped: 6,
		},
		{
			name: "full duplex never gates",
			ops: []op{
				{do: "full", state: Listening},
				{do: "play", state: Listening},
				{do: "stop", state: Listening},
				{do: "half", state: Holding},
			},
			passed: 3, dropped: 1,
		},
		{
			name: "echo-cancel gates a reply's onset, then passes while the agent plays",
			ops: []op{
				{do: "aec", state: Listening},
				{do: "play", state: Gated},
				{do: "wait", d: 299 * time.Millisecond, state: Gated},
				{do: "wait", d: time.Millisecond, state: Listening},
				{do: "wait", d: time.Second, state: Listening},
				{do: "stop", state: Listening},
				{do: "half", state: Holding},
				{do: "wait", d: 300 * time.Millisecond, state: Listening},
			},
			passed: 5, dropped: 3,
		},
		{
			name: "barge-in opens echo-cancel's onset",
			ops: []op{
				{do: "aec", state: Listening},
				{do: "play", state: Gated},
				{do: "barge", state: Listening},
				{do: "stop", state: Listening},
				{do: "play", state: Gated},
			},
			passed: 3, dropped: 2,
		},
		{
			name: "switching to echo-cancel mid-reply opens the mic after the onset",
			ops: []op{
				{do: "play", state: Gated},
				{do: "wait", d: 300 * time.Millisecond, state: Gated},
				{do: "aec", state: Listening},
				{do: "stop", state: Listening},
			},
			passed: 2, dropped: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate(GateConfig{})
				for i, o := range tt.ops {
					switch o.do {
					case "play":
						g.SetPlaying(true)
					case "stop":
						g.SetPlaying(false)
					case "barge":
						g.BargeIn()
					case "wait":
						time.Sleep(o.d)
					case "full":
						g.SetMode(FullDuplex)
					case "half":
						g.SetMode(HalfDuplex)
					case "aec":
						g.SetMode(EchoCancel)
					}
					if got := g.State(); got != o.state {
						t.Fatalf("op %d (%s): state %v, want %v", i, o.do, got, o.state)
					}
					want := o.state == Listening || o.state == BargedIn
					if got := g.Pass(); got != want {
						t.Fatalf("op %d (%s): Pass = %v, want %v", i, o.do, got, want)
					}
				}
				if p, d := g.Counts(); p != tt.passed || d != tt.dropped {
					t.Errorf("Counts = %d passed %d dropped, want %d %d", p, d, tt.passed, tt.dropped)
				}
			})
		})
	}
}

func TestGateCustomHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Hold: 50 * time.Millisecond})
		g.SetPlaying(true)
		g.SetPlaying(false)
		time.Sleep(49 * time.Millisecond)
		if g.Pass() {
			t.Fatal("passed inside a 50 ms hold")
		}
		time.Sleep(time.Millisecond)
		if !g.Pass() {
			t.Fatal("gated after a 50 ms hold")
		}
	})
}

func TestGateNoOnset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Mode: EchoCancel, Onset: -1})
		g.SetPlaying(true)
		if !g.Pass() {
			t.Fatal("gated at the onset with Onset < 0")
		}
	})
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", HalfDuplex, false},
		{"half", HalfDuplex, false},
		{"headphones", FullDuplex, false},
		{"Full-Duplex", FullDuplex, false},
		{"echo-cancel", EchoCancel, false},
		{" aec ", EchoCancel, false},
		{"speaker", HalfDuplex, true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil {
			if back, _ := ParseMode(got.String()); back != got {
				t.Errorf("ParseMode(%v.String()) = %v", got, back)
			}
		}
	}
}
