package voicectl_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/tui/voicectl"
	"github.com/mnemo/mnemo/tui/voicectl/voicectltest"
	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/audio"
	"github.com/mnemo/mnemo/voice/voicetest"
)

// standIn is hearth at the other end of a Link: every request the desk
// makes goes through the wire codec, and so does every answer, so the
// test sees exactly the bytes that would cross the hearth socket.
type standIn struct {
	t     *testing.T
	creds *voicetest.Credentials
	link  *voicectl.Link
	ctx   context.Context

	mu       sync.Mutex
	sent     [][]byte // client → hearth lines
	received [][]byte // hearth → client lines
	msgs     []ipc.Msg
	refuse   *ipc.Error // answer voice_request with this
	noTools  bool       // answer voice_tool_call as an old hearth does
	hang     bool       // never answer voice_tool_call
	calls    chan struct{}
	wg       sync.WaitGroup
}

func newStandIn(t *testing.T, srv *voicetest.Server, settings voice.Settings) *standIn {
	h := &standIn{t: t, creds: &voicetest.Credentials{Server: srv, Settings: settings}, ctx: t.Context()}
	n := 0
	var refMu sync.Mutex
	h.link = voicectl.NewLink(h.send, func() string {
		refMu.Lock()
		defer refMu.Unlock()
		n++
		return fmt.Sprint(n)
	})
	t.Cleanup(h.wg.Wait)
	return h
}

func (h *standIn) send(m ipc.Msg) {
	line, err := ipc.Encode(m)
	if err != nil {
		h.t.Errorf("encode %T: %v", m, err)
		return
	}
	back, err := ipc.Decode(bytes.TrimSpace(line))
	if err != nil {
		h.t.Errorf("decode %s: %v", line, err)
		return
	}
	h.mu.Lock()
	h.sent = append(h.sent, line)
	h.msgs = append(h.msgs, back)
	h.mu.Unlock()
	switch m := back.(type) {
	case *ipc.VoiceRequest:
		h.wg.Go(func() {
			if h.refuse != nil {
				e := *h.refuse
				e.Ref = m.Ref
				h.answer(&e)
				return
			}
			c, s, err := h.creds.Credential(h.ctx)
			if err != nil {
				h.answer(&ipc.Error{Code: ipc.CodeProviderError, Message: "mint failed", Ref: m.Ref})
				return
			}
			w := &ipc.VoiceCredential{Token: c.Value, ExpiresAt: c.ExpiresAt, URL: c.URL, Model: c.Model, Dialect: c.Dialect,
				Instructions: s.Instructions, Voice: s.Voice, Ref: m.Ref}
			if s.VAD.Mode != "" {
				w.VAD = &ipc.VoiceVAD{Type: s.VAD.Mode}
			}
			h.answer(w)
		})
	case *ipc.VoiceToolCall:
		if h.calls != nil {
			h.calls <- struct{}{}
		}
		if h.hang {
			return
		}
		h.wg.Go(func() {
			if h.noTools {
				h.answer(&ipc.Error{Code: ipc.CodeBadRequest, Message: `"voice_tool_call" is sent by hearth, not by clients`})
				return
			}
			h.answer(&ipc.VoiceToolResult{CallID: m.CallID, Ref: m.Ref, Output: `{"result":"ran ` + m.Name + `"}`})
		})
	}
}

func (h *standIn) answer(m ipc.Msg) {
	line, err := ipc.Encode(m)
	if err != nil {
		h.t.Errorf("encode %T: %v", m, err)
		return
	}
	back, err := ipc.Decode(bytes.TrimSpace(line))
	if err != nil {
		h.t.Errorf("decode: %v", err)
		return
	}
	h.mu.Lock()
	h.received = append(h.received, line)
	h.mu.Unlock()
	if !h.link.Deliver(back) {
		h.t.Errorf("the link did not take %s", line)
	}
}

// transcripts are the transcript messages hearth got, in order.
func (h *standIn) transcripts() []ipc.Transcript {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []ipc.Transcript
	for _, m := range h.msgs {
		if tr, ok := m.(*ipc.Transcript); ok {
			out = append(out, *tr)
		}
	}
	return out
}

func (h *standIn) count(typ string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.msgs {
		if m.Type() == typ {
			n++
		}
	}
	return n
}

