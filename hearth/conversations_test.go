package hearth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// TailOf makes memJournal a hearth.Journal: the in-memory journal's
// records of one conversation.
func (j *memJournal) TailOf(conv string, n int, _ string) ([]journal.Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []journal.Record
	for _, r := range j.recs {
		if r.Conv == conv {
			out = append(out, r)
		}
	}
	return out[max(0, len(out)-n):], nil
}

// echoModel answers "re: " and the last user message, and remembers the
// user messages of every request.
type echoModel struct {
	mu   sync.Mutex
	seen [][]string
}

func (*echoModel) Name() string  { return "echo" }
func (*echoModel) Model() string { return "echo-1" }
func (m *echoModel) Stream(_ context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	var users []string
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			users = append(users, msg.Content)
		}
	}
	m.mu.Lock()
	m.seen = append(m.seen, users)
	m.mu.Unlock()
	text := "re: " + users[len(users)-1]
	onText(text)
	return llm.Response{Text: text, Model: "echo-1"}, nil
}

// requestWith returns the user messages of the request whose last one
// is last.
func (m *echoModel) requestWith(last string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.seen {
		if len(s) > 0 && s[len(s)-1] == last {
			return s
		}
	}
	return nil
}

// follower receives one subscription's events on a channel.
type follower struct {
	events chan hearth.Event
	sub    *hearth.Subscription
}

func follow(t *testing.T, h *hearth.Hearth, conv string) *follower {
	t.Helper()
	s, err := h.Subscribe(hearth.WatchOptions{Conversation: conv, Name: "test " + conv})
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", conv, err)
	}
	f := &follower{events: make(chan hearth.Event, 1024), sub: s}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, func(b []hearth.Event) error {
			for _, ev := range b {
				f.events <- ev
			}
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); s.Close(); <-done })
	return f
}

// until collects events until ok says the last one is what the test
// waits for.
func (f *follower) until(t *testing.T, ok func(hearth.Event) bool) []hearth.Event {
	t.Helper()
	var got []hearth.Event
	for {
		select {
		case ev := <-f.events:
			got = append(got, ev)
			if ok(ev) {
				return got
			}
		case <-t.Context().Done():
			t.Fatal("test ended waiting for an event")
		}
	}
}

func replies(n int) func(hearth.Event) bool {
	seen := 0
	return func(ev hearth.Event) bool {
		if _, ok := ev.(*hearth.ReplyDone); ok {
			seen++
		}
		return seen == n
	}
}

// recordsOf are the texts of the records the events carry.
func recordsOf(evs []hearth.Event) []string {
	var out []string
	for _, ev := range evs {
		switch e := ev.(type) {
		case *hearth.TurnStored:
			out = append(out, e.Record.Text)
		case *hearth.ReplyDone:
			out = append(out, e.Record.Text)
		}
	}
	return out
}

