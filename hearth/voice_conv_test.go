package hearth_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory/journal"
)

// TestVoiceInConversation: a voice session talks in the conversation it
// was asked for. Its credential's text→voice injection holds that
// conversation's turns, not main's; its transcripts are stored there;
// stopping it gives that conversation's next text turn the voice→text
// injection, and main, never in voice, gets none.
func TestVoiceInConversation(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(filepath.Join(dir, "journal"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := &recModel{}
	h, err := hearth.New(hearth.Config{Journal: j, Models: fixed{model}, Voice: &fakeMinter{},
		ConversationsFile: filepath.Join(dir, "state", "conversations.json")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; j.Close() })
	if _, err := h.NewConversation("trip"); err != nil {
		t.Fatal(err)
	}
	mainF, tripF := follow(t, h, ""), follow(t, h, "trip")
	say := func(f *follower, conv, text string) []string {
		t.Helper()
		if err := h.SendTo(ctx, conv, "", text); err != nil {
			t.Fatal(err)
		}
		f.until(t, replies(1))
		var out []string
		for _, m := range model.last() {
			out = append(out, m.Content)
		}
		return out
	}
	say(mainF, "", "tea on the balcony")
	say(tripF, "trip", "Lisbon in May?")

	cred, err := h.RequestVoiceIn(ctx, "trip")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cred.Instructions, "Lisbon in May?") || strings.Contains(cred.Instructions, "balcony") {
		t.Errorf("trip's credential instructions, want trip's turns only:\n%s", cred.Instructions)
	}
	if err := h.AddTranscriptIn("trip", "t1", "user", "and the Algarve after", false); err != nil {
		t.Fatal(err)
	}
	tripF.until(t, func(ev hearth.Event) bool { s, ok := ev.(*hearth.TurnStored); return ok && s.Ref == "t1" })
	h.StopVoiceIn("trip")

	sent := strings.Join(say(tripF, "trip", "what did I say aloud?"), "\n")
	if !strings.Contains(sent, "[mode: voice→text") || !strings.Contains(sent, "the Algarve after") {
		t.Errorf("trip's next text turn lacks the voice→text injection with the transcript:\n%s", sent)
	}
	sent = strings.Join(say(mainF, "", "more tea"), "\n")
	if strings.Contains(sent, "[mode:") || strings.Contains(sent, "Algarve") {
		t.Errorf("main, never in voice, got an injection or trip's words:\n%s", sent)
	}
	recs, err := j.Tail(20)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Text == "and the Algarve after" && (r.Conv != "trip" || r.Mode != "voice") {
			t.Errorf("transcript stored as conv %q mode %q", r.Conv, r.Mode)
		}
	}
}
