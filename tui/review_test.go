package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/ipc"
)

// Proposals as hearth sends them.
var (
	propCreate = ipc.Proposal{
		ID: "prop_01KAK3J7Y0Q2V5S8WZ3C9D4E6A", Op: "create", Path: "knowledge/prefs/coffee.md",
		Reason: "the owner said they drink flat whites", Author: "agent",
		Why:       "the policy reviews changes to knowledge/prefs/",
		Content:   "---\ntitle: Coffee\ntype: preference\n---\nThe owner drinks flat whites.\n",
		Sources:   []ipc.ProposalSource{{Thread: "main", Turn: "01KAK3J7Y00000000000000005"}},
		CreatedAt: epoch.Add(-10 * 60e9),
	}
	propUpdate = ipc.Proposal{
		ID: "prop_01KAK3J7Y0Q2V5S8WZ3C9D4E6B", Op: "update", Path: "knowledge/people/owner.md",
		Reason: "the owner moved to Lisbon", Author: "agent",
		Why:       "a change to identity is reviewed",
		Current:   "---\ntitle: The owner\ntype: person\n---\n# Home\n\nLives in Porto.\nWorks from home.\n\n# Family\n\nA sister, Ana.\n",
		Content:   "---\ntitle: The owner\ntype: person\n---\n# Home\n\nLives in Lisbon since November.\nWorks from home.\n\n# Family\n\nA sister, Ana.\n",
		Sources:   []ipc.ProposalSource{{Thread: "main", Turn: "01KAK3J7Y00000000000000007"}},
		CreatedAt: epoch.Add(-5 * 60e9),
	}
)

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// openReview opens the panel and answers its request with list.
func (hs *harness) openReview(list ...ipc.Proposal) *ipc.Proposals {
	hs.t.Helper()
	hs.typeText("/review", true)
	asks := sentOf[*ipc.Proposals](hs.be)
	if len(asks) == 0 {
		hs.t.Fatal("/review did not ask hearth for the proposals")
	}
	ask := asks[len(asks)-1]
	hs.send(&ipc.ProposalList{Ref: ask.Ref, Proposals: list})
	return ask
}

func TestReviewKeysSendDecisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []tea.Msg
		want []*ipc.ProposalDecide
	}{
		{"a approves", []tea.Msg{runes("a")}, []*ipc.ProposalDecide{{ID: propCreate.ID, Approve: true, Ref: "r2"}}},
		{"r rejects", []tea.Msg{runes("r")}, []*ipc.ProposalDecide{{ID: propCreate.ID, Approve: false, Ref: "r2"}}},
		{"the next one", []tea.Msg{tea.KeyMsg{Type: tea.KeyRight}, runes("a")}, []*ipc.ProposalDecide{{ID: propUpdate.ID, Approve: true, Ref: "r2"}}},
		{"next and back", []tea.Msg{tea.KeyMsg{Type: tea.KeyTab}, tea.KeyMsg{Type: tea.KeyLeft}, runes("r")}, []*ipc.ProposalDecide{{ID: propCreate.ID, Ref: "r2"}}},
		{"one decision at a time", []tea.Msg{runes("a"), runes("a"), runes("r")}, []*ipc.ProposalDecide{{ID: propCreate.ID, Approve: true, Ref: "r2"}}},
		{"esc closes: keys type again", []tea.Msg{tea.KeyMsg{Type: tea.KeyEsc}, runes("a")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.connect()
			hs.openReview(propCreate, propUpdate)
			hs.send(tc.keys...)
			if diff := cmp.Diff(tc.want, sentOf[*ipc.ProposalDecide](hs.be)); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReviewEditedContent(t *testing.T) {
	edited := strings.Replace(propCreate.Content, "flat whites", "cortados", 1)
	for _, tc := range []struct {
		name  string
		msg   reviewEditedMsg
		want  []*ipc.ProposalDecide
		flash string
	}{
		{"changed: approved with the owner's version", reviewEditedMsg{id: propCreate.ID, original: propCreate.Content, edited: edited},
			[]*ipc.ProposalDecide{{ID: propCreate.ID, Approve: true, Content: edited, Ref: "r2"}}, "sent your version"},
		{"unchanged: nothing sent", reviewEditedMsg{id: propCreate.ID, original: propCreate.Content, edited: propCreate.Content}, nil, "unchanged"},
		{"emptied: nothing sent", reviewEditedMsg{id: propCreate.ID, original: propCreate.Content, edited: " \n"}, nil, "left empty"},
		{"editor failed: nothing sent", reviewEditedMsg{id: propCreate.ID, original: propCreate.Content, edited: edited, err: errors.New("vi: exit status 1")}, nil, "editor: vi"},
		{"decided meanwhile: nothing sent", reviewEditedMsg{id: "prop_gone", original: "x", edited: "y"}, nil, "decided meanwhile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.connect()
			hs.openReview(propCreate)
			hs.send(tc.msg)
			if diff := cmp.Diff(tc.want, sentOf[*ipc.ProposalDecide](hs.be)); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if !strings.Contains(hs.m.flash.text, tc.flash) {
				t.Errorf("status says %q, want %q", hs.m.flash.text, tc.flash)
			}
		})
	}
}

func TestReviewEditOpensEditorOnlyWhereItCan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     ipc.Proposal
		runs  bool
		flash string
	}{
		{"create", propCreate, true, ""},
		{"update", propUpdate, true, ""},
		{"delete", ipc.Proposal{ID: "prop_d", Op: "delete", Path: "knowledge/x.md", Current: "x\n"}, false, "cannot be edited"},
		{"patch", ipc.Proposal{ID: "prop_p", Op: "update", Path: "knowledge/x.md", Current: "x\n"}, false, "patch"},
		{"cut", func() ipc.Proposal { p := propCreate; p.Truncated = true; return p }(), false, "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.connect()
			hs.openReview(tc.p)
			_, cmd := hs.m.reviewKey(runes("e")) // the frame's tickers aside
			if (cmd != nil) != tc.runs {
				t.Errorf("e returned a command: %v, want %v", cmd != nil, tc.runs)
			}
			if !strings.Contains(hs.m.flash.text, tc.flash) {
				t.Errorf("status says %q, want %q", hs.m.flash.text, tc.flash)
			}
			if got := sentOf[*ipc.ProposalDecide](hs.be); len(got) != 0 {
				t.Errorf("e sent %v before any edit", got)
			}
		})
	}
}

// The editor runs on a private temporary copy of the proposed file; what
// it saves is read back and the copy removed.
func TestEditRun(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen")
	script := filepath.Join(dir, "editor")
	// The fake editor records the file it was given and its mode, and
	// replaces a word.
	body := "#!/bin/sh\nset -e\nprintf '%s\\n' \"$2\" > " + seen + "\nstat -c %a \"$2\" >> " + seen + "\nsed -i 's/flat whites/cortados/' \"$2\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	run := &editRun{editor: []string{script, "--wait"}, content: propCreate.Content, ext: ".md"}
	if err := run.Run(); err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(propCreate.Content, "flat whites", "cortados", 1); run.edited != want {
		t.Errorf("edited = %q, want %q", run.edited, want)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	name, mode, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if !strings.HasSuffix(name, ".md") || !strings.Contains(filepath.Base(name), "mnemo-review-") {
		t.Errorf("the editor got %q", name)
	}
	if mode != "600" {
		t.Errorf("the copy's mode is %s, want 600", mode)
	}
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy is still there: %v", err)
	}

	fail := &editRun{editor: []string{"false"}, content: "x"}
	if err := fail.Run(); err == nil || fail.edited != "" {
		t.Errorf("a failing editor: err %v, edited %q", err, fail.edited)
	}
}

