package hearth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recollect"
	"github.com/mnemo/mnemo/memory/vault"
)

// rewriteModel is the curator's model for rewrites: each call is
// recorded and announced on called, then answered by what arrives on
// answer (an error, or a reply's text).
type rewriteModel struct {
	called chan string
	answer chan any
	mu     sync.Mutex
	shown  []string
}

func (m *rewriteModel) Name() string  { return "stand-in" }
func (m *rewriteModel) Model() string { return "rewrite" }
func (m *rewriteModel) Stream(ctx context.Context, req llm.Request, _ func(string)) (llm.Response, error) {
	msg := req.Messages[len(req.Messages)-1].Content
	var whole strings.Builder // the whole request: system prompt and messages
	for _, mm := range req.Messages {
		whole.WriteString(mm.Content + "\n")
	}
	m.mu.Lock()
	m.shown = append(m.shown, whole.String())
	m.mu.Unlock()
	if req.Output == nil || req.Output.Name != "memory_rewrite" || !req.Output.Strict {
		return llm.Response{}, fmt.Errorf("unexpected call %+v", req.Output)
	}
	m.called <- msg
	select {
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	case a := <-m.answer:
		if err, ok := a.(error); ok {
			return llm.Response{}, err
		}
		return llm.Response{Text: a.(string)}, nil
	}
}

// noteWith is a curator's note citing turns.
func noteWith(title, typ, body string, turns ...string) string {
	n := &vault.Note{ID: vault.NewNoteID(), Title: title, Type: typ, Confidence: 0.9, Body: []byte(body + "\n")}
	for _, id := range turns {
		n.Sources = append(n.Sources, vault.Source{Thread: hearth.MainConversation, Turn: id})
	}
	return string(n.Format())
}

