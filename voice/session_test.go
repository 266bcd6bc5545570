package voice_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mnemo/mnemo/voice"
	"github.com/mnemo/mnemo/voice/voicetest"
)

var dialects = []string{voice.DialectXAI, voice.DialectOpenAI}

type env struct {
	srv   *voicetest.Server
	creds *voicetest.Credentials
	s     *voice.Session
	seen  []voice.Event
}

func dial(t *testing.T, srv *voicetest.Server, st voice.Settings) *env {
	t.Helper()
	e := &env{srv: srv, creds: &voicetest.Credentials{Server: srv, Settings: st}}
	s, err := voice.Dial(t.Context(), e.creds, voice.Options{HTTPClient: srv.HTTPClient()})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	e.s = s
	t.Cleanup(func() {
		_ = s.Close()
		for range s.Events() {
		}
	})
	return e
}

func start(t *testing.T, o voicetest.Options, st voice.Settings) *env {
	t.Helper()
	return dial(t, voicetest.Start(t, o), st)
}

// next reads events until one of type T; every event read is kept in seen.
func next[T voice.Event](t *testing.T, e *env) T {
	t.Helper()
	for ev := range e.s.Events() {
		e.seen = append(e.seen, ev)
		if testing.Verbose() {
			t.Logf("event %T %.120v", ev, ev)
		}
		if v, ok := ev.(T); ok {
			return v
		}
		if c, ok := ev.(voice.Closed); ok {
			t.Fatalf("session closed waiting for %T: %v", *new(T), c.Err)
		}
	}
	t.Fatalf("events ended waiting for %T", *new(T))
	panic("unreachable")
}

// speak sends one user turn: speech then enough silence to end it.
func speak(t *testing.T, s *voice.Session) {
	t.Helper()
	for _, b := range [][]byte{voicetest.Tone(300), voicetest.Silence(600)} {
		if err := s.SendAudio(b); err != nil {
			t.Fatalf("SendAudio: %v", err)
		}
	}
}

