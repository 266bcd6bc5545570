package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
	"go.uber.org/goleak"
)

const token = hearthtest.Token

// bins holds the real binaries, built once with the race detector.
var bins hearthtest.Binaries

func TestMain(m *testing.M) {
	var err error
	if bins, err = hearthtest.Build(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(bins.Dir)
	// The clients, stand-in servers and daemon watchers the tests started
	// in this process must all be gone (DESIGN.md, Reliability).
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

// startDaemon runs the real hearth on a loopback port with root and env.
func startDaemon(t *testing.T, root string, env []string, args ...string) *hearthtest.Daemon {
	t.Helper()
	return hearthtest.Start(t, bins.Hearth, hearthtest.Options{Root: root, Env: env, Args: args})
}

func dial(t *testing.T, addr, tok string) (*ipc.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: tok, Client: "e2e"})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func mustDial(t *testing.T, addr string) *ipc.Conn {
	t.Helper()
	c, err := dial(t, addr, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reply reads one agent reply: the streamed text and the Done, or the
// error that ended it.
func reply(t *testing.T, c *ipc.Conn) (streamed string, done *ipc.Done, herr *ipc.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("recv: %v", err)
		}
		switch m := m.(type) {
		case *ipc.Token:
			b.WriteString(m.Content)
		case *ipc.Done:
			if !m.Turn.Incomplete {
				return b.String(), m, nil
			}
			done = m
		case *ipc.Error:
			return b.String(), done, m
		}
	}
}

func openaiEnv(s *llmtest.Server) []string { return hearthtest.OpenAIEnv(s) }

func TestChatTwoClientsRestartHistory(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := t.TempDir()
	d := startDaemon(t, root, openaiEnv(model))

	a, b := mustDial(t, d.Addr), mustDial(t, d.Addr)
	if n := len(a.History().Turns); n != 0 {
		t.Fatalf("fresh root has %d turns", n)
	}
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "Hello"}, {Text: ", "}, {Text: "world"}}})
	if err := a.Send(&ipc.Message{Content: "hi there", Ref: "r1"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*ipc.Conn{"a": a, "b": b} {
		text, done, herr := reply(t, c)
		if herr != nil || text != "Hello, world" || done.Turn.Content != "Hello, world" {
			t.Errorf("client %s: streamed %q, done %+v, err %v", name, text, done, herr)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("stand-in saw %d requests, want 1", len(reqs))
	}
	msgs := reqs[0].Messages
	if msgs[0].Role != "system" || !strings.Contains(msgs[0].Content, "Continuity anchor") {
		t.Errorf("first message is not the continuity anchor: %+v", msgs[0])
	}
	if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content != "hi there" {
		t.Errorf("last message = %+v", last)
	}

	// The real client prints a streamed reply.
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "from "}, {Text: "cli"}}})
	out := runMnemo(t, d.Addr, "send", "and", "you?")
	if out != "from cli\n" {
		t.Errorf("mnemo send printed %q", out)
	}

	d.Stop(t)
	d = startDaemon(t, root, openaiEnv(model))
	h := mustDial(t, d.Addr).History()
	var got []string
	for _, turn := range h.Turns {
		got = append(got, turn.Role+":"+turn.Content)
	}
	want := []string{"user:hi there", "agent:Hello, world", "user:and you?", "agent:from cli"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("history after restart = %q, want %q", got, want)
	}
	if out := runMnemo(t, d.Addr, "history"); !strings.Contains(out, "agent: from cli") {
		t.Errorf("mnemo history printed %q", out)
	}
	// Injected context is never stored.
	shards, _ := filepath.Glob(filepath.Join(root, "threads", "*.jsonl"))
	for _, s := range shards {
		b, _ := os.ReadFile(s)
		if bytes.Contains(b, []byte("Continuity anchor")) {
			t.Errorf("%s holds injected context", s)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Errorf("memory root is not a git repository: %v", err)
	}
}

