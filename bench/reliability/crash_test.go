package reliability

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/hearth/hearthtest"
	"github.com/mnemo/mnemo/hearth/llm/llmtest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/vault"
)

// TestCrashLoop starts the real hearth on one memory root again and again,
// lets concurrent clients write chat turns (journal, then index) and owner
// notes (vault, then git), kills hearth with SIGKILL at a random point, and
// checks on the next start that every acknowledged record survived and
// that no search hit points at nothing, and once that start has stopped
// cleanly, that git is intact with nothing left uncommitted. make test
// runs 20 cycles; make reliability 1,000.
func TestCrashLoop(t *testing.T) {
	s := *seed
	if s == 0 {
		s = time.Now().UnixNano()
	}
	t.Logf("seed %d (rerun with -seed %d)", s, s)
	rng := rand.New(rand.NewPCG(uint64(s), 1))
	model := llmtest.NewOpenAI(t, "sk-test")
	l := &ledger{turns: map[string]ipc.Turn{}, notes: map[string]string{}}
	root, home := t.TempDir(), t.TempDir()
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	opts := hearthtest.Options{Root: root, Home: home, Env: hearthtest.OpenAIEnv(model)}
	for cycle := range *cycles {
		d := hearthtest.Start(t, hearthBin, opts)
		l.check(t, d.Addr, rng, false)
		// git is read with hearth stopped: what a start writes in the
		// background (the late commits of the writes a kill cut short,
		// the owner's edits, the tool catalog) is done once Run returns,
		// and a git status run meanwhile would see a file written and
		// not yet committed, and take the index lock from under the
		// commit (DESIGN.md, Reliability).
		d.Stop(t)
		l.checkGit(t, root, cycle == 0)
		d = hearthtest.Start(t, hearthBin, opts)

		// Writers run until a random number of acknowledgements of each
		// kind (turns and notes counted apart: a turn no longer waits
		// for a vault write, so a count of both together was reached by
		// turns alone before most notes), then a random instant later
		// (up to 30 ms: mid-write, mid-fsync, mid-commit) hearth is
		// killed.
		turns, notes := l.ackedEach()
		wantTurns, wantNotes := turns+1+rng.IntN(9), notes+rng.IntN(6)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range *writers {
			r := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
			wg.Go(func() { l.chat(ctx, d.Addr, fmt.Sprintf("c%dw%d", cycle, w), r) })
		}
		r := rand.New(rand.NewPCG(rng.Uint64(), 99))
		wg.Go(func() { l.vault(ctx, d.Addr, cycle, r) })
		l.waitAcked(wantTurns, wantNotes, 30*time.Second)
		pause := time.Duration(rng.IntN(30_000)) * time.Microsecond
		time.Sleep(pause) // the fault injected: a random kill point, not synchronisation
		d.Kill(t)
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Fatalf("cycle %d failed", cycle)
		}
		if (cycle+1)%25 == 0 {
			l.mu.Lock()
			t.Logf("%d cycles in %s: acknowledged %d turns and %d notes, %d record checks", cycle+1, time.Since(start).Round(time.Second), len(l.turns), len(l.notes), l.checks)
			l.mu.Unlock()
		}
	}
	// A last start checks everything, then a clean stop.
	d := hearthtest.Start(t, hearthBin, opts)
	l.check(t, d.Addr, rng, true)
	d.Stop(t)
	l.checkGit(t, root, true)
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("crash loop: %d cycles in %s; acknowledged %d turns and %d notes (%d vault writes refused); %d record checks, %d search hits resolved",
		*cycles, time.Since(start).Round(time.Second), len(l.turns), len(l.notes), l.refused, l.checks, l.hits)
}

// ledger is what clients were told was stored, and what was sent.
type ledger struct {
	mu      sync.Mutex
	cond    *sync.Cond
	turns   map[string]ipc.Turn // acknowledged turns by id (turn, done)
	notes   map[string]string   // acknowledged vault writes: path → content
	fresh   []string            // notes acknowledged since the last check
	words   []string            // the unique words of messages sent since the last check
	refused int                 // vault writes answered with an error
	checks  int                 // records verified
	hits    int                 // search hits resolved
	// firstCommit is the root's first commit (git rev-list output).
	firstCommit string
	// checked is HEAD at the last git check: what is older was verified.
	checked string
}

func (l *ledger) ackedEach() (turns, notes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.turns), len(l.notes)
}

func (l *ledger) ackTurn(turn ipc.Turn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns[turn.ID] = turn
	l.signal()
}

func (l *ledger) ackNote(path, content string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes[path] = content
	l.fresh = append(l.fresh, path)
	l.signal()
}

func (l *ledger) signal() {
	if l.cond != nil {
		l.cond.Broadcast()
	}
}

