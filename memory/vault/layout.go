// Package vault is the readable, correctable part of the memory: knowledge
// notes in Markdown with YAML front matter, summaries, prompts, the memory
// policy, proposals awaiting review and the audit ledger, laid out in the
// memory root (see memory.Open) and versioned by its git repository.
//
// Every durable write goes through Apply: the file is written atomically,
// committed with a message naming its proposal and reason, and recorded in
// audit/ledger/. What the agent proposes is governed by Decide under
// the policy in config/memory.policy.yml.
package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/mnemo/mnemo/memory"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600

	// Paths relative to the memory root, slash-separated.
	InvariantsFile = "invariants.md"
	PolicyFile     = "config/memory.policy.yml"
	// LedgerDir holds the ledger, a file a month (ledger.go);
	// LegacyLedgerFile is the ledger from before the split, read first.
	LedgerDir        = "audit/ledger"
	LegacyLedgerFile = "audit/ledger.jsonl"
	ProposalsDir     = "inbox/proposals"
	QuestionsDir     = "inbox/questions"
	KnowledgeDir     = "knowledge"
	SummariesDir     = "summaries"
	ContinuityFile   = "continuity.json"
	AgentFile        = "AGENT.md"
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
	// A start killed after Ensure created files and before their commit
	// was saved as pending left them on disk and out of git, and Ensure
	// now finds them: the layout's files that HEAD lacks and that are as
	// Ensure writes them are committed with what it created.
	left, err := uncommittedLayout(dir, defaults)
	if err != nil {
		return nil, err
	}
	for _, p := range left {
		if !slices.Contains(created, p) {
			created = append(created, p)
		}
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

// uncommittedLayout returns the files of the layout in the memory root dir
// that HEAD's tree lacks although they are on disk as Ensure writes them:
// a default with the default's bytes (the ledger's files are taken in by
// every commit that follows their change).
// A file the owner wrote at a default's path is theirs, for the owner-edit
// check.
func uncommittedLayout(dir string, defaults fs.FS) ([]string, error) {
	repo, err := openRepository(dir, nil)
	if err != nil {
		return nil, fmt.Errorf("vault %s: %w", dir, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("vault %s: read HEAD: %w", dir, err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil, fmt.Errorf("vault %s: read HEAD: %w", dir, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("vault %s: read HEAD: %w", dir, err)
	}
	inHead := func(p string) (bool, error) {
		_, err := tree.FindEntry(p)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
			return false, nil
		}
		return false, fmt.Errorf("vault %s: read HEAD: %w", dir, err)
	}
	onDisk := func(p string) ([]byte, bool) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if st, err := os.Lstat(full); err != nil || !st.Mode().IsRegular() {
			return nil, false
		}
		b, err := os.ReadFile(full)
		return b, err == nil
	}
	var left []string
	if defaults != nil {
		err = fs.WalkDir(defaults, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			in, err := inHead(p)
			if err != nil || in {
				return err
			}
			want, err := fs.ReadFile(defaults, p)
			if err != nil {
				return err
			}
			if got, ok := onDisk(p); ok && bytes.Equal(got, want) {
				left = append(left, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("vault %s: %w", dir, err)
		}
	}
	return left, nil
}