// invariants: nothing but voice requests, transcripts, tool calls and
// stop_voice crossed to hearth, no line carries audio, and the API key
// never reached the client.
func (h *standIn) invariants(t *testing.T, apiKey string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	allowed := []string{ipc.TypeVoiceRequest, ipc.TypeTranscript, ipc.TypeVoiceToolCall, ipc.TypeStopVoice}
	for i, m := range h.msgs {
		if !slices.Contains(allowed, m.Type()) {
			t.Errorf("sent %s to hearth", h.sent[i])
		}
		if len(h.sent[i]) > 1024 {
			t.Errorf("a %d-byte line to hearth (audio?): %.80s…", len(h.sent[i]), h.sent[i])
		}
		if bytes.Contains(h.sent[i], []byte("audio")) {
			t.Errorf("audio named in a line to hearth: %s", h.sent[i])
		}
	}
	for _, l := range h.received {
		if bytes.Contains(l, []byte(apiKey)) {
			t.Errorf("the API key reached the client: %s", l)
		}
	}
}

const apiKey = "test-api-key"

type run struct {
	desk  *voicectl.Desk
	audio *voicectltest.Audio
	h     *standIn
	srv   *voicetest.Server
	done  chan error
	evs   []voicectl.Event
}

func start(t *testing.T, opts voicetest.Options, echo audio.Mode, settings voice.Settings, prep ...func(*standIn)) *run {
	t.Helper()
	return startOn(t, &voicectltest.Audio{}, opts, echo, settings, prep...)
}

// startOn is start with the sound card a.
func startOn(t *testing.T, a *voicectltest.Audio, opts voicetest.Options, echo audio.Mode, settings voice.Settings, prep ...func(*standIn)) *run {
	t.Helper()
	srv := voicetest.StartPipe(t, opts)
	r := &run{audio: a, srv: srv, done: make(chan error, 1)}
	r.h = newStandIn(t, srv, settings)
	for _, f := range prep {
		f(r.h)
	}
	r.desk = voicectl.New(voicectl.Config{
		Hearth: r.h.link, Audio: r.audio, Echo: echo,
		Session: voice.Options{HTTPClient: srv.HTTPClient()},
	})
	go func() { r.done <- r.desk.Run(t.Context()) }()
	t.Cleanup(func() {
		r.desk.Stop()
		<-r.done
	})
	return r
}

// until reads the desk's events until cond holds for one; a minute of
// the bubble's clock is plenty for any of these conversations.
func (r *run) until(t *testing.T, what string, cond func(voicectl.Event) bool) voicectl.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		ev, err := r.desk.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v (events %v)", what, err, r.evs)
		}
		r.evs = append(r.evs, ev)
		if cond(ev) {
			return ev
		}
	}
}

func isState(s voicectl.State) func(voicectl.Event) bool {
	return func(ev voicectl.Event) bool {
		sc, ok := ev.(voicectl.StateChanged)
		return ok && sc.State == s
	}
}

func isFinal(role string) func(voicectl.Event) bool {
	return func(ev voicectl.Event) bool {
		f, ok := ev.(voicectl.Final)
		return ok && f.Role == role
	}
}

// isAgentText matches the agent's final text.
func isAgentText(text string) func(voicectl.Event) bool {
	return func(ev voicectl.Event) bool {
		f, ok := ev.(voicectl.Final)
		return ok && f.Role == voicectl.RoleAgent && f.Text == text
	}
}

// stopTruncated ends the session and returns the one truncate the
// provider was sent, which must fall inside an item of itemMS.
func (r *run) stopTruncated(t *testing.T, itemMS int) int {
	t.Helper()
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	truncs := r.srv.Truncates()
	if len(truncs) != 1 || truncs[0] <= 0 || truncs[0] >= itemMS {
		t.Fatalf("truncates %v, want one inside the %d ms item", truncs, itemMS)
	}
	return truncs[0]
}

// stop ends the session and waits for Ended.
func (r *run) stop(t *testing.T) error {
	t.Helper()
	r.desk.Stop()
	ev := r.until(t, "ended", func(ev voicectl.Event) bool { _, ok := ev.(voicectl.Ended); return ok })
	if err := <-r.done; err != nil {
		return err
	}
	r.done <- nil // for Cleanup
	return ev.(voicectl.Ended).Err
}

