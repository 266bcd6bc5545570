package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/mnemo/mnemo/memory/vault"
)

// Proposed is what became of a memory_propose proposal (see
// hearth.ProposalOutcome): Decision is applied, queued or rejected.
type Proposed struct {
	ID, Decision, Why, Commit string
}

// ProposeFunc governs and carries out a proposal; ReadFunc reads a file of
// the memory root (nil when it does not exist).
type (
	ProposeFunc func(ctx context.Context, p vault.Proposal) (Proposed, error)
	ReadFunc    func(path string) ([]byte, error)
)

// memoryProposeParams is memory_propose's JSON Schema.
const memoryProposeParams = `{"type":"object","properties":{` +
	`"op":{"type":"string","enum":["create","update","edit","deprecate","delete"],"description":"create a note (default), update one (its title and text are replaced), edit one (content is appended, tags added), deprecate one (kept, marked outdated), or delete one"},` +
	`"path":{"type":"string","description":"the note's file under knowledge/, e.g. knowledge/projects/garden.md, knowledge/prefs/coffee.md, knowledge/people/ana.md"},` +
	`"title":{"type":"string","description":"the note's title (create, update)"},` +
	`"content":{"type":"string","description":"the note's text in Markdown: self-contained facts the owner said (create, update)"},` +
	`"type":{"type":"string","description":"note (default), project, preference, person…"},` +
	`"tags":{"type":"array","items":{"type":"string"}},` +
	`"confidence":{"type":"number","minimum":0,"maximum":1,"description":"how sure you are, default 0.8"},` +
	`"why":{"type":"string","description":"why this belongs in memory: what the owner said or asked, in a sentence (it becomes the commit message)"},` +
	`"turn_ids":{"type":"array","items":{"type":"string"},"description":"ids of earlier turns it comes from (memory_search shows them); the current turn is always cited"}` +
	`},"required":["path","why"]}`

// opEdit is memory_propose's patch of a note: an update with a Patch.
const opEdit = vault.Op("edit")

// defaultConfidence is a note's confidence when the model gives none.
const defaultConfidence = 0.8

// MemoryPropose is the memory_propose tool: the agent proposes a change to
// a knowledge note (Markdown with front matter under knowledge/); the
// vault's policy applies it at once, queues it for the owner's review, or
// rejects it, and the result says which and why. propose carries it out
// (it cites the current turn as a source); read gives the note an update
// is made against.
func MemoryPropose(propose ProposeFunc, read ReadFunc) Builtin {
	spec := builtinSpec("memory_propose",
		"Propose a change to the owner's knowledge notes (readable Markdown files under knowledge/) when they tell you something worth remembering for good: a project, a preference, a person. "+
			"Policy applies low-risk notes at once and queues preferences, people and sensitive topics for the owner to approve. The result says: applied, queued for the owner, or rejected and why.",
		memoryProposeParams)
	spec.Effect, spec.Idempotent = WritesLocal, false
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Op         string   `json:"op"`
			Path       string   `json:"path"`
			Title      string   `json:"title"`
			Content    string   `json:"content"`
			Type       string   `json:"type"`
			Tags       []string `json:"tags"`
			Confidence *float64 `json:"confidence"`
			Why        string   `json:"why"` // "reason" is the agent's own, taken out of every call
			TurnIDs    []string `json:"turn_ids"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		fail := func(f string, a ...any) (Result, error) {
			return Result{Text: fmt.Sprintf(f, a...), IsError: true}, nil
		}
		p := vault.Proposal{Op: vault.Op(in.Op), Path: strings.TrimSpace(in.Path), Reason: strings.TrimSpace(in.Why), Author: vault.AuthorAgent}
		if p.Op == "" {
			p.Op = vault.OpCreate
		}
		if !strings.HasPrefix(p.Path, vault.KnowledgeDir+"/") || path.Clean(p.Path) != p.Path || path.Ext(p.Path) != ".md" {
			return fail("path %q: name a .md file under knowledge/, e.g. knowledge/projects/garden.md", in.Path)
		}
		for _, id := range in.TurnIDs {
			id, _, _ = strings.Cut(strings.TrimSpace(id), "#")
			if id != "" {
				p.Sources = append(p.Sources, vault.Source{Turn: strings.ToUpper(id)})
			}
		}
		current, err := read(p.Path)
		if err != nil {
			return fail("could not read %s: %v", p.Path, err)
		}
		if current != nil {
			p.Base = vault.Hash(current)
		}
		switch p.Op {
		case vault.OpCreate, vault.OpUpdate:
			if strings.TrimSpace(in.Content) == "" || strings.TrimSpace(in.Title) == "" {
				return fail("%s needs a title and content", p.Op)
			}
			n := &vault.Note{ID: vault.NewNoteID(), Title: strings.TrimSpace(in.Title), Type: in.Type, Tags: in.Tags, Confidence: defaultConfidence}
			if in.Confidence != nil {
				n.Confidence = min(max(*in.Confidence, 0), 1)
			}
			switch {
			case p.Op == vault.OpCreate && current != nil:
				return fail("%s exists: update it (op update) or choose another path", p.Path)
			case p.Op == vault.OpUpdate && current == nil:
				return fail("%s does not exist: create it (op create)", p.Path)
			case p.Op == vault.OpUpdate:
				old, err := vault.ParseNote(p.Path, current)
				if err != nil {
					return fail("%s does not parse, so it is left to the owner: %v", p.Path, err)
				}
				n.ID, n.CreatedAt, n.Sources = old.ID, old.CreatedAt, old.Sources
				if n.Type == "" {
					n.Type = old.Type
				}
			}
			n.Body = []byte(strings.TrimSpace(in.Content) + "\n")
			p.Content = string(n.Format())
		case opEdit:
			if current == nil {
				return fail("%s does not exist: create it (op create)", p.Path)
			}
			if strings.TrimSpace(in.Content) == "" && len(in.Tags) == 0 {
				return fail("edit needs content to append or tags to add")
			}
			p.Op, p.Patch = vault.OpUpdate, &vault.Patch{BodyAppend: strings.TrimSpace(in.Content), TagsAdd: in.Tags}
		case vault.OpDeprecate, vault.OpDelete:
			if current == nil {
				return fail("%s does not exist", p.Path)
			}
		default:
			return fail("op %q: use create, update, edit, deprecate or delete", in.Op)
		}
		out, err := propose(ctx, p)
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		switch out.Decision {
		case "applied":
			return Result{Text: fmt.Sprintf("applied: %s %s (%s; commit %s)", p.Op, p.Path, out.Why, shortCommit(out.Commit))}, nil
		case "queued":
			return Result{Text: fmt.Sprintf("queued for the owner's review as %s: %s (%s)", out.ID, p.Path, out.Why)}, nil
		}
		return Result{Text: fmt.Sprintf("rejected: %s", out.Why), IsError: true}, nil
	}}
}

func shortCommit(c string) string {
	if c == "" {
		return "not committed yet"
	}
	return c[:min(len(c), 12)]
}
