package hearth_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/memory/journal"
)

// usageModel answers every call with "ok" and the usage it was given.
type usageModel struct{ usage llm.Usage }

func (usageModel) Name() string  { return "openai" }
func (usageModel) Model() string { return "stand-in" }
func (m usageModel) Stream(_ context.Context, _ llm.Request, onText func(string)) (llm.Response, error) {
	onText("ok")
	u := m.usage
	return llm.Response{Text: "ok", Model: "stand-in", Usage: &u}, nil
}

// lockedBuffer is a log sink safe for the core's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestTurnLogLine: every reply leaves one log line with the request's ref,
// the stored reply's id, the model, its duration and token counts.
func TestTurnLogLine(t *testing.T) {
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	var logs lockedBuffer
	h := runCore(t, hearth.Config{Journal: j, Models: fixed{usageModel{llm.Usage{InputTokens: 12, OutputTokens: 3}}},
		ShutdownGrace: 5 * time.Second, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	rec := newRecorder()
	rec.watch(t, h, hearth.WatchOptions{})
	if err := h.Send("r1", "hello"); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, func(e hearth.Event) bool { _, ok := e.(*hearth.ReplyDone); return ok })
	rec.waitFor(t, isIdle)
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "msg=turn ") {
			if line != "" {
				t.Fatalf("two turn lines for one turn:\n%s", logs.String())
			}
			line = l
		}
	}
	for _, want := range []string{"ref=r1", "id=", "provider=openai", "model=stand-in", "ms=", "input_tokens=12", "output_tokens=3", "incomplete=false"} {
		if !strings.Contains(line, want) {
			t.Errorf("turn line %q lacks %q\n%s", line, want, logs.String())
		}
	}
}