var dialects = []string{voice.DialectXAI, voice.DialectOpenAI}

// TestOneUtterance: one utterance at the desk → one user transcript and the
// agent's reply, stored once each, after the reply played; the reply audio
// reached the speaker whole; stop_voice follows the transcripts.
func TestOneUtterance(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{{User: "what time is it",
					Reply: voicetest.Reply{Transcript: "It is noon.", AudioMS: 400}}}}, audio.HalfDuplex, voice.Settings{})
				r.until(t, "listening", isState(voicectl.Listening))
				r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
				r.until(t, "you speaking", isState(voicectl.UserSpeaking))
				r.until(t, "thinking", isState(voicectl.Thinking))
				r.until(t, "agent speaking", isState(voicectl.AgentSpeaking))
				r.until(t, "agent final", isFinal(voicectl.RoleAgent))
				if err := r.stop(t); err != nil {
					t.Fatalf("stopped with %v", err)
				}
				got := r.h.transcripts()
				want := []ipc.Transcript{{Role: "user", Text: "what time is it"}, {Role: "agent", Text: "It is noon."}}
				if len(got) != len(want) {
					t.Fatalf("transcripts %+v, want %+v", got, want)
				}
				for i := range want {
					if got[i].Role != want[i].Role || got[i].Text != want[i].Text || got[i].Ref == "" {
						t.Errorf("transcript %d = %+v, want %+v with the item id as ref", i, got[i], want[i])
					}
				}
				played := r.audio.Played()
				if len(played) != voice.SampleRate*400/1000 {
					t.Errorf("played %d samples, want %d", len(played), voice.SampleRate*400/1000)
				}
				for k, v := range played {
					if v != voicetest.ReplySample(k) {
						t.Fatalf("played sample %d = %d, want %d", k, v, voicetest.ReplySample(k))
					}
				}
				if n := r.h.count(ipc.TypeStopVoice); n != 1 {
					t.Errorf("%d stop_voice, want 1", n)
				}
				r.h.mu.Lock()
				last := r.h.msgs[len(r.h.msgs)-1]
				r.h.mu.Unlock()
				if last.Type() != ipc.TypeStopVoice {
					t.Errorf("last message to hearth %s, want stop_voice after the transcripts", last.Type())
				}
				r.h.invariants(t, apiKey)
			})
		})
	}
}

// TestMicBufferIsOneAppend: a capture buffer of two 20 ms frames (the
// PortAudio layer's 40 ms period) goes to the provider as one append of
// 40 ms, not two: half the messages, system calls and wake-ups for the
// same audio, sent as soon as the buffer is there.
func TestMicBufferIsOneAppend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startOn(t, &voicectltest.Audio{InputFrames: 2}, voicetest.Options{Turns: []voicetest.Turn{{User: "what time is it",
			Reply: voicetest.Reply{Transcript: "It is noon.", AudioMS: 200}}}}, audio.HalfDuplex, voice.Settings{})
		r.until(t, "listening", isState(voicectl.Listening))
		r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
		r.until(t, "agent final", isFinal(voicectl.RoleAgent))
		if err := r.stop(t); err != nil {
			t.Fatalf("stopped with %v", err)
		}
		sizes := map[int]int{} // bytes of PCM → appends
		for _, m := range r.srv.Received() {
			var ev struct{ Type, Audio string }
			if json.Unmarshal([]byte(m), &ev) != nil || ev.Type != "input_audio_buffer.append" {
				continue
			}
			pcm, err := base64.StdEncoding.DecodeString(ev.Audio)
			if err != nil {
				t.Fatal(err)
			}
			sizes[len(pcm)]++
		}
		const buffer = 2 * 2 * audio.FrameSamples
		if len(sizes) == 0 {
			t.Fatal("no appends")
		}
		for n, k := range sizes {
			// The audio held before session.updated goes in one append.
			if n != buffer && k > 1 {
				t.Errorf("%d appends of %d bytes, want %d (a 40 ms buffer each): %v", k, n, buffer, sizes)
			}
		}
	})
}

