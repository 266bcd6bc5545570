package hearth_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// TestForgetPerConversation: record ids are global, and two
// conversations' records interleave. Each conversation is flushed (its
// summary cites the first and last record it covers; its cursor says
// so). Forgetting a record of one conversation removes that
// conversation's summary and resets its cursor; the other's summary,
// whose span merely contains the id, stays, and so does its cursor. A
// period's summary (daily) covers every conversation: it goes.
func TestForgetPerConversation(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	ctx := t.Context()
	const side = "side"
	ids := map[string][]string{}
	for i := range 6 {
		for _, conv := range []string{hearth.MainConversation, side} {
			r := journal.Record{Role: memory.RoleUser, Text: conv + " says something", Mode: "text"}
			if i%2 == 1 {
				r.Role, r.Text = memory.RoleAgent, conv+" answers"
			}
			if conv != hearth.MainConversation {
				r.Conv = conv
			}
			rec, err := j.Append(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			ids[conv] = append(ids[conv], rec.ID)
		}
	}
	state := t.TempDir()
	summaries := map[string]string{}
	for _, conv := range []string{hearth.MainConversation, side} {
		first, last := ids[conv][0], ids[conv][len(ids[conv])-1]
		path := "summaries/threads/" + conv + "-" + first + ".md"
		summaries[conv] = path
		n := &vault.Note{ID: vault.NewNoteID(), Title: "Conversation " + conv + " so far", Type: "summary", Confidence: 1,
			Sources: []vault.Source{{Thread: conv, Turn: first}, {Thread: conv, Turn: last}}, Body: []byte(conv + " talked.\n")}
		if _, err := v.Apply(ctx, &vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpCreate, Path: path, Content: string(n.Format()),
			Reason: "flushed", Sources: n.Sources, Author: vault.AuthorCurator}); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]string{"cursor": last, "from": first, "path": path, "summary": conv + " talked."})
		if err := os.WriteFile(filepath.Join(state, hearth.FlushCursorFileOf(conv)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	daily := "summaries/daily/2026-01-01.md"
	if _, err := v.Apply(ctx, &vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpCreate, Path: daily,
		Content: noteWith("The day", "summary", "Both conversations.", ids[hearth.MainConversation][0], ids[hearth.MainConversation][5]),
		Reason:  "the day", Sources: []vault.Source{{Thread: hearth.MainConversation, Turn: ids[hearth.MainConversation][0]}}, Author: vault.AuthorCurator}); err != nil {
		t.Fatal(err)
	}

	h := runCore(t, hearth.Config{Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: 5 * time.Second,
		Curator: &hearth.CuratorConfig{StateDir: state, Model: &flushModel{}}})
	sendAwait(t, h, "hello") // the curator has read its cursors: Run started the turns after it

	// side's third record lies within main's span.
	gone := ids[side][2]
	if !(gone > ids[hearth.MainConversation][0] && gone < ids[hearth.MainConversation][5]) {
		t.Fatalf("ids do not interleave: %v", ids)
	}
	res, err := h.Forget(ctx, hearth.ForgetRequest{IDs: []string{gone}})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Derived.Removed)
	if want := []string{daily, summaries[side]}; !slices.Equal(res.Derived.Removed, want) {
		t.Errorf("removed %v, want %v (main's summary is not side's)", res.Derived.Removed, want)
	}
	for conv, path := range summaries {
		_, err := os.Stat(filepath.Join(dir, path))
		if kept := err == nil; kept != (conv == hearth.MainConversation) {
			t.Errorf("%s's summary %s: kept %v after forgetting a record of %s", conv, path, kept, side)
		}
	}
	cursor := func(conv string) string {
		b, err := os.ReadFile(filepath.Join(state, hearth.FlushCursorFileOf(conv)))
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Cursor string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m.Cursor
	}
	if got := cursor(side); got != "" {
		t.Errorf("side's flush cursor %q after the forget, want reset", got)
	}
	if got, want := cursor(hearth.MainConversation), ids[hearth.MainConversation][5]; got != want {
		t.Errorf("main's flush cursor %q after side's forget, want %q", got, want)
	}
}

// TestForgetResumedPerConversation: a forget a stop cut short after its
// tombstone is finished at the next start by the marker, which keeps the
// conversation of each record: main's summary, whose span holds the
// side record forgotten, stays. A marker an older hearth wrote (no
// conversations) cannot tell, and removes it.
func TestForgetResumedPerConversation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		convs bool
	}{{"conversations kept", true}, {"older marker", false}} {
		t.Run(tc.name, func(t *testing.T) {
			v, j, dir := openVaultRoot(t)
			ctx := t.Context()
			var ids []string
			for _, conv := range []string{"", "side", ""} {
				r, err := j.Append(ctx, journal.Record{Role: memory.RoleUser, Conv: conv, Text: "something " + conv, Mode: "text"})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, r.ID)
			}
			path := "summaries/threads/main-" + ids[0] + ".md"
			n := &vault.Note{ID: vault.NewNoteID(), Title: "Conversation main so far", Type: "summary", Confidence: 1,
				Sources: []vault.Source{{Thread: "main", Turn: ids[0]}, {Thread: "main", Turn: ids[2]}}, Body: []byte("main talked.\n")}
			if _, err := v.Apply(ctx, &vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpCreate, Path: path, Content: string(n.Format()),
				Reason: "flushed", Sources: n.Sources, Author: vault.AuthorCurator}); err != nil {
				t.Fatal(err)
			}
			marker := `{"ids":["` + ids[1] + `"],"by":"owner"}`
			if tc.convs {
				marker = `{"ids":["` + ids[1] + `"],"by":"owner","convs":{"` + ids[1] + `":"side"}}`
			}
			resumeForget(t, dir, j, v, marker, []string{ids[1]})
			if b, _ := v.Read(path); (b != nil) != tc.convs {
				t.Errorf("main's summary exists = %v, want %v", b != nil, tc.convs)
			}
		})
	}
}