func of[T voice.Event](evs []voice.Event) []T {
	var out []T
	for _, ev := range evs {
		if v, ok := ev.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func frames(t *testing.T, srv *voicetest.Server, typ string) []map[string]any {
	var out []map[string]any
	for _, f := range srv.Received() {
		var m map[string]any
		if err := json.Unmarshal([]byte(f), &m); err != nil {
			t.Fatalf("client frame %q: %v", f, err)
		}
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

func isRamp(pcm []byte) bool {
	for k := range len(pcm) / 2 {
		if int16(binary.LittleEndian.Uint16(pcm[2*k:])) != voicetest.ReplySample(k) {
			return false
		}
	}
	return true
}

// One spoken turn, audio captured before the session was ready: the
// connect procedure, the event order, transcript dedupe and the reply.
func TestTurn(t *testing.T) {
	for _, d := range dialects {
		for _, old := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/oldnames=%v", d, old), func(t *testing.T) {
				e := start(t, voicetest.Options{Dialect: d, OldNames: old, Turns: []voicetest.Turn{
					{User: "what time is it", Reply: voicetest.Reply{Transcript: "It is late.", AudioMS: 500}},
					{User: "thanks", Reply: voicetest.Reply{Transcript: "Welcome."}},
				}}, voice.Settings{Instructions: "be brief", Voice: "ara"})
				speak(t, e.s) // before session.updated: buffered, not sent
				ready := next[voice.SessionReady](t, e)
				if ready.Resumed {
					t.Error("fresh session reported Resumed")
				}
				final := next[voice.AgentTranscript](t, e)
				for !final.Final {
					final = next[voice.AgentTranscript](t, e)
				}
				next[voice.ResponseDone](t, e)
				speak(t, e.s)
				next[voice.ResponseDone](t, e)

				if n := e.srv.EarlyAudio(); n != 0 {
					t.Errorf("%d appends reached the server before session.updated", n)
				}
				if final.Text != "It is late." {
					t.Errorf("agent final = %q", final.Text)
				}
				var order []string
				for _, ev := range e.seen {
					switch ev.(type) {
					case voice.SessionReady, voice.SpeechStarted, voice.SpeechStopped:
						order = append(order, fmt.Sprintf("%T", ev))
					}
				}
				want := []string{"voice.SessionReady", "voice.SpeechStarted", "voice.SpeechStopped", "voice.SpeechStarted", "voice.SpeechStopped"}
				if !slices.Equal(order, want) {
					t.Errorf("order %v, want %v", order, want)
				}
				finals := map[string][]string{}
				for _, u := range of[voice.UserTranscript](e.seen) {
					if u.Final {
						finals[u.ItemID] = append(finals[u.ItemID], u.Text)
					}
				}
				var texts []string
				for _, f := range finals {
					if len(f) != 1 {
						t.Errorf("item has %d final user transcripts: %q", len(f), f)
					}
					texts = append(texts, f...)
				}
				slices.Sort(texts)
				if !slices.Equal(texts, []string{"thanks", "what time is it"}) {
					t.Errorf("user finals %q", texts)
				}
				var pcm []byte
				firstResp := ""
				for _, a := range of[voice.AgentAudio](e.seen) {
					if firstResp == "" {
						firstResp = a.ResponseID
					}
					if a.ResponseID == firstResp {
						pcm = append(pcm, a.PCM...)
					}
				}
				if len(pcm) != 2*voice.SampleRate/2 || !isRamp(pcm) {
					t.Errorf("reply audio: %d bytes, in order %v", len(pcm), isRamp(pcm))
				}
			})
		}
	}
}

// session.update carries the settings in the dialect's shape, with VAD
// always explicit.
func TestSessionUpdateShape(t *testing.T) {
	for _, d := range dialects {
		for _, manual := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/manual=%v", d, manual), func(t *testing.T) {
				st := voice.Settings{Instructions: "hi", Tools: []voice.Tool{{Name: "recall", Description: "search"}}}
				if manual {
					st.VAD.Mode = voice.VADManual
				}
				e := start(t, voicetest.Options{Dialect: d}, st)
				next[voice.SessionReady](t, e)
				ups := frames(t, e.srv, "session.update")
				if len(ups) != 1 {
					t.Fatalf("%d session.update", len(ups))
				}
				if first := e.srv.Received()[0]; !strings.Contains(first, `"session.update"`) {
					t.Errorf("first frame is not session.update: %s", first)
				}
				sess := ups[0]["session"].(map[string]any)
				var td any
				if d == voice.DialectXAI {
					var ok bool
					td, ok = sess["turn_detection"]
					if !ok {
						t.Fatal("xAI turn_detection missing")
					}
					if sess["resumption"].(map[string]any)["enabled"] != true {
						t.Error("xAI resumption not enabled")
					}
				} else {
					if sess["type"] != "realtime" {
						t.Error("OpenAI session.type missing")
					}
					in := sess["audio"].(map[string]any)["input"].(map[string]any)
					var ok bool
					if td, ok = in["turn_detection"]; !ok {
						t.Fatal("OpenAI audio.input.turn_detection missing")
					}
				}
				switch {
				case manual && d == voice.DialectXAI:
					if m, _ := td.(map[string]any); m == nil || m["type"] != nil {
						t.Errorf("manual xAI turn_detection = %v", td)
					}
				case manual:
					if td != nil {
						t.Errorf("manual OpenAI turn_detection = %v", td)
					}
				default:
					m := td.(map[string]any)
					if m["type"] != "server_vad" || m["threshold"] != 0.2 || m["silence_duration_ms"] != 500.0 || m["prefix_padding_ms"] != 300.0 {
						t.Errorf("turn_detection = %v", m)
					}
				}
				if tools := sess["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["type"] != "function" {
					t.Errorf("tools = %v", sess["tools"])
				}
				if manual { // push-to-talk: commit ends the turn
					if err := e.s.SendAudio(voicetest.Tone(200)); err != nil {
						t.Fatal(err)
					}
					if err := e.s.Commit(); err != nil {
						t.Fatal(err)
					}
					u := next[voice.UserTranscript](t, e)
					for !u.Final {
						u = next[voice.UserTranscript](t, e)
					}
					next[voice.ResponseDone](t, e)
					if len(of[voice.SpeechStarted](e.seen)) != 0 {
						t.Error("speech events in manual mode")
					}
				}
			})
		}
	}
}

