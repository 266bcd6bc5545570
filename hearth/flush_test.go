package hearth_test

import (
	"context"
	"encoding/json"
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
	"github.com/mnemo/mnemo/hearth/curator"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/internal/backoff"
	"github.com/mnemo/mnemo/memory/vault"
)

// flushEvents is the order in which the chat model and the flush pass
// saw what: each entry a chat request's user messages, or a flush
// request's message.
type flushEvents struct {
	mu  sync.Mutex
	log []flushEvent
}

type flushEvent struct {
	flush bool
	texts []string
}

func (e *flushEvents) add(ev flushEvent) {
	e.mu.Lock()
	e.log = append(e.log, ev)
	e.mu.Unlock()
}

func (e *flushEvents) snapshot() []flushEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]flushEvent(nil), e.log...)
}

// loggedChat logs the user messages of every chat request.
type loggedChat struct {
	inner hearth.Model
	ev    *flushEvents
}

func (m loggedChat) Name() string  { return m.inner.Name() }
func (m loggedChat) Model() string { return m.inner.Model() }

func (m loggedChat) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	var texts []string
	for _, msg := range req.Messages {
		texts = append(texts, msg.Content)
	}
	m.ev.add(flushEvent{texts: texts})
	return m.inner.Stream(ctx, req, onText)
}

// flushModel is the curator's model: "nothing to keep" after each turn,
// and for a flush a summary numbered by the call, with a project note
// citing the first record shown. While down, every call fails.
type flushModel struct {
	ev *flushEvents
	// during, when set, sees each flush request's message before it is
	// answered (the model's call is out meanwhile).
	during func(msg string)

	mu      sync.Mutex
	down    bool
	flushes int
	limit   int // flushes answered before it fails them; 0: no limit
}

func (m *flushModel) Name() string  { return "flush" }
func (m *flushModel) Model() string { return "flush-1" }
func (m *flushModel) Stream(_ context.Context, req llm.Request, _ func(string)) (llm.Response, error) {
	if m.during != nil && req.Output != nil && req.Output.Name == curator.FlushSchemaName {
		m.during(req.Messages[len(req.Messages)-1].Content)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return llm.Response{}, errors.New("provider down")
	}
	if req.Output == nil || req.Output.Name != curator.FlushSchemaName {
		return llm.Response{Text: `{"ops":[],"questions":[]}`}, nil
	}
	if m.limit > 0 && m.flushes >= m.limit {
		return llm.Response{}, errors.New("flush limit reached")
	}
	msg := req.Messages[len(req.Messages)-1].Content
	if m.ev != nil {
		m.ev.add(flushEvent{flush: true, texts: []string{msg}})
	}
	m.flushes++
	first := shownRecord.FindStringSubmatch(msg)[1]
	op := map[string]any{
		"op": "create", "path": fmt.Sprintf("knowledge/projects/flush-%d.md", m.flushes), "title": "Shed", "body": "The shed is being repainted green this spring.",
		"note_type": "project", "tags": []string{}, "confidence": 0.9, "patch": nil,
		"reason": "a commitment the person made", "sources": []string{first},
		"risk": "low", "domains": []string{}, "inferred": false, "supersedes": []string{}, "contradicts": false,
	}
	b, _ := json.Marshal(map[string]any{"summary": fmt.Sprintf("Summary %d: the person talked about repainting the shed.", m.flushes), "ops": []any{op}, "questions": []any{}})
	return llm.Response{Text: string(b)}, nil
}

func (m *flushModel) setDown(d bool) {
	m.mu.Lock()
	m.down = d
	m.mu.Unlock()
}

// flushBudget leaves the recent turns 300 tokens of 1000: about three
// turns of the messages below.
var flushBudget = hearth.ContextBudget{Tokens: 1000, Shares: hearth.ContextShares{Recent: 30}}

// longTurn is a user message of about 100 tokens, numbered.
func longTurn(i int) string {
	return fmt.Sprintf("message %03d ", i) + strings.Repeat("shed paint ", 35)
}

