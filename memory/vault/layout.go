// Package vault is the readable, correctable part of the memory: knowledge
// notes in Markdown with YAML front matter, summaries, prompts, the memory
// policy, proposals awaiting review and the audit ledger, laid out in the
// memory root (see memory.Open) and versioned by its git repository.
//
// Every durable write goes through Apply: the file is written atomically,
// committed with a message naming its proposal and reason, and recorded in
// audit/ledger.jsonl. What the agent proposes is governed by Decide under
// the policy in config/memory.policy.yml.
package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mnemo/mnemo/memory"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600

	// Paths relative to the memory root, slash-separated.
	InvariantsFile = "invariants.md"
	PolicyFile     = "config/memory.policy.yml"
	LedgerFile     = "audit/ledger.jsonl"
	ProposalsDir   = "inbox/proposals"
	QuestionsDir   = "inbox/questions"
	KnowledgeDir   = "knowledge"
	SummariesDir   = "summaries"
	ContinuityFile = "continuity.json"
	AgentFile      = "AGENT.md"
	// ToolCatalogFile is the tool catalog hearth generates from its
	// registry: readable and searchable, but never injected as something
	// the companion knows (the model has the tools' definitions already).
	ToolCatalogFile = "knowledge/system/tool_catalog.md"
)

// layoutDirs are the vault's directories, created when missing.
var layoutDirs = []string{
	"config",
	"prompts",
	"summaries/threads", "summaries/daily", "summaries/weekly",
	"knowledge/people", "knowledge/projects", "knowledge/prefs", "knowledge/system",
	ProposalsDir, QuestionsDir,
	"artifacts",
	"audit",
}

// Ensure lays the vault out in the memory root dir, which must exist: it
// creates every missing directory of the layout (0700), copies every file
// of defaults the root lacks (0600) and creates an empty ledger. It never
// overwrites or changes the mode of what exists, so an existing root is
// upgraded in place and what the owner edited stays theirs. defaults may be
// nil (data.Vault is the shipped set).
//
// It returns the files it created, slash-separated and relative to dir, for
// the caller to commit; it commits nothing itself.
func Ensure(ctx context.Context, dir string, defaults fs.FS, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("vault %s: %w", dir, err)
	}
	defer root.Close()
	for _, d := range layoutDirs {
		if err := root.MkdirAll(filepath.FromSlash(d), dirPerm); err != nil {
			return nil, fmt.Errorf("vault %s: %w", dir, err)
		}
	}
	var created []string
	if defaults != nil {
		created, err = memory.CopyDefaults(ctx, root, defaults, log.With("in", "vault"))
		if err != nil {
			return created, fmt.Errorf("vault %s: copy defaults: %w", dir, err)
		}
	}
	ok, err := memory.CreateNew(root, filepath.FromSlash(LedgerFile), nil)
	if err != nil {
		return created, fmt.Errorf("vault %s: %w", dir, err)
	}
	if ok {
		created = append(created, LedgerFile)
	}
	return created, nil
}

// Open lays the vault out in the memory root dir (Ensure) and commits what
// it created, as author "job:layout" with one ledger line per file, so that
// git holds the layout from the start. A failed commit is returned as a
// *CommitError with the Vault: the files are written, and the next commit
// of those paths takes them in. Its caller holds the root's lock: a git
// index lock a killed hearth left is removed (one of git's stays).
func Open(ctx context.Context, dir string, defaults fs.FS, log *slog.Logger) (*Vault, error) {
	v := New(dir, log)
	if err := clearStaleIndexLock(dir, log); err != nil {
		return nil, err
	}
	created, err := Ensure(ctx, dir, defaults, log)
	if err != nil {
		return nil, err
	}
	if len(created) == 0 {
		return v, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	const author, reason = "job:layout", "lay out the vault: the defaults the memory root lacked"
	msg := "vault: lay out the memory root\n\n" + reason + "\n\nAuthor: " + author + "\n"
	now := v.now().UTC()
	entries := make([]Entry, 0, len(created))
	for _, p := range created {
		b, err := v.Read(p)
		if err != nil {
			return nil, err
		}
		entries = append(entries, Entry{TS: now, Op: OpCreate, Path: p, Author: author, Reason: reason, After: Hash(b)})
	}
	pend := &pending{Paths: created, Message: msg, Author: author, Entries: entries}
	if err := savePending(dir, pend); err != nil {
		return nil, err
	}
	_, cerr := v.settle(ctx, pend, msg)
	var ce *CommitError
	if cerr != nil && !errors.As(cerr, &ce) {
		return nil, cerr
	}
	return v, cerr
}