// A connect that never gets session.created is abandoned after 5 s for a
// new credential; fake time, in-memory network.
func TestCreatedTimeoutRetriesWithNewCredential(t *testing.T) {
	for _, d := range dialects {
		for _, silent := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/silent=%d", d, silent), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := voicetest.StartPipe(t, voicetest.Options{Dialect: d})
					srv.SetSilent(silent)
					creds := &voicetest.Credentials{Server: srv}
					t0 := time.Now()
					s, err := voice.Dial(t.Context(), creds, voice.Options{HTTPClient: srv.HTTPClient()})
					hs := srv.Handshakes()
					if silent == 3 {
						if err == nil {
							s.Close()
							t.Fatal("Dial succeeded with every connect silent")
						}
					} else {
						if err != nil {
							t.Fatalf("Dial: %v", err)
						}
						defer func() {
							s.Close()
							for range s.Events() {
							}
						}()
						ev := <-s.Events()
						if _, ok := ev.(voice.SessionReady); !ok {
							t.Fatalf("first event %T", ev)
						}
					}
					if len(hs) != 3 || creds.Calls() != 3 {
						t.Fatalf("%d handshakes, %d credentials; want 3", len(hs), creds.Calls())
					}
					auths := map[string]bool{}
					for _, h := range hs {
						auths[h.Authorization] = true
					}
					if len(auths) != 3 {
						t.Errorf("credentials reused: %v", auths)
					}
					if waited := time.Since(t0); waited < time.Duration(silent)*5*time.Second {
						t.Errorf("gave up after %v", waited)
					}
				})
			})
		}
	}
}

// Barge-in: truncate at the heard point, cancel the active response, drop
// its late deltas; the truncated transcript is the agent's final words.
func TestBargeIn(t *testing.T) {
	const text = "one two three four five six seven eight nine ten"
	cases := []struct {
		name   string
		heard  int // ms passed to Interrupt; 0: from Playback at 150 ms
		wantMS int
	}{
		{name: "playback", wantMS: 150},
		{name: "beyond-received", heard: 5000, wantMS: 300}, // clamped to the 3 deltas received
	}
	for _, d := range dialects {
		for _, tc := range cases {
			t.Run(d+"/"+tc.name, func(t *testing.T) {
				e := start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{{User: "count",
					Reply: voicetest.Reply{Transcript: text, AudioMS: 1000, HoldAfter: 3, LateDeltas: 2}}}}, voice.Settings{})
				next[voice.SessionReady](t, e)
				speak(t, e.s)
				var p voice.Playback
				for range 3 {
					p.Add(next[voice.AgentAudio](t, e))
				}
				p.Advance(voice.SampleRate * 150 / 1000) // 150 ms reached the ear
				mark := len(e.seen)
				if tc.heard == 0 {
					if err := e.s.InterruptPlayback(&p); err != nil {
						t.Fatal(err)
					}
					if _, _, ok := p.Heard(); ok {
						t.Error("playback not flushed")
					}
				} else if err := e.s.Interrupt(tc.heard); err != nil {
					t.Fatal(err)
				}
				var done voice.ResponseDone
				var tr voice.AgentTranscript
				for done.ResponseID == "" || !tr.Truncated { // the two race on the server
					switch ev := next[voice.Event](t, e).(type) {
					case voice.ResponseDone:
						done = ev
					case voice.AgentTranscript:
						if ev.Truncated {
							tr = ev
						}
					}
				}
				if done.Status != "cancelled" {
					t.Errorf("response status %q", done.Status)
				}
				if n := len(of[voice.AgentAudio](e.seen[mark:])); n != 0 {
					t.Errorf("%d late audio deltas delivered", n)
				}
				if !tr.Final || tr.Text != text[:len(text)*tc.wantMS/1000] {
					t.Errorf("truncated transcript %+v", tr)
				}
				if got := e.srv.Truncates(); !slices.Equal(got, []int{tc.wantMS}) {
					t.Errorf("truncates %v", got)
				}
				if n := len(frames(t, e.srv, "response.cancel")); n != 1 {
					t.Errorf("%d response.cancel", n)
				}
				for _, a := range of[voice.AgentTranscript](e.seen) {
					if a.Final && !a.Truncated {
						t.Errorf("untruncated final after barge-in: %+v", a)
					}
				}
			})
		}
	}
}

