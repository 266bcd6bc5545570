package hearth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// gateModel is a curator model whose calls wait for the test: each call
// is announced on called, then answered by what arrives on answer (an
// error, or a reply's text).
type gateModel struct {
	called chan struct{}
	answer chan any
}

func newGateModel() *gateModel {
	return &gateModel{called: make(chan struct{}, 16), answer: make(chan any, 16)}
}

func (m *gateModel) Name() string  { return "gate" }
func (m *gateModel) Model() string { return "gate-1" }
func (m *gateModel) Stream(ctx context.Context, _ llm.Request, _ func(string)) (llm.Response, error) {
	m.called <- struct{}{}
	select {
	case <-ctx.Done():
		return llm.Response{}, context.Cause(ctx)
	case a := <-m.answer:
		if err, ok := a.(error); ok {
			return llm.Response{}, err
		}
		return llm.Response{Text: a.(string), Usage: &llm.Usage{InputTokens: 100, OutputTokens: 10}}, nil
	}
}

// startCore runs a core until the returned stop is called.
func startStoppable(t *testing.T, cfg hearth.Config) (*hearth.Hearth, func()) {
	t.Helper()
	h, err := hearth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return h, stop
}

// awaitReplies waits until n replies are stored.
func awaitReplies(t *testing.T, s *hearth.Subscription, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	got := 0
	errDone := errors.New("done")
	err := s.Run(ctx, func(evs []hearth.Event) error {
		for _, ev := range evs {
			if _, ok := ev.(*hearth.ReplyDone); ok {
				got++
			}
		}
		if got >= n {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("%d of %d replies: %v", got, n, err)
	}
}

// TestCuratorNeverBlocksChat: with the curator's model stuck, every turn
// is still answered, and the turns wait, counted as uncurated.
func TestCuratorNeverBlocksChat(t *testing.T) {
	v, j, _ := openVaultRoot(t)
	gate := newGateModel()
	h, _ := startStoppable(t, hearth.Config{
		Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: time.Second,
		Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: gate},
	})
	sub, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, m := range []string{"one", "two", "three"} {
		if err := h.Send("", m); err != nil {
			t.Fatal(err)
		}
	}
	awaitReplies(t, sub, 3)
	<-gate.called // the curator is stuck on the first turn, and chat went on
}

// TestCuratorCatchesUp: a model that fails leaves its turns after the
// durable cursor; a new start over the same journal and state dir
// curates them, once, and moves the cursor past them.
func TestCuratorCatchesUp(t *testing.T) {
	v, j, _ := openVaultRoot(t)
	state := t.TempDir()
	down := newGateModel()
	h, stop := startStoppable(t, hearth.Config{
		Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: time.Second,
		Curator: &hearth.CuratorConfig{StateDir: state, Model: down, Retry: backoff.Policy{Initial: time.Hour, Max: time.Hour}},
	})
	cursor0, err := os.ReadFile(filepath.Join(state, hearth.CursorFile))
	if err == nil && len(strings.TrimSpace(string(cursor0))) != 0 {
		t.Fatalf("a new journal's cursor is %q, want empty", cursor0)
	}
	sub, _ := h.Subscribe(hearth.WatchOptions{})
	if err := h.Send("", "I repaint the shed on Saturday."); err != nil {
		t.Fatal(err)
	}
	awaitReplies(t, sub, 1)
	sub.Close()
	<-down.called
	down.answer <- errors.New("provider down")
	// The failed pass waits an hour before the next attempt; a second
	// call would mean it did not.
	if err := h.Send("", "And the fence too."); err != nil {
		t.Fatal(err)
	}
	<-down.called // the second turn woke the curator: it tries again, the first turn first
	stop()
	if hl := h.CuratorHealth(); hl.Turns != 0 || hl.LastError == "" || hl.Calls != 2 {
		t.Fatalf("health after a failing model: %+v", hl)
	}
	cursor, _ := os.ReadFile(filepath.Join(state, hearth.CursorFile))
	if strings.TrimSpace(string(cursor)) != "" {
		t.Fatalf("cursor moved to %q though nothing was curated", cursor)
	}

	up := newGateModel()
	curated := make(chan hearth.Curated, 4)
	for range 2 {
		up.answer <- `{"ops":[],"questions":[]}`
	}
	h2, stop2 := startStoppable(t, hearth.Config{
		Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: time.Second,
		Curator: &hearth.CuratorConfig{StateDir: state, Model: up, Observe: func(c hearth.Curated) { curated <- c }},
	})
	// Nothing new is said: the restart alone catches up.
	var got []hearth.Curated
	for len(got) < 2 {
		select {
		case c := <-curated:
			got = append(got, c)
		case <-time.After(30 * time.Second):
			t.Fatalf("caught up %d of 2 turns: %+v", len(got), h2.CuratorHealth())
		}
	}
	stop2()
	if !got[0].None || !got[1].None || len(got[0].Turn) != 2 || len(got[1].Turn) != 2 {
		t.Errorf("curated %+v", got)
	}
	hl := h2.CuratorHealth()
	if hl.Turns != 2 || hl.Uncurated != 0 || hl.LastError != "" || hl.InputTokens != 200 || hl.Cursor != got[1].Turn[1] {
		t.Errorf("health after catching up: %+v", hl)
	}
	cursor, _ = os.ReadFile(filepath.Join(state, hearth.CursorFile))
	if strings.TrimSpace(string(cursor)) != got[1].Turn[1] {
		t.Errorf("cursor %q, want %s", cursor, got[1].Turn[1])
	}
}

// noneModel is a curator that answers at once: nothing to keep.
type noneModel struct{}

func (noneModel) Name() string  { return "none" }
func (noneModel) Model() string { return "none-1" }
func (noneModel) Stream(context.Context, llm.Request, func(string)) (llm.Response, error) {
	return llm.Response{Text: `{"ops":[],"questions":[]}`}, nil
}

// BenchmarkTurnCurator measures a turn (Send to its stored reply) with
// the curator off, on (answering at once), and on but stuck: the reply
// path pays one non-blocking send.
func BenchmarkTurnCurator(b *testing.B) {
	for _, bc := range []struct {
		name  string
		model hearth.Model // nil: the curator is off
	}{
		{"off", nil},
		{"on", noneModel{}},
		{"stuck", newGateModel()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			v, j, _ := openVaultRootB(b)
			cfg := hearth.Config{Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: time.Second}
			if bc.model != nil {
				cfg.Curator = &hearth.CuratorConfig{StateDir: b.TempDir(), Model: bc.model}
			}
			h, err := hearth.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); h.Run(ctx) }()
			defer func() { cancel(); <-done }()
			sub, err := h.Subscribe(hearth.WatchOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close()
			replies := make(chan struct{}, 1)
			go sub.Run(ctx, func(evs []hearth.Event) error {
				for _, ev := range evs {
					if _, ok := ev.(*hearth.ReplyDone); ok {
						replies <- struct{}{}
					}
				}
				return nil
			})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := h.Send("", "turn "+strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
				<-replies
			}
		})
	}
}