func TestEditorCommand(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		cfg  string
		env  map[string]string
		want []string
	}{
		{"configured", "nano -w", map[string]string{"EDITOR": "vim"}, []string{"nano", "-w"}},
		{"visual first", "", map[string]string{"VISUAL": "code --wait", "EDITOR": "vim"}, []string{"code", "--wait"}},
		{"editor", "", map[string]string{"EDITOR": "vim"}, []string{"vim"}},
		{"blank is unset", " ", map[string]string{"VISUAL": " "}, []string{"vi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, editorCommand(tc.cfg, env(tc.env))); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestReviewEventsKeepTheListAndTellTheChat(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect()
	hs.send(&propCreate)
	hs.wantScreen("memory: 1 change waiting for review — /review")
	hs.send(&propUpdate)
	hs.wantScreen("memory: 2 changes waiting for review — /review")
	if n := countOf(hs.screen(), "waiting for review"); n != 1 {
		t.Errorf("%d notices about changes waiting, want one kept up to date:\n%s", n, hs.screen())
	}
	hs.send(&propCreate) // again (a resend): not a third
	if n := len(hs.m.review.list); n != 2 {
		t.Errorf("%d proposals listed, want 2", n)
	}

	// Decided elsewhere (another client, the CLI): it leaves the list.
	hs.send(&ipc.ProposalDecided{ID: propCreate.ID, Path: propCreate.Path, Decision: "applied", Why: "approved by the owner", Commit: "4f1c2d3e5a6b7c8d", By: "owner"})
	hs.wantScreen("memory: knowledge/prefs/coffee.md applied (commit 4f1c2d3)")
	hs.send(&ipc.ProposalDecided{ID: "prop_x", Path: "knowledge/misc/weather.md", Decision: "rejected", Why: "no source cited", By: "policy"})
	hs.wantScreen("memory: change to knowledge/misc/weather.md rejected by policy: no source cited")
	hs.send(&ipc.ProposalDecided{ID: propUpdate.ID, Path: propUpdate.Path, Decision: "applied", CommitFailed: true, By: "owner"})
	hs.wantScreen("saved but not committed yet")
	if n := len(hs.m.review.list); n != 0 {
		t.Errorf("%d proposals listed after both were decided", n)
	}

	// While the panel is open, a new proposal shows in it, not in the chat.
	hs.openReview()
	hs.wantScreen("nothing waits for your review")
	hs.send(&propUpdate)
	hs.wantScreen("knowledge/people/owner.md")
	hs.wantScreen("review · 1 of 1")
	hs.send(tea.KeyMsg{Type: tea.KeyEsc})
	if n := countOf(hs.screen(), "waiting for review"); n != 1 {
		t.Errorf("%d notices about changes waiting, want only the one from before the panel opened:\n%s", n, hs.screen())
	}

	// The outcome of the owner's own decision, panel open: it says so.
	hs.openReview(propUpdate)
	hs.send(runes("r"))
	d := sentOf[*ipc.ProposalDecide](hs.be)[0]
	hs.wantScreen("deciding…")
	hs.send(&ipc.ProposalDecided{ID: d.ID, Path: propUpdate.Path, Decision: "rejected", Why: "rejected by the owner", By: "owner", Ref: d.Ref})
	hs.wantScreen("nothing waits for your review")
	hs.wantScreen("· memory: change to knowledge/people/owner.md rejected")
}

func TestReviewListKeepsSelectionAndWhy(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect()
	hs.send(&propCreate, &propUpdate)
	hs.openReview(func() ipc.Proposal { p := propCreate; p.Why = ""; return p }(), func() ipc.Proposal { p := propUpdate; p.Why = ""; return p }())
	hs.wantScreen("the policy reviews changes to knowledge/prefs/")
	hs.send(tea.KeyMsg{Type: tea.KeyRight})
	hs.wantScreen("a change to identity is reviewed")
	// A fresh list (reopened): the same one stays selected.
	hs.send(tea.KeyMsg{Type: tea.KeyEsc})
	hs.openReview(propCreate, propUpdate)
	hs.wantScreen("review · 2 of 2")
}

func TestReviewAsksOnConnectWhenHearthHasAVault(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features []string
		asks     bool
	}{
		{"vault", []string{"search", "vault"}, true},
		{"no vault", []string{"search"}, false},
		{"does not say", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, 100, 30)
			hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{Server: "hearth/0.2.0", Protocol: 1, State: ipc.StateIdle, Features: tc.features}})
			asks := sentOf[*ipc.Proposals](hs.be)
			if (len(asks) > 0) != tc.asks {
				t.Fatalf("asked for proposals: %v, want %v", asks, tc.asks)
			}
			if !tc.asks {
				return
			}
			hs.send(&ipc.ProposalList{Ref: asks[0].Ref, Proposals: []ipc.Proposal{propCreate, propUpdate}})
			hs.wantScreen("memory: 2 changes waiting for review — /review")
			// A reconnect with the same two waiting: nothing new to say.
			hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{Server: "hearth/0.2.0", Protocol: 1, State: ipc.StateIdle, Features: tc.features}})
			asks = sentOf[*ipc.Proposals](hs.be)
			hs.send(&ipc.ProposalList{Ref: asks[len(asks)-1].Ref, Proposals: []ipc.Proposal{propCreate, propUpdate}})
			if n := countOf(hs.screen(), "waiting for review"); n != 1 {
				t.Errorf("%d notices about changes waiting, want 1:\n%s", n, hs.screen())
			}
		})
	}
}

