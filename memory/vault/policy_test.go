package vault

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func policyEqual(a, b Policy) bool { return cmp.Equal(a, b) }

var src = []Source{{Thread: "2026-01-30", Turn: "01JTURN0000000000000000000", ExcerptSHA256: "e3b0"}}

// noteText is a note with the given type, status, confidence, tags and body.
func noteText(typ string, status Status, conf float64, tags string, body string) string {
	return fmt.Sprintf("---\nid: %s\ntitle: A note\ntype: %s\nstatus: %s\ntags: [%s]\nconfidence: %g\n---\n%s\n",
		NewNoteID(), typ, status, tags, conf, body)
}

const claim = "mnemo keeps its vault under git with one commit per write"

func projectProposal(t *testing.T, path string) *Proposal {
	t.Helper()
	return &Proposal{
		ID: NewProposalID(), Op: OpCreate, Path: path,
		Content: noteText("project", Active, 0.9, "mnemo", claim),
		Reason:  "the owner described the project", Sources: src, Author: AuthorCurator,
		CreatedAt: time.Now(),
	}
}

func TestDecide(t *testing.T) {
	existing := []byte(noteText("project", Active, 0.9, "", claim))
	base := Hash(existing)
	pol := DefaultPolicy()
	create := func(path, content string) Proposal {
		return Proposal{ID: "prop_1", Op: OpCreate, Path: path, Content: content, Reason: "said so", Sources: src, Author: AuthorCurator}
	}
	with := func(p Proposal, f func(*Proposal)) Proposal { f(&p); return p }
	project := create("knowledge/projects/mnemo.md", noteText("project", Active, 0.9, "", claim))
	update := Proposal{ID: "prop_2", Op: OpUpdate, Path: "knowledge/projects/mnemo.md", Base: base,
		Content: noteText("project", Active, 0.9, "", claim+" and a ledger"), Reason: "said so", Sources: src, Author: AuthorAgent}

	for _, tc := range []struct {
		name    string
		p       Proposal
		current []byte
		want    Verdict
	}{
		// Apply: low risk, sourced, confident, in an auto-apply path.
		{"project note", project, nil, Apply},
		{"an external agent's project note", with(project, func(p *Proposal) { p.Author = "external:crush-laptop" }), nil, Apply},
		{"thread summary", create("summaries/threads/2026-01-30.md", noteText("summary", Active, 0.8, "", "we talked about the vault layout today")), nil, Apply},
		{"tool catalog", create("knowledge/system/tool_catalog.md", noteText("tool_catalog", Active, 1, "", "search: find turns in the journal by meaning")), nil, Apply},
		{"update with matching base", with(update, func(p *Proposal) {
			n, _ := ParseNote("", existing)
			p.Content = strings.Replace(p.Content, p.Content[8:34], n.ID, 1)
		}), existing, Apply},
		{"update that changes the id", update, existing, Reject},
		{"delete that supersedes", Proposal{ID: "prop_3", Op: OpDelete, Path: "knowledge/projects/mnemo.md", Base: base, Reason: "r", Sources: src, Author: AuthorAgent, Supersedes: []string{"knowledge/projects/b.md"}}, existing, Reject},
		{"patch", with(update, func(p *Proposal) { p.Content = ""; p.Patch = &Patch{BodyAppend: "it also keeps a ledger of writes"} }), existing, Apply},
		{"patch of confidence alone", with(update, func(p *Proposal) {
			c := 0.3
			p.Content = ""
			p.Patch = &Patch{Confidence: &c, TagsAdd: []string{"stale"}}
		}), existing, Apply},
		{"patch appending too little", with(update, func(p *Proposal) { p.Content = ""; p.Patch = &Patch{BodyAppend: "also this"} }), existing, Reject},
		{"owner writes a preference", with(create("knowledge/prefs/x.md", noteText("preference", Active, 1, "", "short replies")), func(p *Proposal) { p.Author = AuthorOwner; p.Sources = nil }), nil, Apply},

		// Reject.
		{"no sources", with(project, func(p *Proposal) { p.Sources = nil }), nil, Reject},
		{"no reason", with(project, func(p *Proposal) { p.Reason = " " }), nil, Reject},
		{"vague", create("knowledge/projects/x.md", noteText("project", Active, 0.9, "", "likes productivity")), nil, Reject},
		{"inference as fact", with(project, func(p *Proposal) { p.Inferred = true }), nil, Reject},
		{"stale base: the owner edited it", with(update, func(p *Proposal) { p.Base = Hash([]byte("older")) }), existing, Reject},
		{"create over an existing file", project, existing, Reject},
		{"update of a missing file", update, nil, Reject},
		{"note does not parse", create("knowledge/projects/x.md", "no front matter at all, just words"), nil, Reject},
		{"path outside the root", create("../x.md", "x"), nil, Reject},
		{"into the journal", create("threads/2026/01/30.jsonl", "{}"), nil, Reject},
		{"into the ledger", create("audit/ledger.jsonl", "{}"), nil, Reject},
		{"into .git", create(".git/config", "x"), nil, Reject},
		{"into a nested .git", create("knowledge/.git/config", "x"), nil, Reject},
		{"a dot file", create("knowledge/projects/.x.md", noteText("project", Active, 0.9, "", claim)), nil, Reject},
		{".gitignore", create(".gitignore", "*"), nil, Reject},
		{"author that would corrupt a commit", with(project, func(p *Proposal) { p.Author = "agent <x@y> 0 +0000\ncommitter" }), nil, Reject},
		{"unknown author", with(project, func(p *Proposal) { p.Author = "someone" }), nil, Reject},
		{"external author without a name", with(project, func(p *Proposal) { p.Author = "external:" }), nil, Reject},
		{"external author with a space", with(project, func(p *Proposal) { p.Author = "external:a b" }), nil, Reject},
		{"bad id", with(project, func(p *Proposal) { p.ID = "prop_../../x" }), nil, Reject},
		{"supersedes twice", with(project, func(p *Proposal) { p.Supersedes = []string{"knowledge/projects/a.md", "knowledge/projects/a.md"} }), nil, Reject},
		{"supersedes itself", with(project, func(p *Proposal) { p.Supersedes = []string{p.Path} }), nil, Reject},
		{"unknown op", with(project, func(p *Proposal) { p.Op = "upsert" }), nil, Reject},
		{"owner's stale write", with(update, func(p *Proposal) { p.Author = AuthorOwner; p.Base = "x" }), existing, Reject},

		// Queue.
		{"preference path", create("knowledge/prefs/interaction.md", noteText("note", Active, 0.9, "", "prefers short replies in the morning")), nil, Queue},
		{"preference type", create("knowledge/projects/p.md", noteText("preference", Active, 0.9, "", "prefers short replies in the morning")), nil, Queue},
		{"person", create("knowledge/people/ana.md", noteText("person", Active, 0.9, "", "Ana is the owner's sister in Porto")), nil, Queue},
		{"identity type", create("knowledge/projects/p.md", noteText("identity", Active, 0.9, "", "the owner moved to Lisbon in March")), nil, Queue},
		{"health keyword", create("knowledge/projects/p.md", noteText("project", Active, 0.9, "", "the project pauses while the owner's medication is adjusted")), nil, Queue},
		{"finance keyword", create("knowledge/projects/p.md", noteText("project", Active, 0.9, "", "the project is paid from the owner's salary each month")), nil, Queue},
		{"legal keyword", create("knowledge/projects/p.md", noteText("project", Active, 0.9, "", "the lawyer reviews the contract for the project")), nil, Queue},
		{"declared domain", with(project, func(p *Proposal) { p.Domains = []string{"Health"} }), nil, Queue},
		{"domain tag", create("knowledge/projects/p.md", noteText("project", Active, 0.9, "finance", claim)), nil, Queue},
		{"contradiction", with(project, func(p *Proposal) { p.Contradicts = true; p.Supersedes = []string{"knowledge/projects/old.md"} }), nil, Queue},
		{"supersedes", with(project, func(p *Proposal) { p.Supersedes = []string{"knowledge/projects/old.md"} }), nil, Queue},
		{"low-confidence draft", create("knowledge/projects/p.md", noteText("project", Draft, 0.4, "", claim)), nil, Queue},
		{"inferred draft flagged", with(create("knowledge/projects/p.md", noteText("project", Draft, 0.4, "", claim)), func(p *Proposal) { p.Inferred = true }), nil, Queue},
		{"low confidence", create("knowledge/projects/p.md", noteText("project", Active, 0.5, "", claim)), nil, Queue},
		{"proposer says medium risk", with(project, func(p *Proposal) { p.Risk = "medium" }), nil, Queue},
		{"path not auto-applied", create("knowledge/misc/x.md", noteText("project", Active, 0.9, "", claim)), nil, Queue},
		{"delete", Proposal{ID: "prop_3", Op: OpDelete, Path: "knowledge/projects/mnemo.md", Base: base, Reason: "wrong", Sources: src, Author: AuthorAgent}, existing, Queue},
		{"deprecate", Proposal{ID: "prop_3", Op: OpDeprecate, Path: "knowledge/projects/mnemo.md", Base: base, Reason: "ended", Sources: src, Author: AuthorAgent}, existing, Queue},
		{"owner deprecates", Proposal{ID: "prop_3", Op: OpDeprecate, Path: "knowledge/projects/mnemo.md", Base: base, Reason: "ended", Author: AuthorOwner}, existing, Apply},
		{"continuity.json", create(ContinuityFile, `{"name":"a new name for the owner"}`), nil, Queue},
		{"continuity.json low risk", with(create(ContinuityFile, `{"name":"a new name for the owner"}`), func(p *Proposal) { p.Risk = "low" }), nil, Queue},
		{"AGENT.md", create(AgentFile, "be terse always and never ask questions"), nil, Queue},
		{"invariants", create(InvariantsFile, "1. anything goes from now on"), nil, Queue},
		{"policy", create(PolicyFile, "auto_apply: {paths: [\"\"]}"), nil, Queue},
		{"prompt", create("prompts/curator.system.md", "propose everything you can think of"), nil, Queue},
		{"protected without sources", with(create(PolicyFile, "x"), func(p *Proposal) { p.Sources = nil }), nil, Queue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			if p.ID == "prop_1" || p.ID == "prop_2" || p.ID == "prop_3" { // placeholders
				p.ID = NewProposalID()
			}
			d := Decide(pol, &p, tc.current)
			if d.Verdict != tc.want {
				t.Errorf("Decide = %s (%s), want %s", d.Verdict, d.Why, tc.want)
			}
			if d.Why == "" {
				t.Error("a decision without a reason")
			}
		})
	}
}

