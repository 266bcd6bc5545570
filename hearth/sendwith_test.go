package hearth_test

import (
	"context"
	"testing"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
)

// namedModel answers every turn with its own name.
type namedModel struct{ provider, model string }

func (m namedModel) Name() string  { return m.provider }
func (m namedModel) Model() string { return m.model }
func (m namedModel) Stream(_ context.Context, _ llm.Request, onText func(string)) (llm.Response, error) {
	onText("from " + m.model)
	return llm.Response{Text: "from " + m.model, Model: m.model}, nil
}

// nthDone is a waitFor condition met at the nth reply (waitFor holds the
// recorder's lock: it cannot look at the snapshot).
func nthDone(n int) func(hearth.Event) bool {
	seen := 0
	return func(e hearth.Event) bool {
		if isDone(e) {
			seen++
		}
		return seen == n
	}
}

// TestSendWithModel: a turn sent with its own model is answered by it,
// and only it: the conversation's model, as a client joining after sees
// it, stays, and the next turn is the Models' again.
func TestSendWithModel(t *testing.T) {
	def := namedModel{"xai", "grok-test"}
	other := namedModel{"anthropic", "claude-test"}
	h := startCoreWith(t, def)
	rec := newRecorder()
	rec.watch(t, h, hearth.WatchOptions{})
	replies := func() []*hearth.ReplyDone {
		var out []*hearth.ReplyDone
		for _, e := range rec.snapshot() {
			if d, ok := e.(*hearth.ReplyDone); ok {
				out = append(out, d)
			}
		}
		return out
	}
	if err := h.SendWith(t.Context(), "r1", "who answers?", hearth.SendOptions{Model: other}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, nthDone(1))
	if d := replies()[0]; d.Model != "claude-test" || d.Record.Text != "from claude-test" {
		t.Fatalf("turn with its own model: answered by %q: %q", d.Model, d.Record.Text)
	}
	late := newRecorder()
	late.watch(t, h, hearth.WatchOptions{})
	late.waitFor(t, func(hearth.Event) bool { return true })
	if snap, ok := late.snapshot()[0].(*hearth.Snapshot); !ok || snap.Provider != "xai" || snap.Model != "grok-test" {
		t.Fatalf("after the turn, a joining client sees %+v, want the conversation's xai grok-test", late.snapshot()[0])
	}
	if err := h.Send("r2", "and now?"); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, nthDone(2))
	if d := replies()[1]; d.Model != "grok-test" {
		t.Fatalf("the next turn was answered by %q, want the conversation's grok-test", d.Model)
	}
}
