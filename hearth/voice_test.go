package hearth_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// memJournal is an in-memory journal whose clock is the test's (fake,
// inside a synctest bubble).
type memJournal struct {
	mu   sync.Mutex
	recs []journal.Record
}

func (j *memJournal) Append(_ context.Context, r journal.Record) (journal.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r.ID = fmt.Sprintf("r%02d", len(j.recs)+1)
	if r.TS.IsZero() {
		r.TS = time.Now().UTC()
	}
	j.recs = append(j.recs, r)
	return r, nil
}
func (j *memJournal) Tail(n int) ([]journal.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]journal.Record(nil), j.recs[max(0, len(j.recs)-n):]...), nil
}
func (j *memJournal) Find(context.Context, []string) (map[string]journal.Record, error) {
	return nil, nil
}
func (j *memJournal) ScanAfter(ctx context.Context, id string, fn func(journal.Record) error) error {
	j.mu.Lock()
	recs := append([]journal.Record(nil), j.recs...)
	j.mu.Unlock()
	after := id == ""
	for _, r := range recs {
		if after {
			if err := fn(r); err != nil {
				return err
			}
		}
		after = after || r.ID == id
	}
	return nil
}
func (j *memJournal) Purge(context.Context) (journal.PurgeReport, error) {
	return journal.PurgeReport{}, nil
}
func (j *memJournal) texts() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, r := range j.recs {
		out = append(out, r.Text)
	}
	return out
}

// fakeMinter mints numbered values, or fails with err.
type fakeMinter struct {
	mu  sync.Mutex
	n   int
	err error
}

func (m *fakeMinter) MintVoice(context.Context) (hearth.VoiceCredential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return hearth.VoiceCredential{}, m.err
	}
	m.n++
	return hearth.VoiceCredential{
		Value: fmt.Sprintf("eph-%d", m.n), ExpiresAt: time.Now().Add(10 * time.Minute), URL: "wss://voice.invalid/v1/realtime?model=v",
		Model: "v", Dialect: "xai", Voice: "eve", VAD: hearth.VoiceVAD{Type: "server_vad", Threshold: 0.2, Silence: 500 * time.Millisecond},
	}, nil
}

type fakeAnchor struct{}

func (fakeAnchor) SessionContext() ([]llm.Message, error) {
	return []llm.Message{{Role: llm.RoleSystem, Content: "AGENT.md: you are June.\n\ncontinuity: {\"name\":\"June\"}"}}, nil
}

// fakeMemory answers Relevant with a fixed block naming its query.
type fakeMemory struct{}

func (fakeMemory) Relevant(_ context.Context, req memory.ContextRequest) string {
	return "Relevant memories (query: " + strings.ReplaceAll(req.Query, "\n", " / ") + "):\n- the owner likes oolong"
}
func (fakeMemory) Search(context.Context, memory.SearchRequest) ([]memory.Hit, error) {
	return nil, nil
}
func (fakeMemory) Notify(string)                                {}
func (fakeMemory) Health() *memory.IndexHealth                  { return nil }
func (fakeMemory) Forget(context.Context, []string, bool) error { return nil }

// recModel answers every turn "ok" and keeps what it was sent.
type recModel struct {
	mu   sync.Mutex
	reqs [][]llm.Message
}

func (m *recModel) Name() string  { return "rec" }
func (m *recModel) Model() string { return "rec-1" }
func (m *recModel) Stream(_ context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, append([]llm.Message(nil), req.Messages...))
	m.mu.Unlock()
	onText("ok")
	return llm.Response{Text: "ok"}, nil
}
func (m *recModel) last() []llm.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

type voiceCore struct {
	h     *hearth.Hearth
	j     *memJournal
	model *recModel
}

// startVoiceCore runs a core inside the caller's synctest bubble.
func startVoiceCore(t *testing.T, j *memJournal, minter hearth.VoiceMinter) *voiceCore {
	t.Helper()
	if j == nil {
		j = &memJournal{}
	}
	m := &recModel{}
	cfg := hearth.Config{Journal: j, Models: fixed{m}, Anchor: fakeAnchor{}, Memory: fakeMemory{}}
	if minter != nil {
		cfg.Voice = minter
	}
	return &voiceCore{h: runCore(t, cfg), j: j, model: m}
}

// settle waits until the core has handled all it was asked.
func (c *voiceCore) settle(t *testing.T) {
	t.Helper()
	if err := c.h.Settled(context.Background()); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
}

func (c *voiceCore) say(t *testing.T, text string) {
	t.Helper()
	if err := c.h.Send("", text); err != nil {
		t.Fatal(err)
	}
	c.settle(t)
	time.Sleep(time.Second) // fake time: turns a second apart
}

func (c *voiceCore) speak(t *testing.T, role, text string) {
	t.Helper()
	if err := c.h.AddTranscript("", role, text); err != nil {
		t.Fatal(err)
	}
	c.settle(t)
	time.Sleep(time.Second)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func render(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "=== %s\n%s\n", m.Role, m.Content)
	}
	return b.String()
}