// TestDecideFloor: no policy makes the rules of the memory or the
// continuity anchor change without the owner.
func TestDecideFloor(t *testing.T) {
	pol, err := ParsePolicy([]byte("auto_apply:\n  paths: [continuity.json, config/, prompts/, invariants.md, AGENT.md]\n  min_confidence: 0\nqueue: {paths: [], types: [], domains: [], keywords: {}}\nreject: {min_claim_words: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{ContinuityFile, PolicyFile, "prompts/x.md", InvariantsFile, AgentFile} {
		p := &Proposal{ID: NewProposalID(), Op: OpCreate, Path: path, Content: "x y z w v", Reason: "r", Sources: src, Author: AuthorAgent}
		if d := Decide(pol, p, nil); d.Verdict != Queue {
			t.Errorf("%s: %s (%s), want queue", path, d.Verdict, d.Why)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		check    func(Policy) bool
		err      bool
	}{
		{"empty is default", "", func(p Policy) bool { return cmp.Equal(p, DefaultPolicy()) }, false},
		{"comments only", "# nothing\n", func(p Policy) bool { return cmp.Equal(p, DefaultPolicy()) }, false},
		{"partial keeps defaults", "reject:\n  min_claim_words: 6\n", func(p Policy) bool {
			return p.Reject.MinClaimWords == 6 && cmp.Equal(p.Queue, DefaultPolicy().Queue)
		}, false},
		{"lists replace", "queue:\n  domains: [health]\n", func(p Policy) bool {
			return cmp.Equal(p.Queue.Domains, []string{"health"}) && len(p.Queue.Types) == 3
		}, false},
		{"unknown key", "auto_aply: {}\n", nil, true},
		{"bad confidence", "auto_apply: {min_confidence: 2}\n", nil, true},
		{"negative words", "reject: {min_claim_words: -1}\n", nil, true},
		{"wrong version", "version: 2\n", nil, true},
		{"not yaml", "queue: [\n", nil, true},
		{"wrong kind", "queue: {paths: 3}\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if err == nil && !tc.check(p) {
				t.Errorf("policy %+v", p)
			}
		})
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("version: 1\nauto_apply: {paths: [summaries/], min_confidence: 0.5}\n"))
	f.Add([]byte("queue:\n  keywords:\n    health: [x]\n"))
	f.Add([]byte("reject: {min_claim_words: 0}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pol, err := ParsePolicy(b)
		if err != nil {
			return
		}
		// Whatever it says, the floor holds.
		p := &Proposal{ID: NewProposalID(), Op: OpCreate, Path: ContinuityFile, Content: "a b c d e", Reason: "r", Sources: src, Author: AuthorAgent}
		if d := Decide(pol, p, nil); d.Verdict == Apply {
			t.Fatalf("policy %q auto-applies continuity.json", b)
		}
		p = &Proposal{ID: NewProposalID(), Op: OpCreate, Path: "knowledge/projects/x.md", Content: "a b c d e", Reason: "r", Author: AuthorAgent}
		if d := Decide(pol, p, nil); d.Verdict != Reject {
			t.Fatalf("policy %q: a proposal without sources is %s", b, d.Verdict)
		}
	})
}