// Function calls: one event per call_id, outputs after response.done, one
// response.create, then the spoken answer.
func TestFunctionCall(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			e := start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{{User: "remember",
				Reply: voicetest.Reply{Call: &voicetest.Call{Name: "recall", Arguments: `{"q":"tea"}`},
					Then: &voicetest.Reply{Transcript: "You like tea."}}}}}, voice.Settings{})
			next[voice.SessionReady](t, e)
			speak(t, e.s)
			call := next[voice.FunctionCall](t, e)
			if call.Name != "recall" || call.Arguments != `{"q":"tea"}` {
				t.Errorf("call %+v", call)
			}
			if err := e.s.SendFunctionOutputs([]voice.FunctionOutput{{CallID: call.CallID, Output: "tea"}}); err != nil {
				t.Fatal(err)
			}
			next[voice.ResponseDone](t, e)
			a := next[voice.AgentTranscript](t, e)
			for !a.Final {
				a = next[voice.AgentTranscript](t, e)
			}
			next[voice.ResponseDone](t, e)
			if a.Text != "You like tea." {
				t.Errorf("answer %q", a.Text)
			}
			if n := len(of[voice.FunctionCall](e.seen)); n != 1 {
				t.Errorf("%d FunctionCall events", n)
			}
			if got := e.srv.Outputs(); !slices.Equal(got, []string{call.CallID + "=tea"}) {
				t.Errorf("outputs %v", got)
			}
			if n := len(frames(t, e.srv, "response.create")); n != 1 {
				t.Errorf("%d response.create", n)
			}
		})
	}
}

// Errors: the two harmless races are swallowed, others surface and the
// session goes on.
func TestRecoverableErrorKeepsSession(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			e := start(t, voicetest.Options{Dialect: d}, voice.Settings{})
			next[voice.SessionReady](t, e)
			e.srv.Inject(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "Cancellation failed: no active response found"}})
			e.srv.Inject(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "Conversation already has an active response"}})
			e.srv.Inject(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_event", "code": "bad", "message": "unknown field"}})
			er := next[voice.Error](t, e)
			if er.Code != "bad" || !er.Recoverable {
				t.Errorf("error %+v", er)
			}
			speak(t, e.s)
			next[voice.ResponseDone](t, e)
			if n := len(of[voice.Error](e.seen)); n != 1 {
				t.Errorf("%d error events", n)
			}
		})
	}
}

// A dropped xAI connection resumes the conversation with a new credential
// and conversation_id; OpenAI has no resumption and closes.
func TestResume(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := voicetest.StartPipe(t, voicetest.Options{Dialect: d})
				e := dial(t, srv, voice.Settings{})
				first := next[voice.SessionReady](t, e)
				speak(t, e.s)
				next[voice.ResponseDone](t, e)
				srv.DropAll()
				if d == voice.DialectOpenAI {
					c := next[voice.Closed](t, e)
					if c.Err == nil {
						t.Error("drop closed without error")
					}
					return
				}
				again := next[voice.SessionReady](t, e)
				if !again.Resumed || again.ConversationID != first.ConversationID || first.ConversationID == "" {
					t.Errorf("resumed %+v after %+v", again, first)
				}
				hs := srv.Handshakes()
				if last := hs[len(hs)-1].URL; !strings.Contains(last, "conversation_id="+first.ConversationID) {
					t.Errorf("resume URL %q", last)
				}
				speak(t, e.s)
				next[voice.ResponseDone](t, e)
				if n := len(of[voice.Reconnecting](e.seen)); n != 1 {
					t.Errorf("%d Reconnecting", n)
				}
			})
		})
	}
}

// Resumption gives up after three attempts.
func TestResumeGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := voicetest.StartPipe(t, voicetest.Options{})
		e := dial(t, srv, voice.Settings{})
		next[voice.SessionReady](t, e)
		srv.SetRefuse(true)
		srv.DropAll()
		var attempts []int
		for ev := range e.s.Events() {
			switch v := ev.(type) {
			case voice.Reconnecting:
				attempts = append(attempts, v.Attempt)
			case voice.Closed:
				if v.Err == nil {
					t.Error("Closed without error")
				}
			}
		}
		if !slices.Equal(attempts, []int{1, 2, 3}) {
			t.Errorf("attempts %v", attempts)
		}
		if n := len(srv.Handshakes()); n != 4 {
			t.Errorf("%d handshakes, want 1+3", n)
		}
	})
}