// turnsUntilFlush sends the messages say numbers, one by one, until the
// flush pass reports a flush. Each turn waits until the one before is
// curated, so the flush pass is at most a turn behind and never needs to
// cut (that takes five). After patience turns it waits for the flush: the
// worker runs behind the turns on a loaded machine, and enough is said.
func turnsUntilFlush(t *testing.T, h *hearth.Hearth, curated <-chan hearth.Curated, flushed <-chan hearth.Flushed, patience int, say func(i int) string) hearth.Flushed {
	t.Helper()
	for i := 0; ; i++ {
		sendAwait(t, h, say(i))
		select {
		case <-curated:
		case <-time.After(30 * time.Second):
			t.Fatalf("not curated; health %+v", h.CuratorHealth())
		}
		select {
		case f := <-flushed:
			return f
		default:
			if i < patience {
				continue
			}
			select {
			case f := <-flushed:
				return f
			case <-time.After(30 * time.Second):
				t.Fatalf("no flush after %d turns; health %+v", i+1, h.CuratorHealth())
			}
		}
	}
}

// sendAwait sends each message and waits for its reply.
func sendAwait(t *testing.T, h *hearth.Hearth, msgs ...string) {
	t.Helper()
	sub, err := h.Subscribe(hearth.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, m := range msgs {
		if err := h.Send("", m); err != nil {
			t.Fatal(err)
		}
		awaitReplies(t, sub, 1)
	}
}

// TestFlushBeforeTrim: a long conversation with the stand-in answering
// chat: no user message leaves the context before a flush showed it, the
// summary takes the trimmed part's place in what the model is sent, and
// the flush's summary and proposal are in the vault.
func TestFlushBeforeTrim(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	ev := &flushEvents{}
	chat := llmtest.NewOpenAI(t, "sk-chat")
	chatModel := loggedChat{llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "chat", BaseURL: chat.BaseURL(), APIKey: "sk-chat"}, nil), ev}
	flushed := make(chan hearth.Flushed, 16)
	curated := make(chan hearth.Curated, 64)
	h := runCore(t, hearth.Config{
		Journal: j, Vault: v, Models: fixed{chatModel}, ShutdownGrace: 5 * time.Second, Budget: flushBudget,
		Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: &flushModel{ev: ev}, OnFlush: func(f hearth.Flushed) { flushed <- f },
			Observe: func(c hearth.Curated) { curated <- c }},
	})
	var sent []string
	first := turnsUntilFlush(t, h, curated, flushed, 20, func(i int) string {
		sent = append(sent, longTurn(i))
		return sent[i]
	})
	// One more turn: the records flushed may now leave.
	sent = append(sent, longTurn(len(sent)))
	sendAwait(t, h, sent[len(sent)-1])

	var flushedText strings.Builder
	for k, e := range ev.snapshot() {
		if e.flush {
			flushedText.WriteString(e.texts[0])
			continue
		}
		all := strings.Join(e.texts, "\n")
		for _, s := range sent {
			if !strings.Contains(all, strings.TrimSpace(s)) && !strings.Contains(flushedText.String(), strings.TrimSpace(s)) && s < lastUser(e.texts) {
				t.Errorf("chat request %d left out %q before any flush showed it", k, s[:11])
			}
		}
	}
	// The stand-in's last request: the summary instead of the oldest turn.
	reqs := chat.Requests()
	last := reqs[len(reqs)-1]
	var shown strings.Builder
	for _, m := range last.Messages {
		shown.WriteString(m.Content + "\n")
	}
	if !strings.Contains(shown.String(), "Earlier in this conversation (summary)") || !strings.Contains(shown.String(), "Summary 1:") {
		t.Errorf("the last request lacks the summary:\n%s", shown.String())
	}
	if strings.Contains(shown.String(), "message 000 ") {
		t.Errorf("the oldest message is still sent after it was flushed")
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(first.Path)))
	if err != nil || !strings.Contains(string(b), "Summary 1:") || !strings.HasPrefix(first.Path, "summaries/threads/") {
		t.Errorf("summary %s: %v\n%s", first.Path, err, b)
	}
	if first.Outcome.Decision != hearth.DecisionApplied || len(first.Outcomes) != 1 || first.Outcomes[0].Decision != hearth.DecisionApplied {
		t.Errorf("flush outcomes %+v / %+v", first.Outcome, first.Outcomes)
	}
	hl := h.CuratorHealth()
	if hl.FlushCursor != first.Records[len(first.Records)-1] && hl.Flushes < 2 || hl.Cut != 0 {
		t.Errorf("health %+v", hl)
	}

	// Forgetting a flushed record removes the summaries that cover it and
	// resets the flush cursor: the summary no longer stands in the
	// window, which falls back to the live records until the flush pass
	// summarises them again.
	res, err := h.Forget(t.Context(), hearth.ForgetRequest{IDs: []string{first.Records[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Derived.Removed, first.Path) {
		t.Errorf("forget removed %q, not the summary %s", res.Derived.Removed, first.Path)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(first.Path))); b != nil {
		t.Errorf("the summary of a forgotten record is still there:\n%s", b)
	}
	if hl := h.CuratorHealth(); hl.FlushCursor != "" {
		t.Errorf("flush cursor %q after the forget, want reset", hl.FlushCursor)
	}
	sent = append(sent, longTurn(len(sent)))
	sendAwait(t, h, sent[len(sent)-1])
	reqs = chat.Requests()
	shown.Reset()
	for _, m := range reqs[len(reqs)-1].Messages {
		shown.WriteString(m.Content + "\n")
	}
	// The flush pass may already have summarised the live records again
	// (a new summary, made without the forgotten record): only the old
	// summary and the record itself must be gone.
	if strings.Contains(shown.String(), "Summary 1:") || strings.Contains(shown.String(), "message 000 ") {
		t.Errorf("after the forget the window still shows the summary or the record:\n%s", shown.String())
	}
}

// lastUser is the numbered message the newest of texts answers.
func lastUser(texts []string) string {
	for i := len(texts) - 1; i >= 0; i-- {
		if strings.HasPrefix(texts[i], "message ") {
			return texts[i]
		}
	}
	return ""
}

// TestFlushModelDown: with the curator's model down nothing is flushed,
// so unflushed records stay in the context past the recent share, up to
// the whole budget; past it the oldest are cut, and the context and
// health say so.
func TestFlushModelDown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		turns     int
		wantFirst bool // message 000 still sent
		wantCut   bool
	}{
		{"within the budget", 6, true, false},
		{"past the budget", 12, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, j, _ := openVaultRoot(t)
			chat := &recModel{}
			fm := &flushModel{down: true}
			h := runCore(t, hearth.Config{
				Journal: j, Vault: v, Models: fixed{chat}, ShutdownGrace: time.Second, Budget: flushBudget,
				Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: fm, Retry: backoff.Policy{Initial: time.Hour, Max: time.Hour}},
			})
			for i := range tc.turns {
				sendAwait(t, h, longTurn(i))
			}
			var shown strings.Builder
			for _, m := range chat.last() {
				shown.WriteString(m.Content + "\n")
			}
			s := shown.String()
			if strings.Contains(s, "message 000 ") != tc.wantFirst {
				t.Errorf("message 000 sent: %v, want %v", !tc.wantFirst, tc.wantFirst)
			}
			if strings.Contains(s, "before they could be summarised") != tc.wantCut {
				t.Errorf("cut marker: %v, want %v:\n%s", !tc.wantCut, tc.wantCut, s)
			}
			hl := h.CuratorHealth()
			if hl.Flushes != 0 || hl.FlushCursor != "" || hl.Kept == 0 || (hl.Cut > 0) != tc.wantCut {
				t.Errorf("health %+v", hl)
			}
		})
	}
}