// TestBargeIn: the user speaks over the agent (headphones: full duplex):
// playback stops at once, the item is truncated at what was heard, and the
// agent's turn stored is the truncated text, once.
//
// Held: the reply is still being generated when the user speaks (the
// server cancels it). Sent: the whole reply and its final transcript
// arrived long before it played out; the final text must not be stored.
// Run dry: the speaker played the first 100 ms sent and waits for more
// when the user speaks; the item is cut at those 100 ms all the same.
func TestBargeIn(t *testing.T) {
	const text = "one two three four five six seven eight nine ten"
	for _, c := range []struct {
		d    string
		hold int
	}{{voice.DialectXAI, 10}, {voice.DialectOpenAI, 10}, {voice.DialectXAI, 0}, {voice.DialectOpenAI, 0}, {voice.DialectXAI, 1}, {voice.DialectOpenAI, 1}} {
		d := c.d
		t.Run(fmt.Sprintf("%s/hold=%d", d, c.hold), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{
					{User: "count", Reply: voicetest.Reply{Transcript: text, AudioMS: 2000, HoldAfter: c.hold, LateDeltas: 2}},
					{User: "stop", Reply: voicetest.Reply{Transcript: "Okay.", AudioMS: 200}},
				}}, audio.FullDuplex, voice.Settings{})
				r.until(t, "listening", isState(voicectl.Listening))
				r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
				r.until(t, "agent speaking", isState(voicectl.AgentSpeaking))
				// Let some of the reply play, then talk over it.
				time.Sleep(300 * time.Millisecond) // the bubble's clock: the speaker plays 300 ms
				r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
				r.until(t, "you speaking", isState(voicectl.UserSpeaking))
				r.until(t, "truncated agent final", isFinal(voicectl.RoleAgent))
				r.until(t, "second reply stored", isAgentText("Okay."))
				truncs := []int{r.stopTruncated(t, 2000)}
				var agent []ipc.Transcript
				for _, tr := range r.h.transcripts() {
					if tr.Role == "agent" {
						agent = append(agent, tr)
					}
				}
				if len(agent) != 2 {
					t.Fatalf("agent transcripts %+v, want the truncated one and the second reply", agent)
				}
				if want := text[:len(text)*truncs[0]/2000]; agent[0].Text != want {
					t.Errorf("agent turn %q, want the heard part %q", agent[0].Text, want)
				}
				// Playback stopped at the barge-in: what played of the first
				// reply is what was heard, no more, then the second reply.
				played := len(r.audio.Played())
				heard := voice.SampleRate * truncs[0] / 1000
				if want := heard + voice.SampleRate*200/1000; played != want {
					t.Errorf("played %d samples, want %d (heard %d + second reply)", played, want, heard)
				}
				r.h.invariants(t, apiKey)
			})
		})
	}
}

// TestBargeInDropsQueuedItems: a reply that speaks, calls a tool and
// speaks again after it leaves two agent items queued on the speaker;
// talking over the first stores what was heard of it, and the second,
// never heard, is neither played nor stored.
func TestBargeInDropsQueuedItems(t *testing.T) {
	const first, second = "let me look that up for you right now", "it is noon and sunny in Lisbon today"
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{
					{User: "weather", Reply: voicetest.Reply{Transcript: first, AudioMS: 2000,
						Call: &voicetest.Call{Name: "current_time", Arguments: "{}"},
						Then: &voicetest.Reply{Transcript: second, AudioMS: 2000}}},
					{User: "stop", Reply: voicetest.Reply{Transcript: "Okay.", AudioMS: 200}},
				}}, audio.FullDuplex, voice.Settings{})
				r.until(t, "listening", isState(voicectl.Listening))
				r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
				// The reply after the tool is queued behind the first while
				// the first still plays.
				queued := r.until(t, "the second item queued", func(ev voicectl.Event) bool {
					p, ok := ev.(voicectl.Partial)
					return ok && p.Role == voicectl.RoleAgent && strings.HasPrefix(second, p.Text)
				}).(voicectl.Partial)
				time.Sleep(300 * time.Millisecond) // the bubble's clock: the speaker plays 300 ms
				r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
				r.until(t, "the queued item dropped", func(ev voicectl.Event) bool {
					dr, ok := ev.(voicectl.Dropped)
					return ok && dr.ItemID == queued.ItemID
				})
				r.until(t, "reply to the barge-in", isAgentText("Okay."))
				truncs := []int{r.stopTruncated(t, 2000)}
				var agent []string
				for _, tr := range r.h.transcripts() {
					if tr.Role == "agent" {
						agent = append(agent, tr.Text)
					}
				}
				heardText := first[:len(first)*truncs[0]/2000]
				if want := []string{heardText, "Okay."}; !slices.Equal(agent, want) {
					t.Errorf("agent transcripts %q, want %q (the unheard item not stored)", agent, want)
				}
				// What played: the heard part of the first item, then the
				// reply to the barge-in; nothing of the queued item.
				heard := voice.SampleRate * truncs[0] / 1000
				if played, want := len(r.audio.Played()), heard+voice.SampleRate*200/1000; played != want {
					t.Errorf("played %d samples, want %d (heard %d + the last reply)", played, want, heard)
				}
				r.h.invariants(t, apiKey)
			})
		})
	}
}