func TestReviewNotOnThisHearth(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{Server: "hearth/0.1.0", Protocol: 1, State: ipc.StateIdle, Features: []string{"search"}}})
	hs.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r"), Alt: true})
	hs.wantScreen("this hearth does not support memory review yet")
	if hs.m.overlay == overlayReview || len(sentOf[*ipc.Proposals](hs.be)) != 0 {
		t.Error("the panel opened on a hearth without a vault")
	}
}

func TestReviewErrors(t *testing.T) {
	hs := newHarness(t, 100, 30)
	// A hearth that lists its features: its errors are errors.
	hs.send(&ipc.StateChange{State: ipc.StateConnected, History: &ipc.History{Server: "hearth/0.2.0", Protocol: 1, State: ipc.StateIdle, Features: []string{"vault"}}})
	hs.typeText("/review", true)
	hs.wantScreen("asking hearth…")
	ask := sentOf[*ipc.Proposals](hs.be)[1]
	hs.send(&ipc.Error{Code: ipc.CodeInternal, Message: "hearth could not read the proposals", Ref: ask.Ref})
	hs.wantScreen("✗ hearth could not read the proposals")

	hs.key(tea.KeyEsc)
	hs.openReview(propCreate)
	hs.send(runes("a"))
	d := sentOf[*ipc.ProposalDecide](hs.be)[0]
	hs.send(&ipc.Error{Code: ipc.CodeBadRequest, Message: "no proposal waits with that id (it may be decided already)", Ref: d.Ref})
	hs.wantScreen("no proposal waits with that id")
	hs.wantNoScreen("deciding…")
	hs.send(runes("r")) // decidable again
	if n := len(sentOf[*ipc.ProposalDecide](hs.be)); n != 2 {
		t.Errorf("%d decisions sent, want 2", n)
	}

	hs.send(SendFailedMsg{Msg: sentOf[*ipc.ProposalDecide](hs.be)[1], Err: ipc.ErrNotConnected})
	hs.wantScreen("decision not sent: not connected to hearth")
	hs.wantNoScreen("deciding…")
}

// A tool's confirmation asked while the panel is open is answered with
// y and n as everywhere.
func TestReviewLeavesConfirmationsTheirKeys(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect()
	hs.openReview(propCreate)
	hs.send(&ipc.ConfirmRequest{ID: "call_1", Name: "fs_write", Reason: "save"})
	hs.send(runes("y"))
	if got := sentOf[*ipc.Confirm](hs.be); len(got) != 1 || !got[0].Approve {
		t.Errorf("confirms sent: %v", got)
	}
	if hs.m.overlay != overlayReview {
		t.Error("answering closed the panel")
	}
}