// waitAcked waits until turns turns and notes notes are acknowledged in
// all, or at most max (a hearth that stopped acknowledging is still
// killed, and the next check says what survived).
func (l *ledger) waitAcked(turns, notes int, max time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
	}
	timedOut := false
	timer := time.AfterFunc(max, func() {
		l.mu.Lock()
		timedOut = true
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer timer.Stop()
	for !timedOut && (len(l.turns) < turns || len(l.notes) < notes) {
		l.cond.Wait()
	}
}

// chat sends messages, each with a unique word, one after the other as
// soon as the previous one is stored, until hearth goes away.
func (l *ledger) chat(ctx context.Context, addr, name string, rng *rand.Rand) {
	c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: hearthtest.Token, Client: "reliability"})
	if err != nil {
		return // killed before this writer connected
	}
	defer c.Close()
	for n := 0; ; n++ {
		word := randWord(rng)
		ref := fmt.Sprintf("%s-%d", name, n)
		l.mu.Lock()
		l.words = append(l.words, word)
		l.mu.Unlock()
		if c.Send(&ipc.Message{Content: "remember " + word + " from " + name, Ref: ref}) != nil {
			return
		}
	await:
		for {
			m, err := c.Recv(ctx)
			if err != nil {
				return
			}
			switch m := m.(type) {
			case *ipc.TurnStored:
				l.ackTurn(m.Turn)
				if m.Ref == ref {
					break await
				}
			case *ipc.Done:
				l.ackTurn(m.Turn)
			case *ipc.Error:
				if m.Ref == ref {
					break await // not stored, not acknowledged
				}
			}
		}
	}
}

// vault writes one new owner note after the other, each to its own path
// (so an acknowledged content is the only one its path can hold).
func (l *ledger) vault(ctx context.Context, addr string, cycle int, rng *rand.Rand) {
	c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: hearthtest.Token, Client: "reliability-vault"})
	if err != nil {
		return
	}
	defer c.Close()
	for n := 0; ; n++ {
		path := fmt.Sprintf("knowledge/projects/rel-%d-%d.md", cycle, n)
		id := ulid.Make().String()
		content := fmt.Sprintf("---\nid: %s\ntitle: Reliability %d.%d\ntype: project\n---\nThe word is %s.\n", id, cycle, n, randWord(rng))
		ref := fmt.Sprintf("v%d", n)
		if c.Send(&ipc.VaultWrite{Op: ipc.VaultOpWrite, Path: path, Content: content, Reason: "crash loop", Ref: ref}) != nil {
			return
		}
	await:
		for {
			m, err := c.Recv(ctx)
			if err != nil {
				return
			}
			switch m := m.(type) {
			case *ipc.ProposalDecided:
				if m.Ref == ref {
					if m.Decision == "applied" {
						l.ackNote(path, content)
					}
					break await
				}
			case *ipc.Error:
				if m.Ref == ref {
					l.mu.Lock()
					l.refused++
					l.mu.Unlock()
					break await
				}
			}
		}
	}
}

// randWord is a word of lowercase letters no dictionary holds, for
// searches that match exactly one message.
func randWord(rng *rand.Rand) string {
	b := make([]byte, 12)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return "zq" + string(b)
}

