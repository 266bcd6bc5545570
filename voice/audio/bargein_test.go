package audio_test

import (
	"slices"
	"testing"

	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/audio"
	"github.com/mnemo/mnemo/voice/voicetest"
)

// TestBargeInThroughSession: reply audio from a session goes through the
// Player intact and in order; on barge-in Flush says how much of which
// item the device took, and the session truncates the item exactly there.
func TestBargeInThroughSession(t *testing.T) {
	const text = "one two three four five six seven eight nine ten"
	for _, d := range []string{voice.DialectXAI, voice.DialectOpenAI} {
		t.Run(d, func(t *testing.T) {
			srv := voicetest.Start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{{User: "count",
				Reply: voicetest.Reply{Transcript: text, AudioMS: 1000, HoldAfter: 3, LateDeltas: 2}}}})
			s, err := voice.Dial(t.Context(), &voicetest.Credentials{Server: srv}, voice.Options{HTTPClient: srv.HTTPClient()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				s.Close()
				for range s.Events() {
				}
			})
			for _, b := range [][]byte{voicetest.Tone(300), voicetest.Silence(600)} {
				if err := s.SendAudio(b); err != nil {
					t.Fatal(err)
				}
			}
			g := audio.NewGate(audio.GateConfig{})
			p := audio.NewPlayer(audio.PlayerConfig{Gate: g})
			deltas := 0
			var truncated *voice.AgentTranscript
			var done bool
			flushed := false
			for ev := range s.Events() {
				switch ev := ev.(type) {
				case voice.AgentAudio:
					if flushed {
						t.Errorf("late delta after barge-in: %d bytes", len(ev.PCM))
					}
					p.Write(ev.ItemID, ev.PCM)
					if deltas++; deltas < 3 {
						continue
					}
					// The server holds the rest: the device has played 160 ms (8 frames).
					out := make([]int16, audio.FrameSamples)
					for k := 0; k < audio.SampleRate*160/1000; k += len(out) {
						if n := p.Read(out); n != len(out) {
							t.Fatalf("Read %d audio samples at %d, want %d", n, k, len(out))
						}
						for i, v := range out {
							if want := voicetest.ReplySample(k + i); v != want {
								t.Fatalf("sample %d = %d, want %d", k+i, v, want)
							}
						}
					}
					if g.State() != audio.Gated {
						t.Errorf("gate %v while the agent plays", g.State())
					}
					g.BargeIn()
					item, ms, ok := p.Flush()
					if !ok || ms != 160 {
						t.Fatalf("Flush = %q %d %v, want 160 ms heard", item, ms, ok)
					}
					if err := s.InterruptItem(item, ms); err != nil {
						t.Fatal(err)
					}
					flushed = true
					if g.State() != audio.Listening {
						t.Errorf("gate %v after barge-in, want listening", g.State())
					}
				case voice.AgentTranscript:
					if ev.Truncated {
						truncated = &ev
					}
				case voice.ResponseDone:
					done = true
				case voice.Closed:
					t.Fatalf("closed: %v", ev.Err)
				}
				if done && truncated != nil {
					break
				}
			}
			if got := srv.Truncates(); !slices.Equal(got, []int{160}) {
				t.Errorf("truncates %v, want [160]", got)
			}
			if want := text[:len(text)*160/1000]; truncated == nil || truncated.Text != want {
				t.Errorf("truncated transcript %+v, want %q", truncated, want)
			}
			if st := p.Stats(); st.Played != audio.SampleRate*160/1000 || st.Queued != 0 || st.Flushed != 3*audio.SampleRate/10-st.Played {
				t.Errorf("player stats %+v", st)
			}
		})
	}
}