func TestReviewDiffScrolls(t *testing.T) {
	var before, after strings.Builder
	for i := range 60 {
		line := strings.Repeat("x", i%7) + " line " + string(rune('a'+i%26)) + "\n"
		before.WriteString(line)
		if i%3 == 0 {
			line = "changed " + line
		}
		after.WriteString(line)
	}
	p := ipc.Proposal{ID: "prop_long", Op: "update", Path: "knowledge/long.md", Reason: "r", Author: "agent", Current: before.String(), Content: after.String(), CreatedAt: epoch}
	hs := newHarness(t, 80, 24)
	hs.connect()
	hs.openReview(p)
	total := len(proposalDiff(p))
	rows := hs.m.reviewRows()
	if total <= rows {
		t.Fatalf("the diff (%d lines) fits in %d rows: make it longer", total, rows)
	}
	hs.wantScreen("--- a/knowledge/long.md")
	hs.key(tea.KeyDown)
	hs.wantNoScreen("--- a/knowledge/long.md")
	hs.wantScreen("+++ b/knowledge/long.md")
	hs.key(tea.KeyEnd)
	if want := total - rows; hs.m.review.scroll != want {
		t.Errorf("end scrolled to %d, want %d", hs.m.review.scroll, want)
	}
	hs.key(tea.KeyPgDown)
	if want := total - rows; hs.m.review.scroll != want {
		t.Errorf("scrolled past the end: %d, want %d", hs.m.review.scroll, want)
	}
	hs.key(tea.KeyHome)
	hs.wantScreen("--- a/knowledge/long.md")
	checkFrame(t, hs.m.View(), 80, 24)
}

