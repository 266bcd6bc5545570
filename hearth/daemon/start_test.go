package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/internal/logtest"
	"github.com/mnemo/mnemo/internal/permtest"
	"github.com/mnemo/mnemo/ipc"
)

// running is one run of hearth in this process.
type running struct {
	addr string
	logs *logtest.Buffer
	stop func() // cancels Run and waits for it to return
}

// runHearth runs hearth over root with the configuration vars, and waits
// until it listens; the test's cleanup stops it.
func runHearth(t *testing.T, root string, vars map[string]string) *running {
	t.Helper()
	vars["APP_AUTH_TOKEN"] = testToken
	vars["MNEMO_EMBEDDER"] = "none" // no word vectors to look for
	if _, ok := vars["MNEMO_CURATOR"]; !ok {
		vars["MNEMO_CURATOR"] = "false" // its model calls would take the stand-in's scripted replies
	}
	cfg := loadConfig(t, vars)
	cfg.Addr.Value = "127.0.0.1:0"
	cfg.Root.Value = root
	log, logs := logtest.New()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Run(ctx, cfg, Runtime{Log: log, Ready: func(a net.Addr) { ready <- a }}) }()
	r := &running{logs: logs}
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(r.stop)
	select {
	case a := <-ready:
		r.addr = a.String()
	case err := <-done:
		stopped = true
		t.Fatalf("Run: %v\n%s", err, logs)
	}
	return r
}

// After a start and a turn, everything in the memory root is private to
// the owner — the repository, the journal, the index, the lock file —
// though the tests run under umask 0 (TestMain) and the root was made by
// the owner open to all; hearth says so once, and leaves the root's mode.
func TestFreshRootIsPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	root := filepath.Join(t.TempDir(), "mnemo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewOpenAI(t, "sk-test")
	h := runHearth(t, root, map[string]string{"MNEMO_PROVIDER": "openai", "OPENAI_BASE_URL": model.URL, "OPENAI_API_KEY": "sk-test", "MNEMO_MODEL": "stand-in"})
	c := dial(t, h.addr)
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "noted"}}})
	if err := c.Send(&ipc.Message{Content: "the spare key is under the blue pot", Ref: "r1"}); err != nil {
		t.Fatal(err)
	}
	recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Done); return ok })
	healthUntil(t, c, "both turns indexed", func(ix *ipc.IndexHealth) bool { return ix != nil && ix.Indexed >= 2 })
	h.stop()

	for _, dir := range []string{".git", "threads", "index/embedded"} {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("after a start and a turn: %v", err)
		}
	}
	permtest.CheckPrivate(t, root)
	if st, err := os.Stat(root); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("root: %v, %v, want its mode 0755 left as the owner made it", st.Mode(), err)
	}
	warns := h.logs.Lines(slog.LevelWarn, "")
	if len(warns) != 1 || !strings.Contains(warns[0], `fix="chmod 700 `+root+`"`) {
		t.Errorf("warnings %q, want one, for the root, saying chmod 700 %s", warns, root)
	}
}

// With no model provider, hearth starts without a warning and says at
// INFO what to set; the warning comes when a turn needs a model. With no
// preference file, it logs no empty "preferences applied".
func TestStartWithoutProvider(t *testing.T) {
	h := runHearth(t, filepath.Join(t.TempDir(), "mnemo"), map[string]string{})
	if warns := h.logs.Lines(slog.LevelWarn, ""); len(warns) != 0 {
		t.Errorf("start logged warnings %q, want none", warns)
	}
	if infos := h.logs.Lines(slog.LevelInfo, "no model provider configured"); len(infos) != 1 || !strings.Contains(infos[0], "XAI_API_KEY") {
		t.Errorf("start: %q, want one INFO saying what to set", infos)
	}
	if got := h.logs.Lines(slog.LevelInfo, "preferences"); len(got) != 0 {
		t.Errorf("start with no preference file logged %q", got)
	}

	c := dial(t, h.addr)
	if err := c.Send(&ipc.Message{Content: "anyone there?", Ref: "r1"}); err != nil {
		t.Fatal(err)
	}
	got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	if e := got[len(got)-1].(*ipc.Error); e.Code != ipc.CodeNoProvider {
		t.Errorf("turn without a provider: %+v, want %s", e, ipc.CodeNoProvider)
	}
	if warns := h.logs.Lines(slog.LevelWarn, "no model"); len(warns) != 1 {
		t.Errorf("after a turn: warnings %q, want one for the turn that needed a model", warns)
	}
}

// A torn journal line is a warning at the start that terminates it, and
// not at the starts after, though the indexer and the history read it
// every time.
func TestTornLineWarnedOnce(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mnemo")
	threads := filepath.Join(root, "threads")
	if err := os.MkdirAll(threads, 0o700); err != nil {
		t.Fatal(err)
	}
	shard := `{"id":"01HQ0000000000000000000001","role":"user","text":"first","mode":"text"}` + "\n" +
		`{"id":"01HQ0000000000000000000002","role":"user","text":"SECRET tor`
	if err := os.WriteFile(filepath.Join(threads, "2024-02-01.jsonl"), []byte(shard), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0, 0} {
		h := runHearth(t, root, map[string]string{})
		c := dial(t, h.addr)
		healthUntil(t, c, "recall to catch up", func(ix *ipc.IndexHealth) bool { return ix != nil && ix.Ready })
		if turns := c.History().Turns; len(turns) != 1 || turns[0].Content != "first" {
			t.Errorf("start %d: history %+v, want the one whole turn", i+1, turns)
		}
		h.stop()
		if got := h.logs.Lines(slog.LevelWarn, ""); len(got) != want {
			t.Errorf("start %d: warnings %q, want %d", i+1, got, want)
		}
		if got := h.logs.Lines(slog.LevelDebug, "skipping line"); i > 0 && len(got) == 0 {
			t.Errorf("start %d: the skipped line is not even a debug line:\n%s", i+1, h.logs)
		}
		if strings.Contains(h.logs.String(), "SECRET") {
			t.Errorf("start %d: the log quotes the journal:\n%s", i+1, h.logs)
		}
	}
	permtest.CheckPrivate(t, root)
}