// TestForgetReachesWhatWasMadeFromIt: forgetting a turn removes the notes
// made from it alone, the summaries that cover it and the entity notes it
// alone is evidence for; hides (out of recall and context) the notes it
// is one source of, until the curator rewrites them without it — the
// model down, the rewrite waits and the note stays hidden; everything in
// one commit by forget, a ledger line a file.
func TestForgetReachesWhatWasMadeFromIt(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	ctx := t.Context()
	var ids []string
	for _, r := range []journal.Record{
		{Role: memory.RoleUser, Text: "We are planning the garden this spring."},
		{Role: memory.RoleAgent, Text: "Ana told me the hidden allotment is at 7 Elm Street."},
		{Role: memory.RoleUser, Text: "The tomatoes go along the south fence."},
		{Role: memory.RoleAgent, Text: "Noted: tomatoes along the fence."},
	} {
		r.Mode = "text"
		rec, err := j.Append(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	a, b, c, d := ids[0], ids[1], ids[2], ids[3]
	ana := graph.RenderNote(graph.Note{Entity: graph.Entity{ID: "ana", Type: "person", Name: "Ana", Mentions: 2, Salience: 0.5, Evidence: []string{b, c}}})
	elm := graph.RenderNote(graph.Note{Entity: graph.Entity{ID: "elm-street", Type: "place", Name: "Elm Street", Mentions: 1, Salience: 0.3, Evidence: []string{b}}})
	files := map[string]string{
		"knowledge/projects/allotment.md": noteWith("Allotment", "project", "The hidden allotment is at 7 Elm Street.", b),
		"knowledge/projects/garden.md":    noteWith("Garden", "project", "Tomatoes along the south fence; the allotment at 7 Elm Street.", b, c),
		"knowledge/projects/fence.md":     noteWith("Fence", "project", "Tomatoes grow along the south fence.", c),
		"summaries/threads/main-a.md":     noteWith("Conversation so far", "summary", "Garden plans; an allotment on Elm Street; tomatoes.", a, d),
		"summaries/daily/2026-01-01.md":   noteWith("The day", "summary", "Tomatoes along the fence.", c, d),
		"entities/person/ana.md":          string(ana),
		"entities/place/elm-street.md":    string(elm),
	}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}) {
		if _, err := v.Apply(ctx, &vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpCreate, Path: p, Content: files[p],
			Reason: "made from the conversation", Sources: []vault.Source{{Thread: hearth.MainConversation, Turn: c}}, Author: vault.AuthorCurator}); err != nil {
			t.Fatal(err)
		}
	}
	mem := recollect.New(recollect.Options{Root: dir, Journal: j, Session: hearth.MainConversation, Settings: recollect.Settings{Embedder: "none"}})
	memCtx, stopMem := context.WithCancel(context.Background())
	memDone := make(chan struct{})
	go func() { defer close(memDone); mem.Run(memCtx) }()
	t.Cleanup(func() { stopMem(); <-memDone })
	awaitReady(t, mem)

	model := &rewriteModel{called: make(chan string, 4), answer: make(chan any, 4)}
	h := runCore(t, hearth.Config{Journal: j, Vault: v, Memory: mem, ShutdownGrace: 5 * time.Second,
		Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: model, Retry: backoff.Policy{Initial: time.Millisecond, Max: time.Millisecond}}})
	rec := newRecorder()
	rec.watch(t, h, hearth.WatchOptions{})
	knowledge := func(q string) []string {
		t.Helper()
		hits, err := h.Search(ctx, memory.SearchRequest{Query: q, K: 10, Kinds: []string{memory.KindKnowledge}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, hit := range hits {
			out = append(out, hit.Path)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	// Recall is ready before it has indexed the notes already in the
	// vault (it reconciles them just after): wait until every one is
	// found, or the reconcile, still going, could index one the forget
	// removes after the forget dropped it.
	awaitKnowledge(t, knowledge, map[string]string{
		"knowledge/projects/allotment.md": "hidden allotment", "knowledge/projects/garden.md": "Elm Street",
		"knowledge/projects/fence.md": "south fence", "summaries/daily/2026-01-01.md": "The day",
		"summaries/threads/main-a.md": "Garden plans",
	})
	if got := knowledge("Elm Street allotment"); len(got) < 2 {
		t.Fatalf("before the forget, knowledge search finds %q", got)
	}

	res, err := h.Forget(ctx, hearth.ForgetRequest{IDs: []string{b}})
	if err != nil {
		t.Fatal(err)
	}
	dv := res.Derived
	if !slices.Equal(dv.Removed, []string{"knowledge/projects/allotment.md", "summaries/threads/main-a.md"}) ||
		!slices.Equal(dv.Hidden, []string{"knowledge/projects/garden.md"}) ||
		!slices.Equal(dv.Entities, []string{"entities/person/ana.md", "entities/place/elm-street.md"}) || dv.Commit == "" || len(dv.History) != 5 {
		t.Fatalf("derived %+v", dv)
	}
	for p, want := range map[string]bool{
		"knowledge/projects/allotment.md": false, "summaries/threads/main-a.md": false, "entities/place/elm-street.md": false,
		"knowledge/projects/fence.md": true, "summaries/daily/2026-01-01.md": true, "knowledge/projects/garden.md": true, "entities/person/ana.md": true,
	} {
		if got, _ := v.Read(p); (got != nil) != want {
			t.Errorf("%s exists = %v, want %v", p, got != nil, want)
		}
		if want && p != "knowledge/projects/garden.md" && p != "entities/person/ana.md" {
			if got, _ := v.Read(p); string(got) == "" || !strings.Contains(string(got), "Tomatoes") && !strings.Contains(string(got), "tomatoes") {
				t.Errorf("%s changed:\n%s", p, got)
			}
		}
	}
	gb, _ := v.Read("knowledge/projects/garden.md")
	gn, err := vault.ParseNote("garden", gb)
	if err != nil || gn.Status != vault.NeedsRewrite || len(gn.Sources) != 1 || gn.Sources[0].Turn != c {
		t.Fatalf("garden note %+v %v", gn, err)
	}
	if was, _ := gn.Extra("status_before_forget"); was != "active" {
		t.Errorf("status before the forget kept as %q", was)
	}
	ab, _ := v.Read("entities/person/ana.md")
	an, err := graph.ParseNote("ana", ab)
	if err != nil || !slices.Equal(an.Entity.Evidence, []string{c}) || an.Entity.Mentions != 1 {
		t.Errorf("Ana's note %+v %v", an, err)
	}
	// Kept out of recall (and so of context) while it waits.
	if got := knowledge("Elm Street allotment"); len(got) != 0 {
		t.Errorf("after the forget, knowledge search finds %q", got)
	}
	if got := knowledge("fence"); !slices.Equal(got, []string{"knowledge/projects/fence.md", "summaries/daily/2026-01-01.md"}) {
		t.Errorf("knowledge search for the fence finds %q", got)
	}
	// One commit by forget, one ledger line a file.
	if cs := commits(t, dir); !strings.HasPrefix(cs[0], "forget|vault: forget: 5 file(s)") {
		t.Errorf("newest commit %q", cs[0])
	}
	es, _, err := vault.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	forgot := 0
	for _, e := range es {
		if e.Author == hearth.AuthorForget {
			forgot++
			if e.Commit != dv.Commit {
				t.Errorf("ledger %+v: not the forget's commit", e)
			}
		}
	}
	if forgot != 5 {
		t.Errorf("%d ledger lines by forget, want 5", forgot)
	}

	// The model is down: the rewrite waits and the note stays hidden.
	<-model.called
	model.answer <- errors.New("stand-in: model down")
	shown := <-model.called // the retry
	if b, _ := v.Read("knowledge/projects/garden.md"); !strings.Contains(string(b), "status: needs_rewrite") {
		t.Fatalf("the note is not hidden while the model is down:\n%s", b)
	}
	if strings.Contains(shown, "["+b+"]") || strings.Contains(shown, "Ana told me") || !strings.Contains(shown, "["+c+"] user: The tomatoes go along the south fence.") {
		t.Errorf("the rewrite was shown:\n%s", shown)
	}
	// Nothing of the forgotten turn is in any request the model was
	// sent: not its words, nor the note's old text made from them.
	model.mu.Lock()
	for _, req := range model.shown {
		for _, w := range []string{"Elm", "allotment", "Ana", b} {
			if strings.Contains(req, w) {
				t.Errorf("a rewrite request holds %q of the forgotten turn:\n%s", w, req)
			}
		}
	}
	model.mu.Unlock()
	model.answer <- `{"action":"rewrite","title":"Garden","body":"Tomatoes grow along the south fence of the garden.","reason":"a place was taken out"}`
	decided := 0 // the forget's, then the rewrite's
	rec.waitFor(t, func(ev hearth.Event) bool {
		if pd, ok := ev.(*hearth.ProposalDecided); ok && pd.Path == "knowledge/projects/garden.md" && pd.Decision == hearth.DecisionApplied {
			decided++
		}
		return decided == 2
	})
	gb, _ = v.Read("knowledge/projects/garden.md")
	gn, err = vault.ParseNote("garden", gb)
	if err != nil || gn.Status != vault.Active || strings.Contains(string(gb), "Elm") || strings.Contains(string(gb), "status_before_forget") {
		t.Fatalf("rewritten note:\n%s\n%v", gb, err)
	}
	if cs := commits(t, dir); !strings.HasPrefix(cs[0], "forget|vault: update knowledge/projects/garden.md") {
		t.Errorf("newest commit %q", cs[0])
	}
	if got := knowledge("fence"); !slices.Contains(got, "knowledge/projects/garden.md") {
		t.Errorf("the rewritten note is not found again: %q", got)
	}

	// A purge erases the journal's text, and says which vault files git's
	// history still holds earlier versions of.
	pres, err := h.Forget(ctx, hearth.ForgetRequest{Purge: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"entities/person/ana.md", "entities/place/elm-street.md", "knowledge/projects/allotment.md", "knowledge/projects/garden.md", "summaries/threads/main-a.md"}
	if pres.Purged == nil || pres.Purged.Records != 1 || !slices.Equal(pres.GitKeeps, want) {
		t.Errorf("purge %+v, want git_keeps %q", pres, want)
	}
}

// TestForgetResumedAtStart: a forget a stop cut short between its
// tombstone and the vault (the marker left) reaches the vault at the next
// start; a marker naming a turn still live (cut before the tombstone)
// changes nothing.
func TestForgetResumedAtStart(t *testing.T) {
	for _, tombstone := range []bool{true, false} {
		t.Run(fmt.Sprintf("tombstone %v", tombstone), func(t *testing.T) {
			v, j, dir := openVaultRoot(t)
			ctx := t.Context()
			r, err := j.Append(ctx, journal.Record{Role: memory.RoleUser, Text: "The allotment is at 7 Elm Street.", Mode: "text"})
			if err != nil {
				t.Fatal(err)
			}
			const p = "knowledge/projects/allotment.md"
			if _, err := v.Apply(ctx, &vault.Proposal{ID: vault.NewProposalID(), Op: vault.OpCreate, Path: p, Content: noteWith("Allotment", "project", "The allotment is at 7 Elm Street.", r.ID),
				Reason: "said", Sources: []vault.Source{{Thread: hearth.MainConversation, Turn: r.ID}}, Author: vault.AuthorCurator}); err != nil {
				t.Fatal(err)
			}
			var forgotten []string
			if tombstone {
				forgotten = []string{r.ID}
			}
			resumeForget(t, dir, j, v, `{"ids":["`+r.ID+`"],"by":"owner"}`, forgotten)
			if b, _ := v.Read(p); (b != nil) == tombstone {
				t.Errorf("note exists = %v with tombstone %v", b != nil, tombstone)
			}
		})
	}
}

// resumeForget leaves in dir what Forget leaves when the process dies
// after its marker (marker, the marker file's JSON) and, when forgotten
// is not empty, after its tombstone too; then starts hearth over j and v,
// waits until the keeper's first pass has finished the forget and says
// the vault is settled, and checks that the marker is gone.
func resumeForget(t *testing.T, dir string, j *journal.Journal, v *vault.Vault, marker string, forgotten []string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "index"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index", "forget.pending.json"), []byte(marker), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(forgotten) > 0 {
		if _, err := j.Append(t.Context(), journal.Tombstone(forgotten, hearth.ByOwner)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := hearth.New(hearth.Config{Journal: j, Vault: v, ShutdownGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	rec.watch(t, h, hearth.WatchOptions{})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	rec.waitFor(t, func(ev hearth.Event) bool { _, ok := ev.(*hearth.VaultSettled); return ok })
	if _, err := os.Stat(filepath.Join(dir, "index", "forget.pending.json")); !os.IsNotExist(err) {
		t.Errorf("the marker stayed: %v", err)
	}
}

// awaitKnowledge waits until search finds each note (path → a query that
// finds it) once recall has reconciled the vault's notes.
func awaitKnowledge(t *testing.T, search func(string) []string, notes map[string]string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		missing := ""
		for p, q := range notes {
			if !slices.Contains(search(q), p) {
				missing = p
				break
			}
		}
		if missing == "" {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("recall never indexed %s", missing)
		}
	}
}
