package ndjson

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mnemo/mnemo/data"
	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/vault"
)

// A queued proposal reaches every client as "proposal"; "proposals" lists
// it; "proposal_decide" approves it: the note is written, every client
// hears "proposal_decided", the one that asked again with its ref. An
// unknown id is refused with the ref.
func TestClientProposals(t *testing.T) {
	root := t.TempDir()
	if _, err := memory.Open(t.Context(), root, data.Defaults(), nil); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(t.Context(), root, data.Vault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	th := startHearth(t, "", func(c *testConfig) { c.Vault = v })
	a, b := dial(t, th.addr), dial(t, th.addr)
	for _, c := range []*ipc.Conn{a, b} {
		if h := c.History(); !slices.Contains(h.Features, "vault") {
			t.Fatalf("history %+v, want feature vault", h)
		}
	}

	path := "knowledge/prefs/coffee.md"
	content := fmt.Sprintf("---\nid: %s\ntitle: Coffee\ntype: preference\nconfidence: 0.9\n---\nthe owner drinks black coffee without sugar\n", vault.NewNoteID())
	out, err := th.core.Propose(t.Context(), vault.Proposal{Op: vault.OpCreate, Path: path, Content: content, Reason: "the owner said so",
		Sources: []vault.Source{{Thread: "main", Turn: "01JTURN0000000000000000000"}}})
	if err != nil || out.Decision != hearth.DecisionQueued {
		t.Fatalf("%+v, %v; want queued", out, err)
	}
	isProposal := func(m ipc.Msg) bool { _, ok := m.(*ipc.Proposal); return ok }
	for _, c := range []*ipc.Conn{a, b} {
		msgs := recvUntil(t, c, isProposal)
		p := msgs[len(msgs)-1].(*ipc.Proposal)
		if p.ID != out.ID || p.Path != path || p.Op != "create" || p.Author != "agent" || p.Content == "" || p.Why == "" {
			t.Errorf("proposal %+v, want %s with content and why", p, out.ID)
		}
	}

	if err := a.Send(&ipc.Proposals{Ref: "l1"}); err != nil {
		t.Fatal(err)
	}
	msgs := recvUntil(t, a, func(m ipc.Msg) bool { _, ok := m.(*ipc.ProposalList); return ok })
	list := msgs[len(msgs)-1].(*ipc.ProposalList)
	if list.Ref != "l1" || len(list.Proposals) != 1 || list.Proposals[0].ID != out.ID {
		t.Fatalf("list %+v, want %s", list, out.ID)
	}

	if err := a.Send(&ipc.ProposalDecide{ID: "prop_01KAK3J7Y0Q2V5S8WZ3C9D4E6F", Approve: true, Ref: "d0"}); err != nil {
		t.Fatal(err)
	}
	msgs = recvUntil(t, a, func(m ipc.Msg) bool { _, ok := m.(*ipc.Error); return ok })
	if e := msgs[len(msgs)-1].(*ipc.Error); e.Code != ipc.CodeBadRequest || e.Ref != "d0" {
		t.Errorf("unknown id: %+v, want bad_request with ref d0", e)
	}

	if err := a.Send(&ipc.ProposalDecide{ID: out.ID, Approve: true, Ref: "d1"}); err != nil {
		t.Fatal(err)
	}
	msgs = recvUntil(t, a, func(m ipc.Msg) bool { d, ok := m.(*ipc.ProposalDecided); return ok && d.Ref == "d1" })
	var decided []*ipc.ProposalDecided
	for _, m := range msgs {
		if d, ok := m.(*ipc.ProposalDecided); ok {
			decided = append(decided, d)
		}
	}
	if len(decided) != 2 || decided[0].Ref != "" || decided[0].Path != path || decided[1].Path != path {
		t.Fatalf("client a got %+v, want the broadcast then the answer", decided)
	}
	if d := decided[1]; d.ID != out.ID || d.Decision != hearth.DecisionApplied || d.Commit == "" || d.By != "owner" {
		t.Errorf("answer %+v, want applied by the owner with a commit", d)
	}
	msgs = recvUntil(t, b, func(m ipc.Msg) bool { _, ok := m.(*ipc.ProposalDecided); return ok })
	if d := msgs[len(msgs)-1].(*ipc.ProposalDecided); d.ID != out.ID || d.Ref != "" || d.Commit != decided[1].Commit {
		t.Errorf("client b got %+v, want the broadcast of %s", d, out.ID)
	}
	if _, err := os.Stat(filepath.Join(root, path)); err != nil {
		t.Errorf("the approved note: %v", err)
	}
}