func runMnemo(t *testing.T, addr string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Mnemo, append([]string{"-addr", addr}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "APP_AUTH_TOKEN=" + token}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mnemo %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

func TestWrongTokenGetsOnlyAnError(t *testing.T) {
	d := startDaemon(t, t.TempDir(), nil)
	_, err := dial(t, d.Addr, "not-the-token")
	var herr *ipc.Error
	if !errors.As(err, &herr) || herr.Code != ipc.CodeUnauthorized {
		t.Fatalf("dial with a wrong token: %v, want unauthorized", err)
	}
	// By hand: one error line, then the connection closes.
	nc, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, `{"type":"connect","token":"wrong"}`+"\n")
	all, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(all)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"unauthorized"`) {
		t.Errorf("server sent %q, want one unauthorized error", all)
	}
}

func TestNoProviderStillServes(t *testing.T) {
	d := startDaemon(t, t.TempDir(), nil)
	c := mustDial(t, d.Addr)
	c.Send(&ipc.Message{Content: "anyone?"})
	_, _, herr := reply(t, c)
	if herr == nil || herr.Code != ipc.CodeNoProvider || !strings.Contains(herr.Message, "XAI_API_KEY") {
		t.Errorf("got %+v, want a no_provider error saying what to configure", herr)
	}
}

func TestProviderDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nothing listens there now
	d := startDaemon(t, t.TempDir(), []string{"MNEMO_PROVIDER=openai", "OPENAI_BASE_URL=" + deadURL, "OPENAI_API_KEY=sk-secret-value"})
	c := mustDial(t, d.Addr)
	c.Send(&ipc.Message{Content: "hello", Ref: "x"})
	_, _, herr := reply(t, c)
	if herr == nil || herr.Code != ipc.CodeProviderError || herr.Ref != "x" {
		t.Fatalf("got %+v, want provider_error", herr)
	}
	if want := "the model provider is unreachable (connection refused); tried 3 times — check OPENAI_BASE_URL"; !strings.HasPrefix(herr.Message, want) {
		t.Errorf("error message %q, want it to start %q", herr.Message, want)
	}
	for _, leak := range []string{"sk-secret-value", ln.Addr().String(), "/v1"} {
		if strings.Contains(herr.Message, leak) {
			t.Errorf("error message %q leaks %q", herr.Message, leak)
		}
	}
	if strings.Contains(d.Log(), "sk-secret-value") {
		t.Errorf("hearth's log holds the API key")
	}
}

func TestXAIStyleStream(t *testing.T) {
	model := llmtest.NewOpenAI(t, "xai-key")
	d := startDaemon(t, t.TempDir(), []string{"XAI_API_KEY=xai-key", "XAI_BASE_URL=" + model.URL, "MNEMO_XAI_API=chat"})
	model.Enqueue(llmtest.Reply{UsageEveryChunk: true, Chunks: []llmtest.Chunk{{Text: "grok "}, {Text: "says hi"}}})
	c := mustDial(t, d.Addr)
	if p := c.History().Provider; p != "xai" {
		t.Errorf("provider = %q, want xai", p)
	}
	c.Send(&ipc.Message{Content: "hey"})
	text, done, herr := reply(t, c)
	if herr != nil || text != "grok says hi" {
		t.Fatalf("streamed %q, err %v", text, herr)
	}
	if done.Usage == nil || done.Usage.OutputTokens == 0 {
		t.Errorf("usage = %+v, want the provider's counts", done.Usage)
	}
}

func TestSlowClientDropped(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, t.TempDir(), openaiEnv(model))

	slow, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(256 << 10)
	fmt.Fprintf(slow, `{"type":"connect","token":%q}`+"\n", token)
	fast := mustDial(t, d.Addr)

	// The stuck client starts reading again as soon as hearth drops it
	// (health counts the drop), well within hearth's 5 s grace, so it can
	// read why it was dropped.
	dropped := make(chan struct{})
	slowGot := make(chan []byte, 1)
	go func() {
		select {
		case <-dropped:
		case <-time.After(2 * time.Minute):
		}
		slow.SetReadDeadline(time.Now().Add(20 * time.Second))
		all, _ := io.ReadAll(slow)
		slowGot <- all
	}()

	// Twelve replies of 960 KiB (each under hearth's 1 MiB reply cap),
	// paced so that a reading client keeps up, outgrow the stuck client's
	// 4 MiB budget and its socket buffers.
	const turns, n, size = 12, 60, 16 << 10
	chunks := make([]llmtest.Chunk, n)
	for i := range chunks {
		chunks[i] = llmtest.Chunk{Text: strings.Repeat(string(rune('a'+i%26)), size), Delay: 2 * time.Millisecond}
	}
	for i := range turns {
		model.Enqueue(llmtest.Reply{Chunks: chunks})
		fast.Send(&ipc.Message{Content: "flood me"})
		text, _, herr := reply(t, fast)
		if herr != nil || len(text) != n*size {
			t.Fatalf("reply %d: fast client got %d bytes (err %v), want %d", i, len(text), herr, n*size)
		}
		if health(t, fast).Dropped > 0 {
			break // the slow client is out; the rest would prove nothing new
		}
	}
	close(dropped)
	all := <-slowGot
	lines := strings.Split(strings.TrimSpace(string(all)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"slow_client"`) {
		t.Errorf("slow client's last line = %.200q, want a slow_client error", last)
	}
	// The fast client is still served.
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "still here"}}})
	fast.Send(&ipc.Message{Content: "ok?"})
	if text, _, herr := reply(t, fast); herr != nil || text != "still here" {
		t.Errorf("after the drop the fast client got %.40q (%d bytes), %v", text, len(text), herr)
	}
	if h := health(t, fast); h.Dropped != 1 {
		t.Errorf("health counts %d dropped clients, want 1", h.Dropped)
	}
	if !strings.Contains(d.Log(), "dropping client") {
		t.Errorf("hearth did not log the drop")
	}
}