func convCore(t *testing.T, dir string, model hearth.Model) (*hearth.Hearth, *journal.Journal, func()) {
	t.Helper()
	j, err := journal.Open(filepath.Join(dir, "journal"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := hearth.New(hearth.Config{Journal: j, Models: fixed{model}, ConversationsFile: filepath.Join(dir, "state", "conversations.json")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done; j.Close() }) }
	t.Cleanup(stop)
	return h, j, stop
}

// TestConversationsKeepSeparateWindows: two conversations interleaved
// each answer from their own window, each subscriber sees its own
// conversation's turns only, the journal names the conversation, and the
// list has both with titles and counts.
func TestConversationsKeepSeparateWindows(t *testing.T) {
	model := &echoModel{}
	h, j, _ := convCore(t, t.TempDir(), model)
	if _, err := h.NewConversation("trip"); err != nil {
		t.Fatal(err)
	}
	mainF, tripF := follow(t, h, ""), follow(t, h, "trip")
	for _, m := range []struct{ conv, text string }{
		{"", "main one"}, {"trip", "trip one: Lisbon in May?"}, {"", "main two"}, {"trip", "trip two"},
	} {
		if err := h.SendTo(context.Background(), m.conv, "", m.text); err != nil {
			t.Fatalf("SendTo(%q): %v", m.conv, err)
		}
	}
	gotMain := recordsOf(mainF.until(t, replies(2)))
	gotTrip := recordsOf(tripF.until(t, replies(2)))
	if diff := cmp.Diff([]string{"main one", "re: main one", "main two", "re: main two"}, gotMain); diff != "" {
		t.Errorf("main's subscriber (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"trip one: Lisbon in May?", "re: trip one: Lisbon in May?", "trip two", "re: trip two"}, gotTrip); diff != "" {
		t.Errorf("trip's subscriber (-want +got):\n%s", diff)
	}
	for last, want := range map[string][]string{
		"trip two": {"trip one: Lisbon in May?", "trip two"},
		"main two": {"main one", "main two"},
	} {
		if diff := cmp.Diff(want, model.requestWith(last)); diff != "" {
			t.Errorf("the model's window for %q (-want +got):\n%s", last, diff)
		}
	}
	recs, err := j.Tail(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if wantTrip := strings.Contains(r.Text, "trip"); wantTrip != (r.Conv == "trip") {
			t.Errorf("record %q stored with conv %q", r.Text, r.Conv)
		}
	}
	list := h.Conversations()
	if len(list) != 2 {
		t.Fatalf("Conversations: %+v", list)
	}
	byID := map[string]hearth.ConversationInfo{}
	for _, c := range list {
		byID[c.ID] = c
	}
	if c := byID["trip"]; c.Title != "trip one: Lisbon in May?" || c.Records != 4 || c.First == "" || c.LastActive.IsZero() {
		t.Errorf("trip listed as %+v", c)
	}
	if c := byID[hearth.MainConversation]; c.Title != "main one" || c.Records != 4 {
		t.Errorf("main listed as %+v", c)
	}
}

// TestConversationsRestart: after a restart both conversations come back
// with their windows, from the registry's cache, from the journal alone
// (no cache), or from a damaged cache.
func TestConversationsRestart(t *testing.T) {
	for _, tt := range []struct {
		name      string
		cache     func(path string) error
		wantTitle string
	}{
		// The cache is read, not rebuilt: a title changed in it stays.
		{"cache", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, []byte(strings.Replace(string(b), `"title":"t1"`, `"title":"from the cache"`, 1)), 0o600)
		}, "from the cache"},
		{"no cache", os.Remove, "t1"},
		{"damaged cache", func(p string) error { return os.WriteFile(p, []byte("{not json"), 0o600) }, "t1"},
		{"cache behind the journal", nil, "t1"}, // see below
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cachePath := filepath.Join(dir, "state", "conversations.json")
			h, _, stop := convCore(t, dir, &echoModel{})
			if _, err := h.NewConversation("trip"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.NewConversation("empty"); err != nil {
				t.Fatal(err)
			}
			tripF := follow(t, h, "trip")
			mainF := follow(t, h, "")
			send := func(conv, text string) {
				t.Helper()
				if err := h.SendTo(context.Background(), conv, "", text); err != nil {
					t.Fatal(err)
				}
			}
			send("trip", "t1")
			send("", "m1")
			tripF.until(t, replies(1))
			mainF.until(t, replies(1))
			var behind []byte
			if tt.cache == nil {
				stopAndRead := func() []byte { b, _ := os.ReadFile(cachePath); return b }
				// The cache as it was after one turn each.
				stop()
				behind = stopAndRead()
				h, _, stop = convCore(t, dir, &echoModel{})
				tripF = follow(t, h, "trip")
				send("trip", "t2")
				tripF.until(t, replies(1))
			}
			stop()
			switch {
			case tt.cache == nil:
				if err := os.WriteFile(cachePath, behind, 0o600); err != nil {
					t.Fatal(err)
				}
			default:
				if err := tt.cache(cachePath); err != nil {
					t.Fatal(err)
				}
			}

			h2, _, _ := convCore(t, dir, &echoModel{})
			ids := []string{}
			for _, c := range h2.Conversations() {
				ids = append(ids, c.ID)
			}
			slices.Sort(ids)
			if diff := cmp.Diff([]string{"main", "trip"}, ids); diff != "" {
				t.Errorf("conversations after a restart (the empty one is gone) (-want +got):\n%s", diff)
			}
			wantTrip := []string{"t1", "re: t1"}
			if tt.cache == nil {
				wantTrip = append(wantTrip, "t2", "re: t2")
			}
			info, err := h2.Conversation("trip")
			if err != nil || info.Records != len(wantTrip) || info.Title != tt.wantTitle {
				t.Errorf("trip after a restart: %+v, %v", info, err)
			}
			for conv, want := range map[string][]string{"trip": wantTrip, "": {"m1", "re: m1"}} {
				s, err := h2.Subscribe(hearth.WatchOptions{Conversation: conv})
				if err != nil {
					t.Fatal(err)
				}
				var snap *hearth.Snapshot
				s.Run(context.Background(), func(b []hearth.Event) error {
					snap = b[0].(*hearth.Snapshot)
					return errors.New("enough")
				})
				s.Close()
				var got []string
				for _, r := range snap.Turns {
					got = append(got, r.Text)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("snapshot of %q after a restart (-want +got):\n%s", conv, diff)
				}
			}
		})
	}
}