// openVaultRootB is openVaultRoot for a benchmark.
func openVaultRootB(b *testing.B) (*vault.Vault, *journal.Journal, string) {
	b.Helper()
	dir := b.TempDir()
	root, err := memory.Open(b.Context(), dir, data.Defaults(), nil)
	if err != nil {
		b.Fatal(err)
	}
	v, err := vault.Open(b.Context(), dir, data.Vault(), nil)
	if err != nil {
		b.Fatal(err)
	}
	j, err := journal.Open(root.ThreadsDir(), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return v, j, dir
}

// TestCuratorCuratesVoice: a voice exchange (transcripts, no text reply)
// is curated too: the agent's transcript completes the turn.
func TestCuratorCuratesVoice(t *testing.T) {
	v, j, _ := openVaultRoot(t)
	gate := newGateModel()
	gate.answer <- `{"ops":[],"questions":[]}`
	curated := make(chan hearth.Curated, 1)
	h, _ := startStoppable(t, hearth.Config{
		Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: time.Second,
		Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: gate, Observe: func(c hearth.Curated) { curated <- c }},
	})
	if err := h.AddTranscript("u", memory.RoleUser, "I start the new job on Monday."); err != nil {
		t.Fatal(err)
	}
	if err := h.AddTranscript("a", memory.RoleAgent, "Good luck with it."); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-curated:
		if len(c.Turn) != 2 || !c.None {
			t.Errorf("curated %+v, want the two transcripts, nothing kept", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the voice turn was not curated: %+v", h.CuratorHealth())
	}
}