// TestFlushCrashBeforeCursor: a crash after the summary was applied but
// before the flush cursor was saved (the cursor put back as it was, then
// the core reopened) runs the same range again and updates the same
// summary file, once: no second summary. (The range run again starts
// where the interrupted one did, and takes in what became due since.)
func TestFlushCrashBeforeCursor(t *testing.T) {
	v, j, dir := openVaultRoot(t)
	state := t.TempDir()
	flushed := make(chan hearth.Flushed, 16)
	// The first core flushes once, then its flushes fail (and wait an
	// hour): the range of that one flush is what the crash interrupts.
	fm := &flushModel{limit: 1}
	cfg := hearth.Config{
		Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: time.Second, Budget: flushBudget,
		Curator: &hearth.CuratorConfig{StateDir: state, Model: fm, OnFlush: func(f hearth.Flushed) { flushed <- f },
			Retry: backoff.Policy{Initial: time.Hour, Max: time.Hour}},
	}
	h, stop := startStoppable(t, cfg)
	var first hearth.Flushed
	for i := 0; ; i++ {
		sendAwait(t, h, longTurn(i))
		select {
		case first = <-flushed:
		default:
			if i < 20 {
				continue
			}
			// The worker runs behind the turns on a loaded machine:
			// enough is said, so wait for the flush it owes.
			select {
			case first = <-flushed:
			case <-time.After(30 * time.Second):
				t.Fatalf("no flush after %d turns", i+1)
			}
		}
		break
	}
	stop()
	// The crash: the cursor was never saved.
	if err := os.Remove(filepath.Join(state, hearth.FlushCursorFile)); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(first.Path)))
	if err != nil {
		t.Fatal(err)
	}
	fm.mu.Lock()
	fm.limit = 0
	fm.mu.Unlock()
	h2, stop2 := startStoppable(t, cfg)
	var again hearth.Flushed
	select {
	case again = <-flushed:
	case <-time.After(30 * time.Second):
		t.Fatalf("no flush after the restart; health %+v", h2.CuratorHealth())
	}
	stop2()
	if again.Path != first.Path || again.Outcome.Decision != hearth.DecisionApplied || !strings.HasPrefix(strings.Join(again.Records, ","), strings.Join(first.Records, ",")) {
		t.Errorf("after the crash: %+v, want the range and path of %+v", again, first)
	}
	after, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(first.Path)))
	if err != nil || string(after) == string(before) {
		t.Fatalf("the summary was not updated: %v", err)
	}
	oldNote, _ := vault.ParseNote(first.Path, before)
	newNote, err := vault.ParseNote(first.Path, after)
	if err != nil || oldNote == nil || newNote.ID != oldNote.ID {
		t.Errorf("the summary's id changed: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "summaries", "threads", "*.md"))
	if len(files) != 1 {
		t.Errorf("summaries %v, want one", files)
	}
	cur, _ := os.ReadFile(filepath.Join(state, hearth.FlushCursorFile))
	if !strings.Contains(string(cur), again.Records[len(again.Records)-1]) {
		t.Errorf("flush cursor %s, want %s", cur, again.Records[len(again.Records)-1])
	}
}

// switchBudget is a context budget the test changes between turns.
type switchBudget struct {
	mu sync.Mutex
	b  hearth.ContextBudget
}

func (s *switchBudget) Budget() hearth.ContextBudget {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b
}

func (s *switchBudget) set(b hearth.ContextBudget) {
	s.mu.Lock()
	s.b = b
	s.mu.Unlock()
}

// TestFlushBudgetGrows: after a flush the owner raises the budget, so the
// window now reaches back before the flush cursor: nothing is due, no
// flush runs, and the flushed records are sent again, without the summary.
func TestFlushBudgetGrows(t *testing.T) {
	v, j, _ := openVaultRoot(t)
	budgets := &switchBudget{b: flushBudget}
	flushed := make(chan hearth.Flushed, 16)
	chat := &recModel{}
	fm := &flushModel{limit: 1}
	curated := make(chan hearth.Curated, 64)
	h := runCore(t, hearth.Config{
		Journal: j, Vault: v, Models: fixed{chat}, ShutdownGrace: time.Second, Budgets: budgets,
		Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: fm, OnFlush: func(f hearth.Flushed) { flushed <- f },
			Observe: func(c hearth.Curated) { curated <- c }, Retry: backoff.Policy{Initial: time.Hour, Max: time.Hour}},
	})
	seen := 0
	awaitCurated := func(n int) {
		for ; seen < n; seen++ {
			select {
			case <-curated:
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of %d turns curated", seen, n)
			}
		}
	}
	turns := 0
	for i := 0; ; i++ {
		turns++
		sendAwait(t, h, longTurn(i))
		select {
		case <-flushed:
		default:
			if i < 20 {
				continue
			}
			// The worker runs behind the turns on a loaded machine:
			// enough is said, so wait for the flush it owes.
			select {
			case <-flushed:
			case <-time.After(30 * time.Second):
				t.Fatalf("no flush after %d turns", i+1)
			}
		}
		break
	}
	budgets.set(hearth.ContextBudget{Tokens: 100_000, Shares: hearth.ContextShares{Recent: 75}})
	// A turn under the new budget, curated; the next is curated only
	// after the flush pass that followed the first one is over.
	sendAwait(t, h, longTurn(90))
	awaitCurated(turns + 1)
	sendAwait(t, h, longTurn(91))
	awaitCurated(turns + 2)
	var shown strings.Builder
	for _, m := range chat.last() {
		shown.WriteString(m.Content + "\n")
	}
	if !strings.Contains(shown.String(), "message 000 ") || strings.Contains(shown.String(), "Earlier in this conversation") {
		t.Errorf("with a larger budget the window should hold every turn and no summary:\n%s", shown.String())
	}
	if hl := h.CuratorHealth(); hl.Flushes != 1 || hl.Cut != 0 {
		t.Errorf("health %+v", hl)
	}
}
