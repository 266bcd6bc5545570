package hearth_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/hearth/curator"
	"github.com/mnemo/mnemo/hearth/llm"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/recollect"
	"github.com/mnemo/mnemo/memory/vault"
)

// goldenThread is one golden thread (hearth/curator/testdata/golden/*.yaml):
// a scripted conversation, what the stand-in curator answers after each
// turn, and what must come of it.
type goldenThread struct {
	Name  string            `yaml:"name"`
	Notes map[string]string `yaml:"notes"` // files in the vault before
	// Budget, when set, is the context budget: tokens, and the recent
	// share (the others 0), small enough for a flush.
	Budget *struct {
		Tokens int `yaml:"tokens"`
		Recent int `yaml:"recent"`
	} `yaml:"budget"`
	Turns []struct {
		User    string `yaml:"user"`
		Curator string `yaml:"curator"` // $U<n>/$A<n>: the ids of turn n's user and agent records
		Flush   string `yaml:"flush"`   // the flush pass's reply, when one is due after this turn
	} `yaml:"turns"`
	Expect []struct {
		Outcomes  []goldenOutcome `yaml:"outcomes"`
		Rejected  []string        `yaml:"rejected"` // substrings of the decoder's reasons
		Questions int             `yaml:"questions"`
		None      bool            `yaml:"none"`
		Invalid   string          `yaml:"invalid"`
		// Flush is what the flush after this turn must make.
		Flush *struct {
			Summary  string          `yaml:"summary"` // policy's decision on the summary
			Records  int             `yaml:"records"` // how many records it covered
			Outcomes []goldenOutcome `yaml:"outcomes"`
		} `yaml:"flush"`
		// Context and NotContext are texts the chat request of this turn
		// must, and must not, hold.
		Context    []string `yaml:"context"`
		NotContext []string `yaml:"not_context"`
	} `yaml:"expect"` // one per turn
	Absent []string `yaml:"absent"` // files that must not be in the vault
	Recall *struct {
		Query string `yaml:"query"`
		Path  string `yaml:"path"`
	} `yaml:"recall"`
}

// goldenOutcome is what policy must decide on one proposal.
type goldenOutcome struct {
	Path     string `yaml:"path"`
	Decision string `yaml:"decision"`
	Why      string `yaml:"why"` // a substring of policy's why
}

const curatorKey = "sk-SECRET-curator-0123456789"

// scriptedCurator is the curator's model: the real OpenAI adapter against
// the stand-in, which answers with the golden thread's scripted reply for
// the turn, its $U<n>/$A<n> replaced by the ids the request shows.
type scriptedCurator struct {
	*llm.OpenAI
	srv     *llmtest.Server
	replies []string
	flushes []string // the flush pass's replies, in order

	mu   sync.Mutex
	n    int
	ids  map[string]string
	msgs []string // what each call was shown, for failures
}

var shownRecord = regexp.MustCompile(`(?m)^\[([0-9A-Z]{26})\] (user|agent):`)

func (m *scriptedCurator) Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error) {
	m.mu.Lock()
	if req.Output != nil && req.Output.Name == curator.FlushSchemaName {
		reply := ""
		if len(m.flushes) > 0 {
			reply, m.flushes = m.flushes[0], m.flushes[1:]
			for k, v := range m.ids {
				reply = strings.ReplaceAll(reply, k, v)
			}
		}
		m.mu.Unlock()
		m.srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: reply}}})
		return m.OpenAI.Stream(ctx, req, onText)
	}
	m.n++
	msg := req.Messages[len(req.Messages)-1].Content
	m.msgs = append(m.msgs, msg)
	_, toCurate, _ := strings.Cut(msg, "## To curate\n")
	for _, sm := range shownRecord.FindAllStringSubmatch(toCurate, -1) {
		k := "$U"
		if sm[2] == "agent" {
			k = "$A"
		}
		m.ids[k+strconv.Itoa(m.n)] = sm[1]
	}
	reply := ""
	if m.n <= len(m.replies) {
		reply = m.replies[m.n-1]
		for k, v := range m.ids {
			reply = strings.ReplaceAll(reply, k, v)
		}
	}
	m.mu.Unlock()
	m.srv.Enqueue(llmtest.Reply{Chunks: []llmtest.Chunk{{Text: reply}}})
	return m.OpenAI.Stream(ctx, req, onText)
}