func TestCrashLosesNoAcknowledgedTurn(t *testing.T) {
	root := t.TempDir()
	d := startDaemon(t, root, nil, "-history", "5000")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	acked := map[string]string{} // ref -> stored id
	var wg sync.WaitGroup
	for w := range 4 {
		c := mustDial(t, d.Addr)
		wg.Add(2)
		go func() { // writer: transcripts need no model, so appends run flat out
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if c.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: fmt.Sprintf("w%d-%d", w, i), Ref: fmt.Sprintf("w%d-%d", w, i)}) != nil {
					return
				}
			}
		}()
		go func() { // reader: a turn is acknowledged when its own Turn arrives
			defer wg.Done()
			for {
				m, err := c.Recv(ctx)
				if err != nil {
					return
				}
				if s, ok := m.(*ipc.TurnStored); ok && strings.HasPrefix(s.Ref, fmt.Sprintf("w%d-", w)) {
					mu.Lock()
					acked[s.Ref] = s.Turn.ID
					mu.Unlock()
				}
			}
		}()
	}
	// Let appends run, then kill -9 in the middle of them.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling a counter, not synchronising
	}
	d.Kill(t)
	cancel()
	wg.Wait()

	// Simulate the worst crash too: a torn record at the tail.
	shards, _ := filepath.Glob(filepath.Join(root, "threads", "*.jsonl"))
	if len(shards) == 0 {
		t.Fatal("no journal shard")
	}
	f, err := os.OpenFile(shards[len(shards)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"01ZZZZ","role":"user","text":"torn in ha`)
	f.Close()

	d = startDaemon(t, root, nil, "-history", "5000")
	c := mustDial(t, d.Addr)
	have := map[string]bool{}
	for _, turn := range c.History().Turns {
		have[turn.ID] = true
		if strings.Contains(turn.Content, "torn") {
			t.Errorf("torn record replayed: %+v", turn)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 300 {
		t.Logf("only %d turns acknowledged before the kill", len(acked))
	}
	missing := 0
	for ref, id := range acked {
		if !have[id] {
			missing++
			if missing < 5 {
				t.Errorf("acknowledged turn %s (%s) lost", ref, id)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged turns lost", missing, len(acked))
	}
	// And the journal keeps working after the torn tail.
	c.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: "after the crash", Ref: "after"})
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	for {
		m, err := c.Recv(rctx)
		if err != nil {
			t.Fatalf("no ack after restart: %v", err)
		}
		if s, ok := m.(*ipc.TurnStored); ok && s.Ref == "after" {
			break
		}
	}
	if !strings.Contains(d.Log(), "level=WARN") {
		t.Errorf("the torn line was skipped without a warning")
	}
}

func TestRefusesNetworkBindWithoutToken(t *testing.T) {
	cmd := exec.Command(bins.Hearth, "-addr", "0.0.0.0:0", "-listen-remote", "-root", t.TempDir())
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "APP_AUTH_TOKEN") {
		t.Errorf("hearth -addr 0.0.0.0:0 without a token: err %v, output %q", err, out)
	}
}

func TestRefusesRootWithoutVersionHistory(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".git"), []byte("not a repository"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bins.Hearth, "-addr", "127.0.0.1:0", "-root", root)
	cmd.Env = []string{"HOME=" + t.TempDir(), "APP_AUTH_TOKEN=" + token}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "version history") {
		t.Errorf("hearth on a root whose .git is broken: err %v, output %q", err, out)
	}
}

func TestMnemoChatPipe(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	d := startDaemon(t, t.TempDir(), openaiEnv(model))
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "first "}, {Text: "answer"}}})
	model.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "second answer"}}})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Mnemo, "-addr", d.Addr)
	cmd.Env = []string{"HOME=" + t.TempDir(), "APP_AUTH_TOKEN=" + token}
	cmd.Stdin = strings.NewReader("one\n\ntwo\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mnemo chat: %v\n%s", err, out)
	}
	for _, want := range []string{"agent: first answer\n", "agent: second answer\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("chat output lacks %q:\n%s", want, out)
		}
	}
}

// health asks hearth for its health report, skipping what else arrives.
func health(t *testing.T, c *ipc.Conn) *ipc.HealthReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Send(&ipc.Health{Ref: "h"}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			t.Fatalf("health: %v", err)
		}
		if r, ok := m.(*ipc.HealthReport); ok {
			return r
		}
	}
}