// TestToolCall: a function call goes to hearth as voice_tool_call; its
// output goes to the provider after response.done, then one
// response.create; the reply after it is stored.
func TestToolCall(t *testing.T) {
	for _, noTools := range []bool{false, true} {
		t.Run(fmt.Sprintf("noTools=%v", noTools), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, voicetest.Options{Turns: []voicetest.Turn{{User: "what did I say",
					Reply: voicetest.Reply{Call: &voicetest.Call{Name: "memory_search", Arguments: `{"query":"coffee"}`},
						Then: &voicetest.Reply{Transcript: "You said coffee.", AudioMS: 200}}}}}, audio.HalfDuplex, voice.Settings{},
					func(h *standIn) { h.noTools = noTools })
				r.until(t, "listening", isState(voicectl.Listening))
				r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
				r.until(t, "reply after the tool", func(ev voicectl.Event) bool {
					f, ok := ev.(voicectl.Final)
					return ok && f.Role == voicectl.RoleAgent && f.Text == "You said coffee."
				})
				if err := r.stop(t); err != nil {
					t.Fatal(err)
				}
				if n := r.h.count(ipc.TypeVoiceToolCall); n != 1 {
					t.Fatalf("%d voice_tool_call, want 1", n)
				}
				outs := r.srv.Outputs()
				want := `{"result":"ran memory_search"}`
				if noTools {
					want = `{"error":"hearth cannot run tools for voice: \"voice_tool_call\" is sent by hearth, not by clients"}`
				}
				if len(outs) != 1 || !strings.HasSuffix(outs[0], "="+want) {
					t.Errorf("outputs %q, want [%q]", outs, want)
				}
				// The output follows response.done, then exactly one response.create.
				frames := r.srv.Received()
				iOut := slices.IndexFunc(frames, func(f string) bool { return strings.Contains(f, `"function_call_output"`) })
				creates := 0
				for _, f := range frames[iOut+1:] {
					if strings.Contains(f, `"type":"response.create"`) {
						creates++
					}
				}
				if iOut < 0 || creates != 1 {
					t.Errorf("after the output %d response.create, want 1", creates)
				}
				r.h.invariants(t, apiKey)
			})
		})
	}
}

// TestReconnectAsksHearth: a dropped connection is resumed with a new
// credential from hearth.
func TestReconnectAsksHearth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, voicetest.Options{}, audio.HalfDuplex, voice.Settings{})
		r.until(t, "listening", isState(voicectl.Listening))
		if n := r.h.count(ipc.TypeVoiceRequest); n != 1 {
			t.Fatalf("%d voice_request before the drop, want 1", n)
		}
		r.srv.DropAll()
		r.until(t, "reconnecting", isState(voicectl.Reconnecting))
		r.until(t, "listening again", isState(voicectl.Listening))
		if n := r.h.count(ipc.TypeVoiceRequest); n != 2 {
			t.Errorf("%d voice_request after the drop, want 2", n)
		}
		if n := len(r.srv.Minted()); n != 2 {
			t.Errorf("%d secrets minted, want 2", n)
		}
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
		r.h.invariants(t, apiKey)
	})
}

