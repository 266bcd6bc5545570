package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mnemo/mnemo/memory/vault"
)

// The vault's reads as agent tools (memory_read, memory_list,
// memory_history); its writes are memory_propose. Each takes the core's
// operation as a function, so that the agent, the protocol and the CLI
// reach one implementation.
type (
	// VaultReadFunc reads a file of the memory root, now (at "") or at
	// a version, with the commit it was read at.
	VaultReadFunc func(ctx context.Context, path, at string) ([]byte, string, error)
	// VaultListFunc lists the notes a filter selects.
	VaultListFunc func(ctx context.Context, f vault.ListFilter) ([]vault.NoteInfo, error)
	// VaultHistoryFunc lists the changes to a file, newest first.
	VaultHistoryFunc func(ctx context.Context, path string, limit int) ([]vault.Change, error)
)

const (
	// maxReadText bounds a file memory_read returns.
	maxReadText = 16 << 10
	// maxListed bounds the notes memory_list returns.
	maxListed = 200
	// defaultChanges and maxChanges bound memory_history.
	defaultChanges, maxChanges = 20, 100
)

// MemoryRead is the memory_read tool: a knowledge note (or any file of the
// vault) as it is, or at a version memory_history names.
func MemoryRead(read VaultReadFunc) Builtin {
	spec := builtinSpec("memory_read",
		"Read one of the owner's knowledge notes (a Markdown file with front matter, e.g. knowledge/prefs/coffee.md), as it is now or at an earlier version (a commit memory_history shows). "+
			"Use memory_list to find notes. Read a note before you propose an update of it.",
		`{"type":"object","properties":{`+
			`"path":{"type":"string","description":"the file, relative to the memory root, e.g. knowledge/people/ana.md"},`+
			`"version":{"type":"string","description":"a commit from memory_history; omit for the note as it is now"}`+
			`},"required":["path"]}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Path    string `json:"path"`
			Version string `json:"version"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		b, commit, err := read(ctx, strings.TrimSpace(in.Path), strings.TrimSpace(in.Version))
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		head := in.Path + " as it is now"
		if commit != "" {
			head = fmt.Sprintf("%s at version %s", in.Path, shortCommit(commit))
		}
		text := string(b)
		if len(text) > maxReadText {
			text = cut(text, maxReadText) + "\n[cut: the file is longer]"
		}
		return Result{Text: head + ":\n" + text}, nil
	}}
}

// MemoryList is the memory_list tool: the owner's notes, filtered.
func MemoryList(list VaultListFunc) Builtin {
	spec := builtinSpec("memory_list",
		"List the owner's knowledge notes: one line each with path, type, status, title and tags. "+
			"Filter by type (project, preference, person…), status (active, superseded, contradicted, deprecated, draft), tag, or a path prefix such as knowledge/people/.",
		`{"type":"object","properties":{`+
			`"type":{"type":"string"},"status":{"type":"string","enum":["active","superseded","contradicted","deprecated","draft"]},`+
			`"tag":{"type":"string"},"prefix":{"type":"string","description":"a path prefix, default knowledge/"}`+
			`}}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Type, Status, Tag, Prefix string
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		notes, err := list(ctx, vault.ListFilter{Type: in.Type, Status: vault.Status(in.Status), Tag: in.Tag, Prefix: strings.TrimSpace(in.Prefix)})
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		if len(notes) == 0 {
			return Result{Text: "no notes match"}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d notes:\n", len(notes))
		for i, n := range notes {
			if i == maxListed {
				fmt.Fprintf(&b, "[%d more: narrow the filter]\n", len(notes)-i)
				break
			}
			if n.Err != "" {
				fmt.Fprintf(&b, "- %s (does not parse; the owner's to fix)\n", n.Path)
				continue
			}
			fmt.Fprintf(&b, "- %s type=%s status=%s: %s", n.Path, n.Type, n.Status, oneLine(n.Title, maxHitField))
			if len(n.Tags) > 0 {
				fmt.Fprintf(&b, " tags=%s", strings.Join(n.Tags, ","))
			}
			b.WriteByte('\n')
		}
		return Result{Text: b.String()}, nil
	}}
}

// MemoryHistory is the memory_history tool: who changed a note, when,
// how and why, newest first, with the versions memory_read reads.
func MemoryHistory(history VaultHistoryFunc) Builtin {
	spec := builtinSpec("memory_history",
		"The history of one of the owner's notes, newest first: each change's version (a commit), time, author (agent, owner, curator…), operation and reason. "+
			"Read an earlier version with memory_read and its version.",
		`{"type":"object","properties":{`+
			`"path":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100,"description":"default 20"}`+
			`},"required":["path"]}`)
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		var in struct {
			Path  string `json:"path"`
			Limit int    `json:"limit"`
		}
		if err := decodeArgs(args, &in); err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		limit := in.Limit
		if limit <= 0 {
			limit = defaultChanges
		}
		cs, err := history(ctx, strings.TrimSpace(in.Path), min(limit, maxChanges))
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		if len(cs) == 0 {
			return Result{Text: "no changes to " + in.Path}, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d changes to %s, newest first:\n", len(cs), in.Path)
		for _, c := range cs {
			v := "uncommitted"
			if c.Commit != "" {
				v = shortCommit(c.Commit)
			}
			op, why := c.Subject, ""
			if len(c.Ledger) > 0 {
				op, why = string(c.Ledger[0].Op), c.Ledger[0].Reason
			}
			fmt.Fprintf(&b, "- version=%s [%s] by %s: %s", v, c.When.UTC().Format(time.RFC3339), c.Author, op)
			if why != "" {
				fmt.Fprintf(&b, ": %s", oneLine(why, maxHitText))
			}
			b.WriteByte('\n')
		}
		return Result{Text: b.String()}, nil
	}}
}

// VaultExportFunc writes an export of the memory root under its
// artifacts/exports/ and says where and how big.
type VaultExportFunc func(ctx context.Context) (path string, size int64, err error)

// MemoryExport is the memory_export tool: the owner's whole memory as one
// archive under the memory root's artifacts/exports/ (files, git history,
// a README; readable with tar and git).
func MemoryExport(export VaultExportFunc) Builtin {
	spec := builtinSpec("memory_export",
		"Export the owner's whole memory (conversation, notes, their git history) to one .tar.gz under the memory root's artifacts/exports/, readable with tar and git and restorable with `mnemo import`. "+
			"Use it when the owner asks for a backup or an export. Returns the archive's path and size.",
		`{"type":"object","properties":{}}`)
	spec.Effect, spec.Idempotent = WritesLocal, false
	return Builtin{Spec: spec, Run: func(ctx context.Context, args json.RawMessage) (Result, error) {
		path, size, err := export(ctx)
		if err != nil {
			return Result{Text: err.Error(), IsError: true}, nil
		}
		return Result{Text: fmt.Sprintf("exported to %s (%d bytes)", path, size)}, nil
	}}
}
