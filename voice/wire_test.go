package voice

import (
	"context"
	"log/slog"
	"testing"
)

var serverSamples = []string{
	`{"type":"session.created","session":{"id":"s","model":"grok-voice-latest","turn_detection":{"type":null}}}`,
	`{"type":"conversation.created","conversation":{"id":"conv_1"},"previous_item_id":"0"}`,
	`{"type":"ping","timestamp":1}`,
	`{"type":"session.updated","session":{"turn_detection":{},"input_audio_format":"not specified"}}`,
	`{"type":"input_audio_buffer.speech_started","audio_start_ms":120,"item_id":"i1"}`,
	`{"type":"conversation.item.input_audio_transcription.updated","item_id":"i1","transcript":"hel"}`,
	`{"type":"conversation.item.input_audio_transcription.completed","item_id":"i1","transcript":"hello","status":"in_progress"}`,
	`{"type":"conversation.item.input_audio_transcription.completed","item_id":"i1","transcript":"hello"}`,
	`{"type":"conversation.item.input_audio_transcription.delta","item_id":"i1","delta":"he"}`,
	`{"type":"response.created","response":{"id":"r1","status":"in_progress"}}`,
	`{"type":"response.output_item.added","response_id":"r1","item":{"id":"i2","type":"function_call","call_id":"c1","name":"f"}}`,
	`{"type":"response.audio.delta","response_id":"r1","item_id":"i2","delta":"AAAA"}`,
	`{"type":"response.output_audio.delta","response_id":"r1","item_id":"i2","delta":"!!"}`,
	`{"type":"response.text.delta","response_id":"r1","item_id":"i2","delta":"hi"}`,
	`{"type":"response.audio_transcript.done","response_id":"r1","item_id":"i2","transcript":"hi"}`,
	`{"type":"conversation.item.truncated","item_id":"i2","audio_end_ms":10,"transcript":"h"}`,
	`{"type":"response.function_call_arguments.done","call_id":"c1","arguments":"{}"}`,
	`{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c2","name":"g","arguments":"{}"}}`,
	`{"type":"response.done","response":{"id":"r1","status":"cancelled","status_details":"unimplemented"},"usage":{}}`,
	`{"type":"error","error":{"type":"invalid_event","code":"x","message":"m"}}`,
	`{"type":"error","error":"flat"}`,
	`{"type":"error","code":"c","message":"m"}`,
	`{"type":"error","error":{"type":"max_duration","message":"session over"}}`,
}

// The decoder and the event handler take any bytes without panicking;
// every decoded event has a type and old names are normalised.
func FuzzServerEvent(f *testing.F) {
	for _, s := range serverSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeServerEvent(b)
		if err != nil {
			return
		}
		if ev.Type == "" {
			t.Fatal("decoded event without type")
		}
		if _, old := eventNames[ev.Type]; old {
			t.Fatalf("name %q not normalised", ev.Type)
		}
		s := newTestSession()
		s.mu.Lock()
		s.handleLocked(ev)
		s.mu.Unlock()
		s.q.close()
		for range s.q.out {
		}
	})
}

func newTestSession() *Session {
	s := &Session{opts: Options{}.withDefaults(), q: newQueue(), done: make(chan struct{}),
		itemResp: map[string]string{}, itemBytes: map[string]int{}, dropResp: map[string]bool{},
		userText: map[string]string{}, userFinal: map[string]bool{}, agentText: map[string]string{},
		agentFinal: map[string]bool{}, truncated: map[string]bool{}, calls: map[string]bool{},
		callNames: map[string]string{}}
	s.log = slog.New(slog.DiscardHandler)
	s.ctx, s.stop = context.WithCancel(context.Background())
	return s
}

// The sample events, in order, give the events a consumer should see.
func TestHandleSamples(t *testing.T) {
	s := newTestSession()
	for _, b := range serverSamples {
		ev, err := decodeServerEvent([]byte(b))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		s.mu.Lock()
		s.handleLocked(ev)
		s.mu.Unlock()
	}
	s.q.close()
	var got []Event
	for ev := range s.q.out {
		got = append(got, ev)
	}
	var finals, calls, errs int
	for _, ev := range got {
		switch v := ev.(type) {
		case UserTranscript:
			if v.Final {
				finals++
			}
		case FunctionCall:
			calls++
		case Error:
			errs++
			if v.Type == "max_duration" && v.Recoverable {
				t.Error("max_duration marked recoverable")
			}
		}
	}
	if finals != 1 || calls != 2 || errs != 4 {
		t.Errorf("finals %d calls %d errors %d in %v", finals, calls, errs, got)
	}
	if s.convID != "conv_1" {
		t.Errorf("conversation id %q", s.convID)
	}
}

func TestPlayback(t *testing.T) {
	var p Playback
	if _, _, ok := p.Heard(); ok {
		t.Fatal("empty playback heard something")
	}
	p.Queue("a", 2400) // 100 ms
	p.Queue("a", 2400)
	p.Queue("b", 4800)
	if fin := p.Advance(3600); len(fin) != 0 {
		t.Errorf("finished early: %v", fin)
	}
	if id, ms, _ := p.Heard(); id != "a" || ms != 150 {
		t.Errorf("heard %s %d", id, ms)
	}
	if fin := p.Advance(1200 + 2400); len(fin) != 1 || fin[0] != "a" {
		t.Errorf("finished %v", fin)
	}
	if id, ms, _ := p.Heard(); id != "b" || ms != 100 {
		t.Errorf("heard %s %d", id, ms)
	}
	p.Flush()
	if _, _, ok := p.Heard(); ok {
		t.Error("flush kept audio")
	}
}

// TestPlaybackRunsDry: the speaker can catch up with a reply whose audio
// comes slower than it plays; the item's count goes on where it stopped
// when more of it comes, and a new item takes over from one played
// through.
func TestPlaybackRunsDry(t *testing.T) {
	for _, tt := range []struct {
		name   string
		steps  func(p *Playback)
		wantID string
		wantMS int
	}{
		{"between two pieces", func(p *Playback) { p.Queue("a", 2400); p.Advance(2400) }, "a", 100},
		{"more of it came", func(p *Playback) { p.Queue("a", 2400); p.Advance(2400); p.Queue("a", 2400); p.Advance(1200) }, "a", 150},
		{"dry twice", func(p *Playback) {
			for range 3 {
				p.Queue("a", 2400)
				p.Advance(2400)
			}
		}, "a", 300},
		{"the next item queued", func(p *Playback) { p.Queue("a", 2400); p.Advance(2400); p.Queue("b", 2400) }, "b", 0},
		{"the next item playing", func(p *Playback) { p.Queue("a", 2400); p.Advance(2400); p.Queue("b", 2400); p.Advance(1200) }, "b", 50},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p Playback
			tt.steps(&p)
			if id, ms, ok := p.Heard(); id != tt.wantID || ms != tt.wantMS || !ok {
				t.Errorf("heard %q %d ms %v, want %q %d ms", id, ms, ok, tt.wantID, tt.wantMS)
			}
		})
	}
}

// Audio sent before the session is ready keeps only the most recent
// PreReadyAudioMS, in whole samples.
func TestPreReadyBufferBounded(t *testing.T) {
	s := newTestSession()
	s.opts.PreReadyAudioMS = 10 // 480 bytes
	for i := range 5 {
		b := make([]byte, 301)
		b[0] = byte(i)
		if err := s.SendAudio(b); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.pending) > 480 || len(s.pending) < 478 {
		t.Errorf("kept %d bytes", len(s.pending))
	}
	if (5*301-len(s.pending))%2 != 0 {
		t.Error("cut mid-sample")
	}
}