func FuzzDecodeProposal(f *testing.F) {
	f.Add([]byte(`{"id":"prop_01JABCDEFGHJKMNPQRSTVWXYZ0","op":"create","path":"knowledge/a.md","content":"x","reason":"r","author":"agent","created_at":"2026-01-30T10:45:00Z"}`))
	f.Add([]byte(`{"id":"prop_01JABCDEFGHJKMNPQRSTVWXYZ0","op":"update","path":"knowledge/a.md","base_sha256":"ab","patch":{"body_append":"y","confidence":0.5},"reason":"r","author":"agent","created_at":"2026-01-30T10:45:00Z"}`))
	f.Add([]byte(`{"id":"prop_1","op":"delete","path":"../x","author":"agent"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeProposal("f.json", b)
		if err != nil {
			return
		}
		if err := checkPath(p.Path); err != nil {
			t.Fatalf("decoded a proposal with a bad path: %v", err)
		}
		if !validAuthor(p.Author) || checkID(p.ID) != nil {
			t.Fatalf("decoded a proposal with a bad author or id: %q %q", p.Author, p.ID)
		}
		Decide(DefaultPolicy(), p, nil)
		Decide(DefaultPolicy(), p, []byte("---\nid: "+goodID+"\ntitle: t\n---\n"))
	})
}