// TestRequestVoiceInstructions: a voice credential carries the minted
// value and instructions made of AGENT.md and the anchor, relevant
// memories and the text→voice injection (testdata/voice-text-to-voice.golden):
// the mode block, the last three turns since the last switch, the hint and
// the sentinel. The journal is not touched.
func TestRequestVoiceInstructions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startVoiceCore(t, nil, &fakeMinter{})
		c.say(t, "what tea do I like?")
		c.say(t, "and in the morning?\nplease")
		stored := len(c.j.texts())
		cred, err := c.h.RequestVoice(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if cred.Value != "eph-1" || cred.Dialect != "xai" || cred.VAD.Threshold != 0.2 {
			t.Errorf("credential = %+v", cred)
		}
		golden(t, "voice-text-to-voice.golden", cred.Instructions)
		if got := len(c.j.texts()); got != stored {
			t.Errorf("RequestVoice stored %d records; injection is never journaled", got-stored)
		}
		// A client may ask again: a fresh value, and no second injection.
		again, err := c.h.RequestVoice(context.Background())
		if err != nil || again.Value != "eph-2" {
			t.Fatalf("second request = %q, %v", again.Value, err)
		}
		if strings.Contains(again.Instructions, "[mode:") || !strings.Contains(again.Instructions, "AGENT.md") {
			t.Errorf("a reconnect without a mode change injected again, or lost AGENT.md:\n%s", again.Instructions)
		}
	})
}

// TestVoiceToTextInjection: stop_voice primes the voice→text injection;
// the next text turn's model context has it just before the owner's
// message (testdata/voice-voice-to-text.golden), the one after does not,
// and the journal never holds it.
func TestVoiceToTextInjection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startVoiceCore(t, nil, &fakeMinter{})
		c.say(t, "hello")
		if _, err := c.h.RequestVoice(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		c.speak(t, "user", "I'm making oolong")
		c.speak(t, "agent", "lovely, steep it three minutes")
		c.speak(t, "user", "thanks")
		c.speak(t, "agent", "enjoy")
		c.h.StopVoice()
		time.Sleep(time.Second)
		c.say(t, "what was I making?")
		golden(t, "voice-voice-to-text.golden", render(c.model.last()))
		c.say(t, "and now?")
		if strings.Contains(render(c.model.last()), "[mode:") {
			t.Errorf("the injection came twice:\n%s", render(c.model.last()))
		}
		for _, s := range c.j.texts() {
			if strings.Contains(s, "[mode:") || strings.Contains(s, hearth.InjectSentinel) {
				t.Errorf("the journal holds an injection: %q", s)
			}
		}
		// A second stop without voice changes nothing.
		c.h.StopVoice()
		c.say(t, "still text")
		if strings.Contains(render(c.model.last()), "[mode:") {
			t.Errorf("a stop without voice injected")
		}
	})
}

// TestStopThenTypeRace: transcripts sent just before stop_voice, and a
// message typed at once after it, all queued before any is stored: the
// injection has the transcripts and reaches that very message.
func TestStopThenTypeRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startVoiceCore(t, nil, &fakeMinter{})
		if _, err := c.h.RequestVoice(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		// No settling in between: all of it races the converse loop.
		c.h.AddTranscript("", "user", "remember the kettle")
		c.h.AddTranscript("", "agent", "I will")
		c.h.StopVoice()
		if err := c.h.Send("", "did you hear me?"); err != nil {
			t.Fatal(err)
		}
		c.settle(t)
		got := render(c.model.last())
		for _, want := range []string{"[mode: voice→text, by: user", "- you: remember the kettle", "- agent: I will"} {
			if !strings.Contains(got, want) {
				t.Errorf("the first text turn after stop lacks %q:\n%s", want, got)
			}
		}
	})
}

// TestReconnectAfterRestart: a hearth that restarts while the
// conversation is in voice injects once, "by: reconnect", on the next
// voice request, then debounces.
func TestReconnectAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &memJournal{}
		at := time.Now().UTC()
		j.Append(context.Background(), journal.Record{Role: "user", Text: "typed", Mode: "text", TS: at})
		j.Append(context.Background(), journal.Record{Role: "user", Text: "spoken", Mode: "voice", TS: at.Add(time.Second)})
		time.Sleep(5 * time.Second)
		c := startVoiceCore(t, j, &fakeMinter{})
		cred, err := c.h.RequestVoice(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := "[mode: text→voice, by: reconnect"; !strings.Contains(cred.Instructions, want) || !strings.Contains(cred.Instructions, "- you: spoken") || strings.Contains(cred.Instructions, "- you: typed") {
			t.Errorf("instructions after a restart in voice lack %q and the voice turn alone:\n%s", want, cred.Instructions)
		}
		again, _ := c.h.RequestVoice(context.Background())
		if strings.Contains(again.Instructions, "[mode:") {
			t.Errorf("the reconnect injection was not debounced")
		}
	})
}

// TestRequestVoiceRefused: no voice provider is one clear problem naming
// what to set; a failed mint keeps the minter's safe message; neither
// switches the mode.
func TestRequestVoiceRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startVoiceCore(t, nil, nil)
		_, err := c.h.RequestVoice(context.Background())
		var p *hearth.Problem
		if !errors.As(err, &p) || p.Code != hearth.CodeNoVoiceProvider || !strings.Contains(p.Message, "XAI_API_KEY") {
			t.Errorf("RequestVoice without a provider = %v, want %s naming XAI_API_KEY", err, hearth.CodeNoVoiceProvider)
		}
		m := &fakeMinter{err: errors.New("could not start voice: the voice provider is rate limiting — try again in a minute")}
		c2 := startVoiceCore(t, nil, m)
		_, err = c2.h.RequestVoice(context.Background())
		if !errors.As(err, &p) || p.Code != hearth.CodeProviderError || p.Message != m.err.Error() {
			t.Errorf("RequestVoice with a failing minter = %v", err)
		}
		m.mu.Lock()
		m.err = nil
		m.mu.Unlock()
		cred, err := c2.h.RequestVoice(context.Background())
		if err != nil || !strings.Contains(cred.Instructions, "[mode: text→voice, by: user") {
			t.Errorf("after a failed mint the next request must still inject: %v\n%s", err, cred.Instructions)
		}
	})
}