// The credential appears only in the Authorization header.
func TestCredentialOnlyInAuth(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			e := start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{{User: "x",
				Reply: voicetest.Reply{Call: &voicetest.Call{Name: "f", Arguments: "{}"}}}}}, voice.Settings{})
			next[voice.SessionReady](t, e)
			speak(t, e.s)
			call := next[voice.FunctionCall](t, e)
			_ = e.s.SendFunctionOutputs([]voice.FunctionOutput{{CallID: call.CallID, Output: "ok"}})
			next[voice.ResponseDone](t, e)
			next[voice.ResponseDone](t, e)
			e.s.Close()
			for ev := range e.s.Events() {
				e.seen = append(e.seen, ev)
				if testing.Verbose() {
					t.Logf("event %T %.120v", ev, ev)
				}
			}
			secrets := e.srv.Minted()
			if len(secrets) == 0 {
				t.Fatal("nothing minted")
			}
			var everything []string
			everything = append(everything, e.srv.Received()...)
			for _, ev := range e.seen {
				everything = append(everything, fmt.Sprintf("%#v", ev))
			}
			for _, h := range e.srv.Handshakes() {
				everything = append(everything, h.URL)
				if !slices.Contains(secrets, strings.TrimPrefix(h.Authorization, "Bearer ")) {
					t.Errorf("handshake auth %q is not a minted secret", h.Authorization)
				}
			}
			for _, sec := range append(secrets, "test-api-key") {
				for _, s := range everything {
					if strings.Contains(s, sec) {
						t.Errorf("credential in %q", s)
					}
				}
			}
		})
	}
}

type fixed struct{ c voice.Credential }

func (f fixed) Credential(context.Context) (voice.Credential, voice.Settings, error) {
	return f.c, voice.Settings{}, nil
}

// The stand-in's client-secret endpoint and handshake auth are what the
// providers document: 401 without a key, 400 (xAI) for a wrong one,
// secrets single use and expiring; a refused credential never leaks into
// the error.
func TestStandInAuth(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			var mu sync.Mutex
			now := time.Unix(1_800_000_000, 0)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			srv := voicetest.Start(t, voicetest.Options{Dialect: d, Now: clock})
			mint := func(key string) (int, string) {
				req, _ := http.NewRequest(http.MethodPost, srv.SecretsURL(), strings.NewReader(`{"expires_after":{"seconds":60}}`))
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				resp, err := srv.HTTPClient().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&body)
				b, _ := json.Marshal(body)
				return resp.StatusCode, string(b)
			}
			if code, _ := mint(""); code != 401 {
				t.Errorf("no key: HTTP %d", code)
			}
			wantBad := 400
			if d == voice.DialectOpenAI {
				wantBad = 401
			}
			if code, body := mint("wrong"); code != wantBad || !strings.Contains(body, "Incorrect API key") {
				t.Errorf("wrong key: HTTP %d %s", code, body)
			}
			creds := &voicetest.Credentials{Server: srv}
			cred, _, err := creds.Credential(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			opts := voice.Options{HTTPClient: srv.HTTPClient(), ConnectAttempts: 1}
			s, err := voice.Dial(t.Context(), fixed{cred}, opts)
			if err != nil {
				t.Fatalf("first use: %v", err)
			}
			s.Close()
			for range s.Events() {
			}
			_, err = voice.Dial(t.Context(), fixed{cred}, opts)
			if err == nil || strings.Contains(err.Error(), cred.Value) {
				t.Errorf("second use of a secret: %v", err)
			}
			cred2, _, _ := creds.Credential(t.Context())
			mu.Lock()
			now = now.Add(601 * time.Second)
			mu.Unlock()
			if _, err := voice.Dial(t.Context(), fixed{cred2}, opts); err == nil {
				t.Error("expired secret accepted")
			}
			noAuth := cred2
			noAuth.Value = ""
			if _, err := voice.Dial(t.Context(), fixed{noAuth}, opts); err == nil || !strings.Contains(err.Error(), "401") {
				t.Errorf("no credential: %v", err)
			}
		})
	}
}