func TestProposalDiff(t *testing.T) {
	kinds := func(d []diffLine) string {
		var b strings.Builder
		for _, l := range d {
			b.WriteByte(l.kind)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name  string
		p     ipc.Proposal
		kinds string
		has   []string
	}{
		{"create", ipc.Proposal{Op: "create", Path: "k/a.md", Content: "one\ntwo\n"}, "hh@++", []string{"--- /dev/null", "+++ b/k/a.md", "@@ -0,0 +1,2 @@"}},
		{"update", ipc.Proposal{Op: "update", Path: "k/a.md", Current: "one\ntwo\nthree\n", Content: "one\n2\nthree\n"}, "hh@ -+ ", []string{"--- a/k/a.md", "@@ -1,3 +1,3 @@"}},
		{"delete", ipc.Proposal{Op: "delete", Path: "k/a.md", Current: "one\n"}, "!hh@-", []string{"deletes the file", "+++ /dev/null"}},
		{"deprecate", ipc.Proposal{Op: "deprecate", Path: "k/a.md", Current: "one\n"}, "!", []string{"deprecated"}},
		{"patch", ipc.Proposal{Op: "update", Path: "k/a.md", Current: "one\n"}, "!", []string{"a patch hearth applies"}},
		{"an older hearth: no current file", ipc.Proposal{Op: "update", Path: "k/a.md", Content: "one\n"}, "!hh@+", []string{"did not send the file as it is"}},
		{"cut", ipc.Proposal{Op: "create", Path: "k/a.md", Content: "one\n", Truncated: true}, "!hh@+", []string{"too long to send whole"}},
		{"escapes are not passed to the terminal", ipc.Proposal{Op: "create", Path: "k/a.md", Content: "a\x1b[31mred\x1b[0m\tb\n"}, "hh@+", []string{"ared    b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := proposalDiff(tc.p)
			if got := kinds(d); got != tc.kinds {
				t.Errorf("line kinds %q, want %q: %q", got, tc.kinds, d)
			}
			var all strings.Builder
			for _, l := range d {
				all.WriteString(l.text + "\n")
			}
			for _, s := range tc.has {
				if !strings.Contains(all.String(), s) {
					t.Errorf("diff lacks %q:\n%s", s, all.String())
				}
			}
			if strings.Contains(all.String(), "\x1b") {
				t.Errorf("diff carries an escape: %q", all.String())
			}
		})
	}
}

// The client that decides hears the outcome twice, as every client does
// and as the answer to its request: the chat says it once.
func TestReviewOutcomeToldOnce(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect()
	hs.openReview(propCreate)
	hs.send(runes("a"))
	d := sentOf[*ipc.ProposalDecide](hs.be)[0]
	out := ipc.ProposalDecided{ID: d.ID, Path: propCreate.Path, Decision: "applied", Commit: "4f1c2d3e", By: "owner"}
	withRef := out
	withRef.Ref = d.Ref
	hs.send(&out, &withRef, tea.KeyMsg{Type: tea.KeyEsc})
	n := 0
	for _, it := range hs.m.chat.items {
		if it.kind == kindNotice && strings.Contains(it.text, "coffee.md applied") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the chat tells the outcome %d times, want once:\n%s", n, hs.screen())
	}
}

// A reconnect loses the answers of the connection before: nothing stays
// waiting for them, and an open panel asks again.
func TestReviewReconnect(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect()
	hs.openReview(propCreate)
	hs.send(runes("a"))
	hs.wantScreen("deciding…")
	hs.send(&ipc.StateChange{State: ipc.StateReconnecting, Attempt: 1})
	hs.connect()
	asks := sentOf[*ipc.Proposals](hs.be)
	if len(asks) != 2 {
		t.Fatalf("%d asks for proposals, want the panel to ask again", len(asks))
	}
	hs.send(&ipc.ProposalList{Ref: asks[1].Ref, Proposals: []ipc.Proposal{propCreate}})
	hs.wantNoScreen("deciding…")
	hs.send(runes("a"))
	if n := len(sentOf[*ipc.ProposalDecide](hs.be)); n != 2 {
		t.Errorf("%d decisions sent, want the second after the reconnect", n)
	}
}

// A list hearth read before a decision it then announced does not bring
// the decided proposal back.
func TestReviewListAfterDecision(t *testing.T) {
	hs := newHarness(t, 100, 30)
	hs.connect()
	hs.typeText("/review", true)
	ask := sentOf[*ipc.Proposals](hs.be)[0]
	hs.send(&ipc.ProposalDecided{ID: propCreate.ID, Path: propCreate.Path, Decision: "applied", Commit: "abc", By: "owner"})
	hs.send(&ipc.ProposalList{Ref: ask.Ref, Proposals: []ipc.Proposal{propCreate, propUpdate}})
	hs.wantScreen("review · 1 of 1")
	hs.wantScreen("update knowledge/people/owner.md")
}

// Several proposals are listed above the one shown, four at most, the
// window following the selection.
func TestReviewListWindow(t *testing.T) {
	var ps []ipc.Proposal
	for i := range 6 {
		p := propCreate
		p.ID, p.Path = fmt.Sprintf("prop_%d", i), fmt.Sprintf("knowledge/prefs/n%d.md", i)
		ps = append(ps, p)
	}
	hs := newHarness(t, 80, 24)
	hs.connect()
	hs.openReview(ps...)
	hs.wantScreen("› create knowledge/prefs/n0.md")
	hs.wantScreen("knowledge/prefs/n3.md")
	hs.wantNoScreen("knowledge/prefs/n4.md")
	for range 5 {
		hs.key(tea.KeyRight)
	}
	hs.wantScreen("review · 6 of 6")
	hs.wantScreen("› create knowledge/prefs/n5.md")
	hs.wantScreen("knowledge/prefs/n2.md")
	hs.wantNoScreen("knowledge/prefs/n1.md")
	checkFrame(t, hs.m.View(), 80, 24)
}

// The panel fits any window the UI draws in, down to the smallest.
func TestReviewFitsSmallWindows(t *testing.T) {
	for _, size := range [][2]int{{20, 6}, {40, 12}, {60, 16}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			hs := newHarness(t, size[0], size[1])
			hs.connect()
			hs.openReview(propUpdate, propCreate)
			checkFrame(t, hs.m.View(), size[0], size[1])
			hs.key(tea.KeyEnd)
			hs.key(tea.KeyRight)
			checkFrame(t, hs.m.View(), size[0], size[1])
		})
	}
}
