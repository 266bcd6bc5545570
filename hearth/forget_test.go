package hearth_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
)

// docMemory is a hearth.Memory that indexes every committed record's
// text, as recall does, and searches it by substring.
type docMemory struct {
	j    *journal.Journal
	mu   sync.Mutex
	docs map[string]string
}

func (m *docMemory) Relevant(context.Context, memory.ContextRequest) string { return "" }
func (m *docMemory) Health() *memory.IndexHealth                            { return nil }
func (m *docMemory) Notify(id string) {
	found, _ := m.j.Find(context.Background(), []string{id})
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := found[id]; ok {
		m.docs[id] = r.Text
	}
}
func (m *docMemory) Forget(_ context.Context, ids []string, _ bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.docs, id)
	}
	return nil
}
func (m *docMemory) Search(_ context.Context, req memory.SearchRequest) ([]memory.Hit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var hits []memory.Hit
	for id, text := range m.docs {
		if strings.Contains(text, req.Query) {
			hits = append(hits, memory.Hit{ID: id, Text: text})
		}
	}
	return hits, nil
}

func startForgetCore(t *testing.T, j *journal.Journal) (*hearth.Hearth, *docMemory) {
	t.Helper()
	mem := &docMemory{j: j, docs: map[string]string{}}
	return runCore(t, hearth.Config{Journal: j, Memory: mem, ShutdownGrace: 5 * time.Second}), mem
}

// Forgetting a turn (here by a search hit's id) stores a tombstone, tells
// every subscriber, takes the turn out of search and of the snapshot, and
// stays so after a restart; forgetting it again, or nothing, is refused.
func TestForgetPublishesAndHides(t *testing.T) {
	dir := t.TempDir()
	j, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() }) // after both cores stop: cleanups run last first
	h, _ := startForgetCore(t, j)
	a, b := newRecorder(), newRecorder()
	a.watch(t, h, hearth.WatchOptions{})
	b.watch(t, h, hearth.WatchOptions{Classes: hearth.ClassTurns})

	var stored []string
	for _, text := range []string{"the zanzibar code is 4711", "we planted tomatoes"} {
		if err := h.AddTranscript("", memory.RoleUser, text); err != nil {
			t.Fatal(err)
		}
	}
	a.waitFor(t, func(ev hearth.Event) bool {
		if ts, ok := ev.(*hearth.TurnStored); ok {
			stored = append(stored, ts.Record.ID)
		}
		return len(stored) == 2
	})
	secret := stored[0]
	if hits, _ := h.Search(t.Context(), memory.SearchRequest{Query: "zanzibar"}); len(hits) != 1 {
		t.Fatalf("before forgetting, the search finds %v", hits)
	}

	res, err := h.Forget(t.Context(), hearth.ForgetRequest{IDs: []string{strings.ToLower(secret) + "#0", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
	if err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if !slices.Equal(res.Forgotten, []string{secret}) || !slices.Equal(res.Unknown, []string{"01ARZ3NDEKTSV4RRFFQ69G5FAV"}) {
		t.Errorf("Forget = %+v", res)
	}
	for _, r := range []*recorder{a, b} {
		r.waitFor(t, func(ev hearth.Event) bool {
			f, ok := ev.(*hearth.Forgotten)
			return ok && slices.Equal(f.IDs, []string{secret}) && f.By == hearth.ByOwner
		})
	}
	if hits, _ := h.Search(t.Context(), memory.SearchRequest{Query: "zanzibar"}); len(hits) != 0 {
		t.Errorf("after forgetting, the search finds %v", hits)
	}
	late := newRecorder()
	late.watch(t, h, hearth.WatchOptions{})
	late.waitFor(t, func(hearth.Event) bool { return true })
	for _, r := range late.snapshot()[0].(*hearth.Snapshot).Turns {
		if r.ID == secret {
			t.Error("a new subscriber's snapshot still holds the forgotten turn")
		}
	}

	for name, req := range map[string]hearth.ForgetRequest{
		"again":   {IDs: []string{secret}},
		"nothing": {},
	} {
		var p *hearth.Problem
		if _, err := h.Forget(t.Context(), req); !errors.As(err, &p) || p.Code != hearth.CodeBadRequest {
			t.Errorf("%s: Forget = %v, want bad_request", name, err)
		}
	}

	// A restart reads the live view.
	h2, _ := startForgetCore(t, j)
	r := newRecorder()
	r.watch(t, h2, hearth.WatchOptions{})
	r.waitFor(t, func(hearth.Event) bool { return true })
	turns := r.snapshot()[0].(*hearth.Snapshot).Turns
	if len(turns) != 1 || turns[0].ID != stored[1] {
		t.Errorf("after a restart the snapshot holds %v, want the second turn alone", turns)
	}
}
