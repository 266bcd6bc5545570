package archive

import (
	"fmt"
	"strings"
)

// known describes the files and folders mnemo keeps at the top of a
// memory root.
var known = map[string]string{
	"AGENT.md":         "the companion's instructions, in Markdown; yours to edit",
	"continuity.json":  "the continuity anchor: who you are and what matters, given to every session",
	"preferences.json": "your preferences: provider, model, context budget",
	"invariants.md":    "rules the memory keeps whatever is proposed",
	".gitignore":       "what git leaves out: index/ (derived) and hearth.lock",
	"threads":          "the conversation: one JSONL file per UTC day (threads/YYYY-MM-DD.jsonl), one record per line, append-only",
	"knowledge":        "what the companion knows about you: Markdown notes with YAML front matter (see knowledge/README.md)",
	"summaries":        "summaries of threads, days and weeks, in Markdown",
	"inbox":            "proposed changes to the memory waiting for your decision (inbox/proposals/*.json) and open questions",
	"audit":            "audit/ledger/YYYY-MM.jsonl (and audit/ledger.jsonl from before): one JSON line per change to the memory, with who, why and from what",
	"config":           "configuration, such as config/memory.policy.yml (what the companion may change on its own)",
	"prompts":          "the prompts of background jobs, in Markdown",
	"artifacts":        "files the companion made or kept",
	"tools":            "manifests of tools (tools/*.tool.json)",
}

// readme writes README.md: what the archive holds, each top-level file
// and folder of the root, and how to restore by hand.
func readme(items []item, head string) []byte {
	var b strings.Builder
	b.WriteString(`# mnemo memory export

This archive is a copy of a mnemo memory root, in open formats: nothing
in it needs mnemo to be read.

- ` + "`root/`" + ` — every file of the memory root as it was (but git's own
  .git/, the derived index/, and hearth.lock).
- ` + "`history.bundle`" + ` — the root's git history, a git bundle:
  ` + "`git clone history.bundle`" + ` or ` + "`git bundle list-heads history.bundle`" + `.
- ` + "`manifest.json`" + ` — every file of root/ with its size and SHA-256,
  and the branch HEAD names.

## What is in root/

`)
	for _, it := range items {
		if strings.Contains(it.rel, "/") {
			continue
		}
		name := it.rel
		if it.dir {
			name += "/"
		}
		desc := known[it.rel]
		if desc == "" {
			desc = "not a file mnemo makes: kept as it was"
		}
		fmt.Fprintf(&b, "- `%s` — %s\n", name, desc)
	}
	if head == "" {
		head = "refs/heads/master"
	}
	fmt.Fprintf(&b, `
## Restore

With mnemo: `+"`mnemo import [--root DIR] THIS-FILE`"+` (into a new, empty root).

By hand, with tar and git:

`+"```sh"+`
mkdir restore && cd restore
tar xzf /path/to/THIS-FILE             # README.md, root/, history.bundle, manifest.json
git -C root init -q
git -C root fetch -q --update-head-ok ../history.bundle 'refs/heads/*:refs/heads/*' 'refs/tags/*:refs/tags/*'
git -C root symbolic-ref HEAD %s
git -C root reset -q                   # the index from HEAD; the files stay as they are
chmod -R go-rwx root
mv root ~/.local/share/mnemo           # or wherever hearth's -root points
`+"```"+`
`, head)
	return []byte(b.String())
}
