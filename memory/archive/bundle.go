package archive

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/revlist"

	"github.com/mnemo/mnemo/memory"
)

// bundleHeader opens a git bundle of format v2 (gitformat-bundle(5)).
const bundleHeader = "# v2 git bundle\n"

// Limits on what readBundleHeader accepts.
const (
	maxBundleLine = 1024
	maxBundleRefs = 10000
)

// bundleRef is one reference a bundle carries.
type bundleRef struct {
	Name plumbing.ReferenceName
	Hash plumbing.Hash
}

// writeBundle writes the history of the memory root dir to w as a git
// bundle: every branch and tag, and HEAD, with a packfile of every object
// they reach. It returns the branch HEAD names and how many refs it wrote.
func writeBundle(ctx context.Context, dir string, w io.Writer, opts Options) (head string, n int, err error) {
	repo, err := opts.openRepository(dir)
	if err != nil {
		return "", 0, err
	}
	var refs []bundleRef
	iter, err := repo.References()
	if err != nil {
		return "", 0, err
	}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && (r.Name().IsBranch() || r.Name().IsTag()) {
			refs = append(refs, bundleRef{r.Name(), r.Hash()})
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	slices.SortFunc(refs, func(a, b bundleRef) int { return strings.Compare(string(a.Name), string(b.Name)) })
	if sym, err := repo.Storer.Reference(plumbing.HEAD); err == nil && sym.Type() == plumbing.SymbolicReference {
		head = sym.Target().String()
	}
	if h, err := repo.Head(); err == nil {
		refs = append(refs, bundleRef{plumbing.HEAD, h.Hash()})
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", 0, fmt.Errorf("read HEAD: %w", err)
	}
	if len(refs) == 0 {
		return "", 0, errors.New("no commits to export")
	}
	if err := ctx.Err(); err != nil {
		return "", 0, err
	}
	var tips []plumbing.Hash
	for _, r := range refs {
		tips = append(tips, r.Hash)
	}
	objs, err := revlist.Objects(repo.Storer, tips, nil)
	if err != nil {
		return "", 0, fmt.Errorf("list objects: %w", err)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(bundleHeader)
	for _, r := range refs {
		fmt.Fprintf(bw, "%s %s\n", r.Hash, r.Name)
	}
	bw.WriteString("\n")
	if _, err := packfile.NewEncoder(bw, repo.Storer, false).Encode(objs, 10); err != nil {
		return "", 0, fmt.Errorf("pack: %w", err)
	}
	return head, len(refs), bw.Flush()
}

// readBundleHeader reads a v2 bundle's header from r, leaving r at the
// packfile. Prerequisites (a bundle of part of a history) are refused: an
// export carries all of it.
func readBundleHeader(r *bufio.Reader) ([]bundleRef, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if line+"\n" != bundleHeader {
		return nil, fmt.Errorf("not a v2 git bundle (starts %q)", trunc(line))
	}
	var refs []bundleRef
	for {
		line, err := readLine(r)
		if err != nil {
			return nil, err
		}
		if line == "" {
			break
		}
		if strings.HasPrefix(line, "-") {
			return nil, errors.New("bundle needs commits it does not carry (prerequisites)")
		}
		sha, name, ok := strings.Cut(line, " ")
		if !ok || len(sha) != 40 || !plumbing.IsHash(sha) {
			return nil, fmt.Errorf("bad ref line %q", trunc(line))
		}
		rn := plumbing.ReferenceName(name)
		if rn != plumbing.HEAD {
			if !(rn.IsBranch() || rn.IsTag()) || rn.Validate() != nil {
				return nil, fmt.Errorf("bad ref name %q", trunc(name))
			}
		}
		if len(refs) == maxBundleRefs {
			return nil, fmt.Errorf("more than %d refs", maxBundleRefs)
		}
		refs = append(refs, bundleRef{rn, plumbing.NewHash(sha)})
	}
	if len(refs) == 0 {
		return nil, errors.New("bundle carries no refs")
	}
	return refs, nil
}

// readLine reads one '\n'-terminated line of at most maxBundleLine bytes.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", fmt.Errorf("bundle header: %w", err)
		}
		if c == '\n' {
			return string(b), nil
		}
		if len(b) == maxBundleLine {
			return "", errors.New("bundle header: line too long")
		}
		b = append(b, c)
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// restoreHistory makes the bundle read from r the history of the root dir,
// which has no .git yet: a new repository, the bundle's objects, its refs,
// and HEAD naming head (the manifest's branch) or the branch the bundle's
// HEAD points at. The index is rebuilt from HEAD; no file of the worktree
// is touched.
func restoreHistory(dir string, r io.Reader) (refs []bundleRef, err error) {
	br := bufio.NewReader(r)
	refs, err = readBundleHeader(br)
	if err != nil {
		return nil, err
	}
	repo, err := memory.InitRepository(dir)
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	if err := packfile.UpdateObjectStorage(repo.Storer, br); err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	// Every object the refs reach must have arrived: a pack that parses
	// may still lack a tree or a blob.
	var tips []plumbing.Hash
	for _, ref := range refs {
		tips = append(tips, ref.Hash)
	}
	if _, err := revlist.Objects(repo.Storer, tips, nil); err != nil {
		return nil, fmt.Errorf("incomplete history: %w", err)
	}
	for _, ref := range refs {
		if ref.Name == plumbing.HEAD {
			continue
		}
		if err := repo.Storer.SetReference(plumbing.NewHashReference(ref.Name, ref.Hash)); err != nil {
			return nil, fmt.Errorf("%s: %w", ref.Name, err)
		}
	}
	return refs, nil
}

// setHead points HEAD at the branch head, or, when head is empty or not
// among refs, at the first branch whose commit the bundle's HEAD names;
// then it rebuilds the index from HEAD's tree, leaving the files alone.
func setHead(dir string, refs []bundleRef, head string) (string, error) {
	var headHash plumbing.Hash
	have := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, r := range refs {
		if r.Name == plumbing.HEAD {
			headHash = r.Hash
		} else {
			have[r.Name] = r.Hash
		}
	}
	target := plumbing.ReferenceName(head)
	if _, ok := have[target]; !ok || !target.IsBranch() {
		target = ""
		for _, r := range refs {
			if r.Name.IsBranch() && r.Hash == headHash {
				target = r.Name
				break
			}
		}
	}
	if target == "" {
		return "", errors.New("HEAD names no branch of the bundle")
	}
	repo, err := memory.OpenRepository(dir)
	if err != nil {
		return "", err
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, target)); err != nil {
		return "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	// Mixed: the index follows HEAD, the worktree is left as restored.
	if err := wt.Reset(&git.ResetOptions{Mode: git.MixedReset, Commit: have[target]}); err != nil {
		return "", fmt.Errorf("index: %w", err)
	}
	return target.String(), nil
}