// TestNoProvider: hearth's refusal ends the session at once with its
// message as is; nothing is asked twice and no audio stays open.
func TestNoProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, voicetest.Options{}, audio.HalfDuplex, voice.Settings{}, func(h *standIn) {
			h.refuse = &ipc.Error{Code: ipc.CodeNoVoiceProvider, Message: "no voice provider is configured: set XAI_API_KEY"}
		})
		ev := r.until(t, "ended", func(ev voicectl.Event) bool { _, ok := ev.(voicectl.Ended); return ok })
		err := ev.(voicectl.Ended).Err
		if err == nil || err.Error() != "no voice provider is configured: set XAI_API_KEY" || !voicectl.IsNoProvider(err) {
			t.Fatalf("ended with %v, want hearth's message", err)
		}
		if n := r.h.count(ipc.TypeVoiceRequest); n != 1 {
			t.Errorf("%d voice_request, want 1", n)
		}
		if !slices.ContainsFunc(r.evs, isState(voicectl.Failed)) {
			t.Errorf("no error state in %v", r.evs)
		}
		<-r.done
		r.done <- nil
		if opens, closes := r.audio.Opened(); opens != closes {
			t.Errorf("audio opened %d, closed %d", opens, closes)
		}
	})
}

// TestPushToTalk: with manual turns, the mic sends nothing until the key,
// and the second press commits the turn.
func TestPushToTalk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := start(t, voicetest.Options{Turns: []voicetest.Turn{{User: "hi", Reply: voicetest.Reply{Transcript: "Hello.", AudioMS: 200}}}},
			audio.HalfDuplex, voice.Settings{VAD: voice.VAD{Mode: voice.VADManual}})
		r.until(t, "listening", isState(voicectl.Listening))
		r.audio.Say(voicetest.Tone(200))
		time.Sleep(time.Second) // the bubble's clock: the tone went by, unsent
		synctest.Wait()
		if n := countFrames(r.srv, "input_audio_buffer.append"); n != 0 {
			t.Fatalf("%d appends before the key", n)
		}
		if manual, _ := r.desk.PushToTalk(); !manual {
			t.Fatal("push-to-talk not noticed from the credential's VAD")
		}
		r.desk.Talk()
		r.until(t, "you speaking", isState(voicectl.UserSpeaking))
		r.audio.Say(voicetest.Tone(200))
		time.Sleep(time.Second)
		r.desk.Talk()
		r.until(t, "thinking", isState(voicectl.Thinking))
		r.until(t, "reply", isFinal(voicectl.RoleAgent))
		if n := countFrames(r.srv, "input_audio_buffer.commit"); n != 1 {
			t.Errorf("%d commits, want 1", n)
		}
		if n := countFrames(r.srv, "input_audio_buffer.append"); n == 0 {
			t.Error("no audio sent while the key was down")
		}
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
	})
}

func countFrames(srv *voicetest.Server, typ string) int {
	n := 0
	for _, f := range srv.Received() {
		if strings.Contains(f, `"type":"`+typ+`"`) {
			n++
		}
	}
	return n
}

// TestAudioFailure: a sound card that will not open is an error before
// hearth is asked for anything.
func TestAudioFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := voicetest.StartPipe(t, voicetest.Options{})
		h := newStandIn(t, srv, voice.Settings{})
		boom := errors.New("no such device")
		d := voicectl.New(voicectl.Config{Hearth: h.link, Audio: &voicectltest.Audio{Fail: boom}, Session: voice.Options{HTTPClient: srv.HTTPClient()}})
		if err := d.Run(t.Context()); !errors.Is(err, boom) {
			t.Fatalf("Run = %v, want %v", err, boom)
		}
		if n := len(h.msgs); n != 0 {
			t.Errorf("%d messages to hearth, want none", n)
		}
	})
}

// TestEndsWithToolPending: a session that closes while hearth has not
// answered a tool call ends at once; it does not wait out the call.
func TestEndsWithToolPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := make(chan struct{}, 1)
		r := start(t, voicetest.Options{Dialect: voice.DialectOpenAI, Turns: []voicetest.Turn{{User: "look it up",
			Reply: voicetest.Reply{Call: &voicetest.Call{Name: "memory_search", Arguments: "{}"}}}}}, audio.HalfDuplex, voice.Settings{},
			func(h *standIn) { h.hang, h.calls = true, calls })
		r.until(t, "listening", isState(voicectl.Listening))
		r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
		<-calls
		t0 := time.Now()
		r.srv.DropAll() // OpenAI sessions end on a drop
		ev := r.until(t, "ended", func(ev voicectl.Event) bool { _, ok := ev.(voicectl.Ended); return ok })
		if ev.(voicectl.Ended).Err == nil {
			t.Error("a dropped session ended without an error")
		}
		if waited := time.Since(t0); waited > time.Second {
			t.Errorf("the session took %v to end after the drop", waited)
		}
		if n := r.h.count(ipc.TypeStopVoice); n != 1 {
			t.Errorf("%d stop_voice, want 1", n)
		}
	})
}