// check verifies the root a fresh hearth serves: every acknowledged turn
// is in the journal with its content, recall is ready and each hit of a
// search for the words sent since the last check names a journal record
// (or a note that exists), every note acknowledged since the last check
// (all of them when full, else a sample of older ones too) reads back as
// written. git is checkGit's, read once hearth has stopped.
func (l *ledger) check(t *testing.T, addr string, rng *rand.Rand, full bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := ipc.Dial(ctx, addr, ipc.DialOptions{Token: hearthtest.Token, Client: "reliability-check"})
	if err != nil {
		t.Fatalf("dial the restarted hearth: %v", err)
	}
	defer c.Close()
	seq := 0
	ask := func(m ipc.Msg, setRef func(string)) ipc.Msg {
		seq++
		ref := fmt.Sprintf("k%d", seq)
		setRef(ref)
		if err := c.Send(m); err != nil {
			t.Fatalf("send %s: %v", m.Type(), err)
		}
		for {
			got, err := c.Recv(ctx)
			if err != nil {
				t.Fatalf("awaiting the answer to %s: %v", m.Type(), err)
			}
			if r := refOf(got); r == ref {
				return got
			}
		}
	}

	journal := map[string]ipc.Turn{}
	for after := ""; ; {
		q := &ipc.HistoryQuery{After: after}
		page, ok := ask(q, func(r string) { q.Ref = r }).(*ipc.HistoryPage)
		if !ok {
			t.Fatalf("history_query answered otherwise")
		}
		for _, turn := range page.Turns {
			journal[turn.ID] = turn
		}
		if !page.More || len(page.Turns) == 0 {
			break
		}
		after = page.Turns[len(page.Turns)-1].ID
	}

	l.mu.Lock()
	turns := make([]ipc.Turn, 0, len(l.turns))
	for _, turn := range l.turns {
		turns = append(turns, turn)
	}
	words, fresh := l.words, l.fresh
	l.words, l.fresh = nil, nil
	notes := map[string]string{}
	for _, p := range fresh {
		notes[p] = l.notes[p]
	}
	for p, content := range l.notes { // map order: a random sample
		if !full && len(notes) >= len(fresh)+8 {
			break
		}
		notes[p] = content
	}
	l.mu.Unlock()

	checks := 0
	for _, want := range turns {
		got, ok := journal[want.ID]
		if !ok {
			t.Errorf("acknowledged %s turn %s (%q) is not in the journal", want.Role, want.ID, want.Content)
			continue
		}
		if got.Content != want.Content || got.Role != want.Role {
			t.Errorf("turn %s: stored %s %q, acknowledged %s %q", want.ID, got.Role, got.Content, want.Role, want.Content)
		}
		checks++
	}

	// Recall open and caught up with the journal, the vault's late commits
	// made: polling hearth's own counters.
	deadline := time.Now().Add(time.Minute)
	for {
		h := &ipc.Health{}
		rep, ok := ask(h, func(r string) { h.Ref = r }).(*ipc.HealthReport)
		if !ok {
			t.Fatalf("health answered otherwise")
		}
		if rep.Index != nil && rep.Index.Ready && (rep.Vault == nil || rep.Vault.Uncommitted == 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recall not ready or the vault unsettled after a minute: index %+v vault %+v", rep.Index, rep.Vault)
		}
		time.Sleep(20 * time.Millisecond) // polling hearth's counters
	}

	hits := 0
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	for _, word := range words[:min(len(words), 10)] {
		q := &ipc.Search{Query: word}
		res, ok := ask(q, func(r string) { q.Ref = r }).(*ipc.SearchResults)
		if !ok {
			t.Fatalf("search answered otherwise")
		}
		for _, hit := range res.Results {
			hits++
			if hit.Path != "" {
				continue // a note: read below when acknowledged
			}
			id, _, _ := strings.Cut(hit.Turn.ID, "#")
			if _, ok := journal[id]; !ok {
				t.Errorf("search %q: hit %s names no journal record", word, hit.Turn.ID)
			}
		}
		for _, turn := range turns {
			if turn.Role == ipc.RoleUser && strings.Contains(turn.Content, word) && !hasHit(res.Results, turn.ID) {
				t.Errorf("search %q does not find the acknowledged turn %s", word, turn.ID)
			}
		}
	}

	for p, want := range notes {
		q := &ipc.VaultRead{Path: p}
		switch f := ask(q, func(r string) { q.Ref = r }).(type) {
		case *ipc.VaultFile:
			if f.Content != want {
				t.Errorf("acknowledged note %s reads %q, want %q", p, f.Content, want)
			}
		case *ipc.Error:
			t.Errorf("acknowledged note %s: %s: %s", p, f.Code, f.Message)
		}
		checks++
	}

	l.mu.Lock()
	l.checks += checks
	l.hits += hits
	l.mu.Unlock()
}

