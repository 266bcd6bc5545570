package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/memory/vault"
)

// memory_propose turns the model's arguments into a proposal (a whole
// note with front matter; an update keeps the note's id and names its
// base) and says what governance did with it.
func TestMemoryProposeTool(t *testing.T) {
	existing := []byte("---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Garden\ntype: project\n---\ntomatoes\n")
	files := map[string][]byte{"knowledge/projects/garden.md": existing}
	var got vault.Proposal
	b := MemoryPropose(func(_ context.Context, p vault.Proposal) (Proposed, error) {
		got = p
		switch {
		case strings.Contains(p.Path, "prefs"):
			return Proposed{ID: "prop_1", Decision: "queued", Why: "the policy reviews changes to knowledge/prefs/"}, nil
		case strings.Contains(p.Path, "nosource"):
			return Proposed{ID: "prop_2", Decision: "rejected", Why: "no sources"}, nil
		}
		return Proposed{ID: "prop_3", Decision: "applied", Why: "low risk, with sources", Commit: "0123456789abcdef"}, nil
	}, func(p string) ([]byte, error) { return files[p], nil })
	for _, tc := range []struct {
		name, args string
		wantErr    bool
		want       string
		check      func(t *testing.T, p vault.Proposal)
	}{
		{"create applies", `{"path":"knowledge/projects/lisbon.md","title":"Move","content":"The owner moves to Lisbon in May.","why":"the owner said so","turn_ids":["01kak3j7y0q2v5s8wz3c9d4e6f#2"]}`,
			false, "applied: create knowledge/projects/lisbon.md (low risk, with sources; commit 0123456789ab)", func(t *testing.T, p vault.Proposal) {
				n, err := vault.ParseNote(p.Path, []byte(p.Content))
				if err != nil || n.Title != "Move" || n.Confidence != defaultConfidence || !strings.Contains(string(n.Body), "Lisbon") {
					t.Errorf("note %+v, %v", n, err)
				}
				if p.Op != vault.OpCreate || p.Author != vault.AuthorAgent || p.Base != "" || len(p.Sources) != 1 || p.Sources[0].Turn != "01KAK3J7Y0Q2V5S8WZ3C9D4E6F" {
					t.Errorf("proposal %+v", p)
				}
			}},
		{"queued", `{"path":"knowledge/prefs/coffee.md","title":"Coffee","content":"Black, no sugar.","why":"said so"}`, false, "queued for the owner's review as prop_1", nil},
		{"rejected", `{"path":"knowledge/nosource.md","title":"X","content":"y","why":"r"}`, true, "rejected: no sources", nil},
		{"update keeps the id", `{"op":"update","path":"knowledge/projects/garden.md","title":"Garden","content":"tomatoes and basil","why":"more"}`,
			false, "applied: update", func(t *testing.T, p vault.Proposal) {
				n, err := vault.ParseNote(p.Path, []byte(p.Content))
				if err != nil || n.ID != "01KAK3J7Y0Q2V5S8WZ3C9D4E6F" || n.Type != "project" || p.Base != vault.Hash(existing) {
					t.Errorf("update %+v (note %+v, %v)", p, n, err)
				}
			}},
		{"deprecate", `{"op":"deprecate","path":"knowledge/projects/garden.md","why":"done"}`, false, "applied: deprecate", func(t *testing.T, p vault.Proposal) {
			if p.Content != "" || p.Base != vault.Hash(existing) {
				t.Errorf("deprecate %+v", p)
			}
		}},
		{"create over a note", `{"path":"knowledge/projects/garden.md","title":"G","content":"c","why":"r"}`, true, "exists", nil},
		{"update of nothing", `{"op":"update","path":"knowledge/projects/none.md","title":"G","content":"c","why":"r"}`, true, "does not exist", nil},
		{"outside knowledge", `{"path":"config/memory.policy.yml","title":"G","content":"c","why":"r"}`, true, "under knowledge/", nil},
		{"escape", `{"path":"knowledge/../AGENT.md","title":"G","content":"c","why":"r"}`, true, "under knowledge/", nil},
		{"no content", `{"path":"knowledge/a.md","title":"G","why":"r"}`, true, "needs a title and content", nil},
		{"bad op", `{"op":"rename","path":"knowledge/projects/garden.md","why":"r"}`, true, "use create, update", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = vault.Proposal{}
			res, err := b.Run(t.Context(), json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.wantErr || !strings.Contains(res.Text, tc.want) {
				t.Errorf("result %+v, want error=%v containing %q", res, tc.wantErr, tc.want)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}