// awaitReady waits until recall has opened and caught up.
func awaitReady(t *testing.T, m *recollect.Memory) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if h := m.Health(); h != nil && h.Ready {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("recall not ready: %+v", m.Health())
		}
	}
}

// TestGoldenThreads runs every golden thread through the real core,
// vault, policy and recall, with the stand-in model answering the chat
// and the scripted curator.
func TestGoldenThreads(t *testing.T) {
	files, err := filepath.Glob("curator/testdata/golden/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden threads: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var g goldenThread
			dec := yaml.NewDecoder(strings.NewReader(string(b)))
			dec.KnownFields(true)
			if err := dec.Decode(&g); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(g.Expect) != len(g.Turns) {
				t.Fatalf("%s: %d turns, %d expectations", f, len(g.Turns), len(g.Expect))
			}
			runGolden(t, g)
		})
	}
}

func runGolden(t *testing.T, g goldenThread) {
	v, j, dir := openVaultRoot(t)
	for p, content := range g.Notes {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mem := recollect.New(recollect.Options{Root: dir, Journal: j, Session: hearth.MainConversation, Settings: recollect.Settings{Embedder: "none"}})
	memCtx, stopMem := context.WithCancel(context.Background())
	memDone := make(chan struct{})
	go func() { defer close(memDone); mem.Run(memCtx) }()
	t.Cleanup(func() { stopMem(); <-memDone })
	awaitReady(t, mem)

	chat := llmtest.NewOpenAI(t, "sk-chat")
	chatModel := llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "chat", BaseURL: chat.BaseURL(), APIKey: "sk-chat"}, nil)
	cur := llmtest.NewOpenAI(t, curatorKey)
	var replies, flushes []string
	for _, turn := range g.Turns {
		replies = append(replies, strings.TrimSpace(turn.Curator))
		if turn.Flush != "" {
			flushes = append(flushes, strings.TrimSpace(turn.Flush))
		}
	}
	curModel := &scriptedCurator{
		OpenAI: llm.NewOpenAI(llm.Config{Provider: llm.ProviderOpenAI, Model: "curator", BaseURL: cur.BaseURL(), APIKey: curatorKey}, nil),
		srv:    cur, replies: replies, flushes: flushes, ids: map[string]string{},
	}
	curated := make(chan hearth.Curated, len(g.Turns))
	flushed := make(chan hearth.Flushed, len(g.Turns))
	cfg := hearth.Config{
		Journal: j, Vault: v, Memory: mem, Models: fixed{chatModel}, ShutdownGrace: 5 * time.Second,
		Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: curModel, Observe: func(c hearth.Curated) { curated <- c },
			OnFlush: func(f hearth.Flushed) { flushed <- f }},
	}
	if g.Budget != nil {
		cfg.Budget = hearth.ContextBudget{Tokens: g.Budget.Tokens, Shares: hearth.ContextShares{Recent: g.Budget.Recent}}
	}
	h := runCore(t, cfg)
	for i, turn := range g.Turns {
		if err := h.Send("r"+strconv.Itoa(i), turn.User); err != nil {
			t.Fatal(err)
		}
		var got hearth.Curated
		select {
		case got = <-curated:
		case <-time.After(30 * time.Second):
			t.Fatalf("turn %d: not curated; health %+v", i+1, h.CuratorHealth())
		}
		want := g.Expect[i]
		if len(got.Outcomes) != len(want.Outcomes) {
			curModel.mu.Lock()
			shown := strings.Join(curModel.msgs, "\n----\n")
			curModel.mu.Unlock()
			t.Fatalf("turn %d: outcomes %+v, want %+v (rejected %+v, invalid %q); the curator was shown:\n%s", i+1, got.Outcomes, want.Outcomes, got.Rejected, got.Invalid, shown)
		}
		for k, w := range want.Outcomes {
			o := got.Outcomes[k]
			if o.Path != w.Path || o.Decision != w.Decision || !strings.Contains(o.Why, w.Why) {
				t.Errorf("turn %d: outcome %+v, want %+v", i+1, o, w)
			}
		}
		if len(got.Rejected) != len(want.Rejected) {
			t.Fatalf("turn %d: rejected %+v, want %q", i+1, got.Rejected, want.Rejected)
		}
		for k, w := range want.Rejected {
			if !strings.Contains(got.Rejected[k].Why, w) {
				t.Errorf("turn %d: rejection %q, want %q", i+1, got.Rejected[k].Why, w)
			}
		}
		if len(got.Questions) != want.Questions || got.None != want.None || !strings.Contains(got.Invalid, want.Invalid) || (want.Invalid == "") != (got.Invalid == "") {
			t.Errorf("turn %d: questions %v none %v invalid %q; want %d, %v, %q", i+1, got.Questions, got.None, got.Invalid, want.Questions, want.None, want.Invalid)
		}
		if len(want.Context)+len(want.NotContext) > 0 {
			reqs := chat.Requests()
			var shown strings.Builder
			for _, m := range reqs[len(reqs)-1].Messages {
				shown.WriteString(m.Content + "\n")
			}
			for _, c := range want.Context {
				if !strings.Contains(shown.String(), c) {
					t.Errorf("turn %d: the model was not sent %q:\n%s", i+1, c, shown.String())
				}
			}
			for _, c := range want.NotContext {
				if strings.Contains(shown.String(), c) {
					t.Errorf("turn %d: the model was sent %q", i+1, c)
				}
			}
		}
		if wf := want.Flush; wf != nil {
			var f hearth.Flushed
			select {
			case f = <-flushed:
			case <-time.After(30 * time.Second):
				t.Fatalf("turn %d: no flush; health %+v", i+1, h.CuratorHealth())
			}
			if f.Outcome.Decision != wf.Summary || len(f.Records) != wf.Records || len(f.Outcomes) != len(wf.Outcomes) {
				t.Fatalf("turn %d: flush %+v, want %+v", i+1, f, *wf)
			}
			for k, w := range wf.Outcomes {
				if o := f.Outcomes[k]; o.Path != w.Path || o.Decision != w.Decision || !strings.Contains(o.Why, w.Why) {
					t.Errorf("turn %d: flush outcome %+v, want %+v", i+1, o, w)
				}
			}
			if b, err := v.Read(f.Path); err != nil || !strings.Contains(string(b), f.Summary) {
				t.Errorf("turn %d: summary %s: %v", i+1, f.Path, err)
			}
		}
		for _, q := range got.Questions {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(q))); err != nil || !strings.HasPrefix(q, vault.QuestionsDir+"/") {
				t.Errorf("question %s: %v", q, err)
			}
		}
	}
	for _, p := range g.Absent {
		if b, err := v.Read(p); err != nil || b != nil {
			t.Errorf("%s is in the vault (%v), want it absent", p, err)
		}
	}
	// The curator asked for the schema, by name, strictly, every time.
	for _, r := range cur.Requests() {
		if r.Output != nil && r.Output.Name == curator.FlushSchemaName && r.Output.Strict {
			continue
		}
		if r.Output == nil || r.Output.Name != curator.SchemaName || !r.Output.Strict || r.Output.Type != "json_schema" {
			t.Errorf("curator request without the strict schema: %+v", r.Output)
		}
		if r.Model != "curator" || len(r.Messages) != 2 || r.Messages[0].Role != "system" || !strings.Contains(r.Messages[0].Content, "curator of a personal memory") {
			t.Errorf("curator request %+v", r)
		}
	}
	if hl := h.CuratorHealth(); hl == nil || hl.Turns != len(g.Turns) || hl.Uncurated != 0 || hl.Calls != len(g.Turns)+len(flushes) || hl.Flushes != len(flushes) {
		t.Errorf("curator health %+v", hl)
	}
	if g.Recall != nil {
		hits, err := h.Search(t.Context(), memory.SearchRequest{Query: g.Recall.Query, K: 10, Kinds: []string{memory.KindKnowledge}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, hit := range hits {
			found = found || hit.Path == g.Recall.Path
		}
		if !found {
			t.Errorf("search %q: %+v, want %s", g.Recall.Query, hits, g.Recall.Path)
		}
	}
}