// checkGit verifies the memory root of a hearth that has stopped
// cleanly: git is intact, HEAD descends from the root's first commit and
// from the HEAD of the last check, and nothing is left uncommitted but what
// is by design. full runs git fsck over every object; otherwise only the
// objects HEAD gained since the last check are read and their hashes
// verified (git never rewrites an object, and a full fsck per cycle grows
// with the square of the cycles: 10 s a cycle by cycle 300 on a loaded VM).
func (l *ledger) checkGit(t *testing.T, root string, full bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	git := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	}
	head, err := git("rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	l.mu.Lock()
	since := l.checked
	l.checked = strings.TrimSpace(string(head))
	l.mu.Unlock()
	if full || since == "" {
		if out, err := git("fsck", "--no-progress").CombinedOutput(); err != nil {
			t.Errorf("git fsck: %v\n%s", err, out)
		}
	} else {
		if err := git("merge-base", "--is-ancestor", since, "HEAD").Run(); err != nil {
			t.Errorf("HEAD does not descend from %s, HEAD at the last check: %v", since, err)
		} else if err := verifyObjects(ctx, root, since+"..HEAD"); err != nil {
			t.Errorf("the objects HEAD gained since %s: %v", since, err)
		}
	}
	// One history: HEAD descends from the root's first commit.
	first, err := git("rev-list", "--max-parents=0", "HEAD").Output()
	if err != nil {
		t.Errorf("git rev-list: %v", err)
	}
	l.mu.Lock()
	if l.firstCommit == "" {
		l.firstCommit = string(first)
	}
	if string(first) != l.firstCommit {
		t.Errorf("HEAD's history starts at %q, the root's at %q: the history was cut off", first, l.firstCommit)
	}
	l.mu.Unlock()
	// The work tree is HEAD's but for the journal's shards (not committed
	// per turn, DESIGN.md, Memory root) and the ledger, whose lines name
	// their commit and so reach git with the next one (DESIGN.md, Vault):
	// it may only have grown.
	out, err := git("status", "--porcelain").CombinedOutput()
	if err != nil {
		t.Errorf("git status: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line != "" && !isLedgerStatus(line) && line != "?? threads/" {
			log, _ := git("log", "--stat", "-3", "--", strings.TrimSpace(line[2:])).CombinedOutput()
			t.Errorf("git status: %q (the vault left a change uncommitted); its commits:\n%s", line, log)
		}
	}
	ledger, err := vault.LedgerFiles(root)
	if err != nil || len(ledger) == 0 {
		t.Errorf("the ledger's files: %v %v", ledger, err)
	}
	for _, p := range ledger {
		// A month's file new since the last commit is not in HEAD yet.
		committed, _ := git("show", "HEAD:"+p).Output()
		onDisk, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || !bytes.HasPrefix(onDisk, committed) {
			t.Errorf("the ledger's %s on disk does not extend the committed one (%v)", p, err)
		}
	}

	l.mu.Lock()
	l.checks++
	l.mu.Unlock()
}

// verifyObjects reads every object of the revision range (git rev-list
// --objects: a missing one fails it) through git cat-file --batch and
// checks that each hashes to its name: a torn or truncated object fails.
func verifyObjects(ctx context.Context, root, revs string) error {
	list, err := exec.CommandContext(ctx, "git", "-C", root, "rev-list", "--objects", revs).Output()
	if err != nil {
		return fmt.Errorf("git rev-list --objects %s: %w", revs, err)
	}
	var ids bytes.Buffer
	n := 0
	for line := range strings.Lines(string(list)) {
		id, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if id != "" {
			ids.WriteString(id + "\n")
			n++
		}
	}
	cat := exec.CommandContext(ctx, "git", "-C", root, "cat-file", "--batch")
	cat.Stdin = &ids
	out, err := cat.Output()
	if err != nil {
		return fmt.Errorf("git cat-file --batch: %w", err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for range n {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file --batch: %w", err)
		}
		f := strings.Fields(hdr)
		if len(f) != 3 {
			return fmt.Errorf("git cat-file --batch: %q", hdr)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			return fmt.Errorf("git cat-file --batch: %q", hdr)
		}
		body := make([]byte, size+1) // the content, then a newline
		if _, err := io.ReadFull(r, body); err != nil {
			return fmt.Errorf("object %s: %w", f[0], err)
		}
		h := sha1.New()
		fmt.Fprintf(h, "%s %d\x00", f[1], size)
		h.Write(body[:size])
		if got := hex.EncodeToString(h.Sum(nil)); got != f[0] {
			return fmt.Errorf("object %s (%s) hashes to %s", f[0], f[1], got)
		}
	}
	return nil
}

// isLedgerStatus reports whether a line of git status --porcelain is
// the vault's ledger (audit/ledger/YYYY-MM.jsonl, or audit/ledger.jsonl
// from before the split): changed, or a month's file not yet committed.
func isLedgerStatus(line string) bool {
	p := line[min(3, len(line)):]
	switch {
	case strings.HasPrefix(line, " M "):
		return p == vault.LegacyLedgerFile || strings.HasPrefix(p, vault.LedgerDir+"/")
	case strings.HasPrefix(line, "?? "):
		return p == "audit/" || p == vault.LedgerDir+"/" || strings.HasPrefix(p, vault.LedgerDir+"/")
	}
	return false
}

func hasHit(hits []ipc.SearchHit, id string) bool {
	for _, h := range hits {
		if h.Turn.ID == id || strings.HasPrefix(h.Turn.ID, id+"#") {
			return true
		}
	}
	return false
}

// refOf is the ref of an answer, "" for a message that has none.
func refOf(m ipc.Msg) string {
	switch m := m.(type) {
	case *ipc.HistoryPage:
		return m.Ref
	case *ipc.HealthReport:
		return m.Ref
	case *ipc.SearchResults:
		return m.Ref
	case *ipc.VaultFile:
		return m.Ref
	case *ipc.ProposalDecided:
		return m.Ref
	case *ipc.Error:
		return m.Ref
	}
	return ""
}