// Mic audio captured before session.updated waits for it: nothing reaches
// the server early, and the buffered turn is heard once ready. net.Pipe
// writes complete only when read, so synctest.Wait sees them processed.
func TestNoAudioBeforeSessionUpdated(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := voicetest.StartPipe(t, voicetest.Options{Dialect: d, HoldUpdated: true})
				e := dial(t, srv, voice.Settings{})
				speak(t, e.s)
				synctest.Wait()
				if n := len(frames(t, srv, "input_audio_buffer.append")); n != 0 {
					t.Fatalf("%d appends before session.updated", n)
				}
				srv.Release()
				next[voice.SessionReady](t, e)
				u := next[voice.UserTranscript](t, e)
				for !u.Final {
					u = next[voice.UserTranscript](t, e)
				}
				next[voice.ResponseDone](t, e)
				if n := srv.EarlyAudio(); n != 0 {
					t.Errorf("%d early appends", n)
				}
			})
		})
	}
}

// Function outputs given while the calling response is still active wait
// for its response.done; otherwise the server refuses the response.create.
func TestFunctionOutputsWaitForResponseDone(t *testing.T) {
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := voicetest.StartPipe(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{{User: "x",
					Reply: voicetest.Reply{Call: &voicetest.Call{Name: "f", Arguments: "{}"}, HoldAfter: 1,
						Then: &voicetest.Reply{Transcript: "after"}}}}})
				e := dial(t, srv, voice.Settings{})
				next[voice.SessionReady](t, e)
				speak(t, e.s)
				call := next[voice.FunctionCall](t, e)
				if err := e.s.SendFunctionOutputs([]voice.FunctionOutput{{CallID: call.CallID, Output: "ok"}}); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if n := len(frames(t, srv, "response.create")); n != 0 {
					t.Fatalf("response.create sent while the response was active")
				}
				srv.Release()
				a := next[voice.AgentTranscript](t, e)
				for !a.Final {
					a = next[voice.AgentTranscript](t, e)
				}
				if a.Text != "after" {
					t.Errorf("answer %q", a.Text)
				}
			})
		})
	}
}

// Barge-in by voice: the server cancels its own reply on speech_started,
// the client truncates at the heard point; the cancel that may race the
// server's is harmless and never surfaces; the user's turn then goes on.
func TestBargeInBySpeech(t *testing.T) {
	const text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) {
			e := start(t, voicetest.Options{Dialect: d, Turns: []voicetest.Turn{
				{User: "tell me", Reply: voicetest.Reply{Transcript: text, AudioMS: 1000, HoldAfter: 2}},
				{User: "stop", Reply: voicetest.Reply{Transcript: "Stopped."}},
			}}, voice.Settings{})
			next[voice.SessionReady](t, e)
			speak(t, e.s)
			var p voice.Playback
			p.Add(next[voice.AgentAudio](t, e))
			p.Add(next[voice.AgentAudio](t, e))
			p.Advance(voice.SampleRate / 10) // 100 ms heard
			if err := e.s.SendAudio(voicetest.Tone(200)); err != nil {
				t.Fatal(err)
			}
			next[voice.SpeechStarted](t, e)
			if err := e.s.InterruptPlayback(&p); err != nil {
				t.Fatal(err)
			}
			if err := e.s.SendAudio(voicetest.Silence(600)); err != nil {
				t.Fatal(err)
			}
			var tr voice.AgentTranscript
			var finals []string
			for len(finals) < 1 || !tr.Truncated {
				switch ev := next[voice.Event](t, e).(type) {
				case voice.AgentTranscript:
					if ev.Truncated {
						tr = ev
					} else if ev.Final {
						finals = append(finals, ev.Text)
					}
				}
			}
			if tr.Text != text[:len(text)/10] {
				t.Errorf("truncated %q", tr.Text)
			}
			if !slices.Equal(finals, []string{"Stopped."}) {
				t.Errorf("agent finals %q", finals)
			}
			if errs := of[voice.Error](e.seen); len(errs) != 0 {
				t.Errorf("errors surfaced: %+v", errs)
			}
			var statuses []string
			for _, r := range of[voice.ResponseDone](e.seen) {
				statuses = append(statuses, r.Status)
			}
			if len(statuses) < 1 || statuses[0] != "cancelled" {
				t.Errorf("response statuses %v", statuses)
			}
		})
	}
}