// TestTalkKeyBargesIn: on speakers (half duplex) the mic is closed while
// the agent talks; the talk key stops the agent at once, truncates its
// item at what was heard and opens the mic, so the user's next words reach
// the provider.
func TestTalkKeyBargesIn(t *testing.T) {
	const text = "one two three four five six seven eight nine ten"
	synctest.Test(t, func(t *testing.T) {
		r := start(t, voicetest.Options{Turns: []voicetest.Turn{
			{User: "count", Reply: voicetest.Reply{Transcript: text, AudioMS: 2000, HoldAfter: 10, LateDeltas: 2}},
			{User: "stop", Reply: voicetest.Reply{Transcript: "Okay.", AudioMS: 200}},
		}}, audio.HalfDuplex, voice.Settings{})
		r.until(t, "listening", isState(voicectl.Listening))
		r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
		r.until(t, "agent speaking", isState(voicectl.AgentSpeaking))
		// Speech while the agent talks is gated out…
		r.audio.Say(voicetest.Tone(300))
		time.Sleep(400 * time.Millisecond) // the bubble's clock: the speaker plays on
		synctest.Wait()
		if n := len(r.srv.Truncates()); n != 0 {
			t.Fatalf("%d truncates while gated", n)
		}
		// …until the key.
		r.desk.Talk()
		r.until(t, "truncated agent final", isFinal(voicectl.RoleAgent))
		r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
		r.until(t, "second reply", func(ev voicectl.Event) bool {
			f, ok := ev.(voicectl.Final)
			return ok && f.Role == voicectl.RoleAgent && f.Text == "Okay."
		})
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
		truncs := r.srv.Truncates()
		if len(truncs) != 1 {
			t.Fatalf("truncates %v, want one", truncs)
		}
		var agent []string
		for _, tr := range r.h.transcripts() {
			if tr.Role == "agent" {
				agent = append(agent, tr.Text)
			}
		}
		if want := []string{text[:len(text)*truncs[0]/2000], "Okay."}; !slices.Equal(agent, want) {
			t.Errorf("agent turns %q, want %q", agent, want)
		}
	})
}

// TestCutWithoutTruncated: the user talks over the agent and the session
// ends before the provider's truncated transcript arrives. The agent's
// item is stored once, marked incomplete, with what was known of it: the
// final text when it had come (sent), else the partial so far (held).
func TestCutWithoutTruncated(t *testing.T) {
	const text = "one two three four five six seven eight nine ten"
	for _, c := range []struct {
		hold int
		want string
	}{{0, text}, {10, "one two three four five"}} {
		t.Run(fmt.Sprintf("hold=%d", c.hold), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := start(t, voicetest.Options{NoTruncated: true, Turns: []voicetest.Turn{
					{User: "count", Reply: voicetest.Reply{Transcript: text, AudioMS: 2000, HoldAfter: c.hold}},
				}}, audio.FullDuplex, voice.Settings{})
				r.until(t, "listening", isState(voicectl.Listening))
				r.audio.Say(voicetest.Tone(300), voicetest.Silence(700))
				r.until(t, "agent speaking", isState(voicectl.AgentSpeaking))
				time.Sleep(300 * time.Millisecond) // the bubble's clock: the speaker plays 300 ms
				r.audio.Say(voicetest.Tone(300))
				r.until(t, "you speaking", isState(voicectl.UserSpeaking))
				synctest.Wait()
				if n := len(r.srv.Truncates()); n != 1 {
					t.Fatalf("%d truncates, want 1", n)
				}
				if err := r.stop(t); err != nil {
					t.Fatal(err)
				}
				var agent []ipc.Transcript
				for _, tr := range r.h.transcripts() {
					if tr.Role == "agent" {
						agent = append(agent, tr)
					}
				}
				if len(agent) != 1 || agent[0].Text != c.want || !agent[0].Incomplete || agent[0].Ref == "" {
					t.Fatalf("agent transcripts %+v, want one incomplete %q", agent, c.want)
				}
			})
		})
	}
}