// TestConversationIDs: validation, minting, conflicts and unknown ids.
func TestConversationIDs(t *testing.T) {
	h, _, _ := convCore(t, t.TempDir(), &echoModel{})
	code := func(err error) string {
		var p *hearth.Problem
		if errors.As(err, &p) {
			return p.Code
		}
		if err != nil {
			return err.Error()
		}
		return ""
	}
	for _, tt := range []struct {
		id, want string
	}{
		{"trip-2026_a", ""},
		{"trip-2026_a", hearth.CodeConflict},
		{"main", hearth.CodeConflict},
		{"Trip", hearth.CodeBadRequest},
		{"a b", hearth.CodeBadRequest},
		{"../x", hearth.CodeBadRequest},
		{strings.Repeat("a", 65), hearth.CodeBadRequest},
		{strings.Repeat("a", 64), ""},
	} {
		_, err := h.NewConversation(tt.id)
		if got := code(err); got != tt.want {
			t.Errorf("NewConversation(%q): %q, want %q", tt.id, got, tt.want)
		}
	}
	minted, err := h.NewConversation("")
	if err != nil || !hearth.ValidConversationID(minted.ID) || len(minted.ID) != 26 {
		t.Errorf("a minted id: %+v, %v", minted, err)
	}
	if _, err := h.Subscribe(hearth.WatchOptions{Conversation: "nope"}); code(err) != hearth.CodeConversationNotFound {
		t.Errorf("Subscribe to an unknown conversation: %v", err)
	}
	if err := h.SendTo(context.Background(), "nope", "r1", "hi"); code(err) != hearth.CodeConversationNotFound {
		t.Errorf("SendTo an unknown conversation: %v", err)
	}
	if _, err := h.History(context.Background(), hearth.HistoryQuery{Conversation: "nope"}); code(err) != hearth.CodeConversationNotFound {
		t.Errorf("History of an unknown conversation: %v", err)
	}
	if _, err := h.Conversation("nope"); code(err) != hearth.CodeConversationNotFound {
		t.Errorf("Conversation(unknown): %v", err)
	}
}

// TestConversationTitleForgotten: forgetting the message a title comes
// from clears the title, in the list and after a restart.
func TestConversationTitleForgotten(t *testing.T) {
	dir := t.TempDir()
	h, _, stop := convCore(t, dir, &echoModel{})
	if _, err := h.NewConversation("secret"); err != nil {
		t.Fatal(err)
	}
	f := follow(t, h, "secret")
	long := "my account number is 12345678 and " + strings.Repeat("more words ", 10)
	if err := h.SendTo(context.Background(), "secret", "", long); err != nil {
		t.Fatal(err)
	}
	evs := f.until(t, replies(1))
	info, _ := h.Conversation("secret")
	if want := []rune(long); info.Title == "" || len([]rune(info.Title)) != hearth.TitleRunes || !strings.HasPrefix(long, strings.TrimSuffix(info.Title, "…")) {
		t.Errorf("title %q of %q", info.Title, string(want[:10]))
	}
	var first string
	for _, ev := range evs {
		if e, ok := ev.(*hearth.TurnStored); ok && e.Record.Role == memory.RoleUser {
			first = e.Record.ID
		}
	}
	if _, err := h.Forget(context.Background(), hearth.ForgetRequest{IDs: []string{first}, By: hearth.ByOwner}); err != nil {
		t.Fatal(err)
	}
	if info, _ := h.Conversation("secret"); info.Title != "" {
		t.Errorf("title after its message was forgotten: %q", info.Title)
	}
	stop()
	h2, _, _ := convCore(t, dir, &echoModel{})
	if info, _ := h2.Conversation("secret"); strings.Contains(info.Title, "12345678") {
		t.Errorf("title after a restart: %q", info.Title)
	}
}

// TestConversationUnloadsWhenIdle: a conversation nobody follows leaves
// memory once its turns are answered (main stays), comes back from the
// journal on its next message with its window whole, and stays loaded
// while a client follows it, until that client leaves.
func TestConversationUnloadsWhenIdle(t *testing.T) {
	model := &echoModel{}
	h, _, _ := convCore(t, t.TempDir(), model)
	if _, err := h.NewConversation("trip"); err != nil {
		t.Fatal(err)
	}
	send := func(text string) {
		t.Helper()
		if err := h.SendTo(context.Background(), "trip", "", text); err != nil {
			t.Fatal(err)
		}
		if err := h.Settled(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	send("t1")
	if n := h.Health().Conversations; n != 1 {
		t.Errorf("loaded after an answered turn nobody follows: %d, want 1 (main)", n)
	}
	send("t2")
	if got := model.requestWith("t2"); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Errorf("the window after reloading: %q", got)
	}
	if info, _ := h.Conversation("trip"); info.Records != 4 {
		t.Errorf("trip after an unload and a reload: %+v", info)
	}
}

// TestConversationUnloadsWhenItsLastFollowerLeaves: followed, a
// conversation stays loaded after its turns; when the follower leaves,
// its worker unloads it.
func TestConversationUnloadsWhenItsLastFollowerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := hearth.New(hearth.Config{Journal: &memJournal{}, Models: fixed{&echoModel{}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); h.Run(ctx) }()
		if _, err := h.NewConversation("trip"); err != nil {
			t.Fatal(err)
		}
		s, err := h.Subscribe(hearth.WatchOptions{Conversation: "trip"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.SendTo(ctx, "trip", "", "t1"); err != nil {
			t.Fatal(err)
		}
		if err := h.Settled(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := h.Health().Conversations; n != 2 {
			t.Errorf("loaded while followed: %d, want 2", n)
		}
		s.Close()
		synctest.Wait() // the poke is handled
		if n := h.Health().Conversations; n != 1 {
			t.Errorf("loaded after its follower left: %d, want 1", n)
		}
		cancel()
		<-done
	})
}
