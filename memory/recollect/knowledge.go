package recollect

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/recall"
	"github.com/mnemo/mnemo/memory/recall/indexer"
	"github.com/mnemo/mnemo/memory/vault"
)

// KnowledgeSeenFile, in <root>/index, records the notes recall holds: for
// each note's path, its id, the SHA-256 of its file and how many documents
// it made. At start every note is hashed and only those whose hash changed
// are embedded again; a note whose file is gone leaves the index. The
// file is tied to the index by an epoch kept in the index's meta: an index
// reset (a new embedder, `hearth reindex`, a rebuilt corrupt index) drops
// the epoch, and every note is indexed again.
const KnowledgeSeenFile = "knowledge-seen.json"

// knowledgeSeenLog, beside KnowledgeSeenFile, holds what changed since the
// file was last written whole: one JSON line per note indexed again or
// dropped, tagged with the file's generation. A write to the vault appends
// a line rather than rewriting a record of 10,000 notes (1.3 MB, ~15 ms);
// when the lines pass an eighth of the notes, the file is written whole
// under a new generation and the log removed. Lines of another generation
// (a crash between the two) and a torn line are ignored: the record is a
// cache of what the index holds, and a note it misremembers is indexed
// again when its hash is next compared.
const knowledgeSeenLog = "knowledge-seen.log"

// minSeenLog is how many lines the log may always hold before it is
// folded into KnowledgeSeenFile.
const minSeenLog = 256

// metaKnowledgeEpoch is the index meta key of the epoch KnowledgeSeenFile
// must carry to describe the index.
const metaKnowledgeEpoch = "knowledge_epoch"

// knowledgeVersion is KnowledgeSeenFile's format.
const knowledgeVersion = 1

// maxNoteDocs bounds the documents one note makes.
const maxNoteDocs = 256

// knowledgeBatch is how many documents are embedded and stored at once.
const knowledgeBatch = 128

// noteDirs are the folders of the root whose notes recall indexes.
var noteDirs = []string{vault.KnowledgeDir, vault.SummariesDir}

type knowledgeState struct {
	Version int                 `json:"version"`
	Epoch   string              `json:"epoch"`
	Gen     string              `json:"gen,omitempty"` // knowledgeSeenLog's lines of this file
	Notes   map[string]seenNote `json:"notes"`
}

// seenLine is a line of knowledgeSeenLog: the note at Path as seen now
// (an empty ID: dropped).
type seenLine struct {
	Gen  string `json:"gen"`
	Path string `json:"path"`
	seenNote
}

type seenNote struct {
	ID     string `json:"id"`
	SHA256 string `json:"sha256"`
	Docs   int    `json:"docs"`
}

// knowledge keeps the index in step with the vault's notes. Its methods
// are serialised.
type knowledge struct {
	mu     sync.Mutex
	root   string
	state  *knowledgeState // nil until loaded
	byID   map[string]string
	dirty  bool
	system *system
	// changed are the notes seen anew since the last save (a removed
	// one as a zero seenNote); whole asks save to write the file whole.
	changed map[string]seenNote
	whole   bool
	logged  int // lines in knowledgeSeenLog
}

// isNoteFile reports whether p (slash-separated, relative to the root) is
// a note recall indexes: a Markdown file under knowledge/ or summaries/,
// other than a folder's README.md.
func isNoteFile(p string) bool {
	if !fs.ValidPath(p) || !strings.HasSuffix(p, ".md") || path.Base(p) == "README.md" {
		return false
	}
	for _, d := range noteDirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// noteDocID is the id of a note's n-th document.
func noteDocID(noteID string, n int) string { return fmt.Sprintf("note:%s#%d", noteID, n) }

// noteDocs are the documents a note becomes: one per non-empty section of
// its body (a long one cut in pieces, each opening with the section's
// heading line), kind knowledge, with the note's status as role, its path
// as channel and its confidence as salience, said when it was last
// updated (or created; else modified, the file's time). The note's title
// and tags are retrieval context.
func noteDocs(p string, n *vault.Note, modified time.Time) []recall.Doc {
	status := string(n.Status)
	if status == "" {
		status = memory.StatusActive
	}
	ts := n.UpdatedAt
	if ts.IsZero() {
		ts = n.CreatedAt
	}
	if ts.IsZero() {
		ts = modified
	}
	base := recall.Doc{Kind: recall.KindKnowledge, Role: status, Mode: memory.ModeText, Channel: p, TS: ts,
		Salience: float32(min(max(n.Confidence, 0), 1)),
		Context:  strings.TrimSpace(n.Title + " " + strings.Join(n.Tags, " "))}
	var docs []recall.Doc
	body := strings.ToValidUTF8(string(n.Body), "\uFFFD")
	for _, s := range noteSections(body) {
		text := strings.TrimSpace(s.Text)
		if text == "" {
			continue
		}
		head := ""
		if first, rest, _ := strings.Cut(text, "\n"); isHeading(first) {
			if strings.TrimSpace(rest) == "" {
				continue // a heading with nothing under it
			}
			head = first
		}
		for i, piece := range pieces(text, indexer.ChunkBytes) {
			if i > 0 && head != "" {
				piece = head + "\n" + piece
			}
			if len(docs) == maxNoteDocs {
				return docs
			}
			d := base
			d.ID, d.Text = noteDocID(n.ID, len(docs)), piece
			docs = append(docs, d)
		}
	}
	return docs
}

// pieces cuts s into pieces of at most n bytes on rune boundaries,
// preferring line breaks.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if i := strings.LastIndexByte(s[:cut], '\n'); i > n/2 {
			cut = i + 1
		}
		out = append(out, strings.TrimSpace(s[:cut]))
		s = strings.TrimSpace(s[cut:])
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func isHeading(line string) bool {
	_, ok := heading(line)
	return ok
}

// noteConfidence is a knowledge document's confidence as its note gives
// it: the salience it is stored as is a float32, rounded back to the
// thousandths a note's confidence is written in (0.7, not 0.699999988).
func noteConfidence(d recall.Doc) float64 {
	return math.Round(float64(d.Salience)*1000) / 1000
}

// noteHit is a knowledge document as a search hit.
func noteHit(d recall.Doc, score float64) memory.Hit {
	h := memory.Hit{ID: d.ID, Kind: memory.KindKnowledge, Text: d.Text, TS: d.TS, Score: score,
		Path: d.Channel, Status: d.Role, Confidence: noteConfidence(d)}
	first, _, _ := strings.Cut(d.Text, "\n")
	if hd, ok := heading(first); ok {
		h.Heading = hd
	}
	return h
}

func (k *knowledge) seenPath() string {
	return filepath.Join(k.root, "index", KnowledgeSeenFile)
}

func (k *knowledge) seenLogPath() string {
	return filepath.Join(k.root, "index", knowledgeSeenLog)
}

// replay applies to st the lines of knowledgeSeenLog of its generation,
// and returns how many lines the log holds and whether any was torn.
func (k *knowledge) replay(st *knowledgeState) (lines int, torn bool, err error) {
	b, err := os.ReadFile(k.seenLogPath())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		b = rest
		var l seenLine
		if !ok || json.Unmarshal(line, &l) != nil {
			torn = true
			continue
		}
		lines++
		if st.Gen == "" || l.Gen != st.Gen {
			continue
		}
		if l.ID == "" {
			delete(st.Notes, l.Path)
		} else {
			st.Notes[l.Path] = l.seenNote
		}
	}
	return lines, torn, nil
}

// load reads KnowledgeSeenFile, or starts afresh when it is missing,
// unreadable, or of another epoch than the index.
func (k *knowledge) load(ctx context.Context) error {
	if k.state != nil {
		return nil
	}
	ix := k.system.index
	epoch, ok, err := ix.Meta(ctx, metaKnowledgeEpoch)
	if err != nil {
		return fmt.Errorf("read the knowledge epoch: %w", err)
	}
	st := &knowledgeState{Version: knowledgeVersion, Notes: map[string]seenNote{}}
	if b, err := os.ReadFile(k.seenPath()); err == nil {
		var old knowledgeState
		if json.Unmarshal(b, &old) == nil && old.Version == knowledgeVersion && ok && old.Epoch == epoch && old.Notes != nil {
			st = &old
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", k.seenPath(), err)
	}
	lines, torn, err := k.replay(st)
	if err != nil {
		return fmt.Errorf("read %s: %w", k.seenLogPath(), err)
	}
	// A torn line, or lines the file does not own, are folded away at
	// the next save; so is a file of a version with no log.
	k.logged, k.whole = lines, torn || st.Gen == ""
	if !ok || st.Epoch != epoch {
		// A new index (or one this file does not describe): every note
		// is indexed again under a new epoch.
		st.Epoch, st.Notes = rand.Text(), map[string]seenNote{}
		if err := ix.SetMeta(ctx, metaKnowledgeEpoch, st.Epoch); err != nil {
			return fmt.Errorf("save the knowledge epoch: %w", err)
		}
		k.dirty, k.whole = true, true
	}
	k.state = st
	k.byID = make(map[string]string, len(st.Notes))
	for p, n := range st.Notes {
		k.byID[n.ID] = p
	}
	return nil
}

// reset forgets what was indexed of the notes, for an index just reset:
// the next reconcile indexes every note again under a new epoch.
func (k *knowledge) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.state, k.byID, k.dirty = nil, nil, false
	k.changed, k.whole, k.logged = nil, false, 0
}

// save records what changed since the last save: lines appended to
// knowledgeSeenLog, or, when the log has grown past an eighth of the notes
// (or the record must be rewritten), KnowledgeSeenFile written whole (0600,
// then renamed) under a new generation and the log removed.
func (k *knowledge) save() error {
	if !k.dirty || k.state == nil {
		return nil
	}
	if !k.whole && k.logged+len(k.changed) <= max(minSeenLog, len(k.state.Notes)/8) {
		if err := k.appendSeen(); err == nil {
			k.dirty, k.changed = false, nil
			return nil
		}
		// The log cannot be written: the file whole, then.
	}
	k.state.Gen = rand.Text()
	b, err := json.Marshal(k.state)
	if err != nil {
		return err
	}
	p := k.seenPath()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	if err := os.Remove(k.seenLogPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	k.dirty, k.changed, k.whole, k.logged = false, nil, false, 0
	return nil
}

// appendSeen appends k.changed to knowledgeSeenLog, in one write.
func (k *knowledge) appendSeen() error {
	paths := slices.Sorted(maps.Keys(k.changed))
	var buf bytes.Buffer
	for _, p := range paths {
		b, err := json.Marshal(seenLine{Gen: k.state.Gen, Path: p, seenNote: k.changed[p]})
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	f, err := os.OpenFile(k.seenLogPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		k.whole = true // a torn line: fold the log away
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	k.logged += len(paths)
	return nil
}

// reconcile brings the index in step with every note of the root: those
// whose file changed since it was seen are indexed again, those gone are
// dropped.
func (k *knowledge) reconcile(ctx context.Context) (changed, removed int, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.load(ctx); err != nil {
		return 0, 0, err
	}
	var paths []string
	for _, d := range noteDirs {
		err := filepath.WalkDir(filepath.Join(k.root, d), func(full string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if e.Type().IsRegular() {
				if rel, err := filepath.Rel(k.root, full); err == nil && isNoteFile(filepath.ToSlash(rel)) {
					paths = append(paths, filepath.ToSlash(rel))
				}
			}
			return nil
		})
		if err != nil {
			return 0, 0, fmt.Errorf("walk %s: %w", d, err)
		}
	}
	for p := range k.state.Notes {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return k.update(ctx, paths)
}

// sync brings the index in step with the notes paths.
func (k *knowledge) sync(ctx context.Context, paths []string) (changed, removed int, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.load(ctx); err != nil {
		return 0, 0, err
	}
	return k.update(ctx, paths)
}

// update indexes again each of paths whose file changed since it was
// seen, drops those gone, and records what it did; k.mu is held.
func (k *knowledge) update(ctx context.Context, paths []string) (changed, removed int, err error) {
	defer func() {
		if serr := k.save(); serr != nil && err == nil {
			err = fmt.Errorf("record the indexed notes: %w", serr)
		}
	}()
	var (
		docs []recall.Doc
		gone []string
		seen = make(map[string]seenNote)
	)
	flush := func() error {
		if err := k.store(ctx, docs, gone); err != nil {
			return err
		}
		for p, n := range seen {
			if old, ok := k.state.Notes[p]; ok && k.byID[old.ID] == p {
				delete(k.byID, old.ID)
			}
			if k.changed == nil {
				k.changed = make(map[string]seenNote)
			}
			k.changed[p] = n
			if n.ID == "" {
				delete(k.state.Notes, p)
				continue
			}
			k.state.Notes[p] = n
			k.byID[n.ID] = p
		}
		k.dirty = k.dirty || len(seen) > 0
		docs, gone, seen = docs[:0], gone[:0], make(map[string]seenNote)
		return nil
	}
	for _, p := range paths {
		if !isNoteFile(p) {
			continue
		}
		old, had := k.state.Notes[p]
		b, err := os.ReadFile(filepath.Join(k.root, filepath.FromSlash(p)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return changed, removed, fmt.Errorf("read %s: %w", p, err)
		}
		if err != nil || b == nil {
			if had {
				gone = append(gone, oldIDs(old)...)
				seen[p] = seenNote{}
				removed++
			}
			continue
		}
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		if had && old.SHA256 == h {
			continue
		}
		n, perr := vault.ParseNote(p, b)
		var nd []recall.Doc
		now := seenNote{SHA256: h}
		switch {
		case perr != nil:
			// Not a note as it stands: out of recall until it parses
			// (the vault reports it); its hash is kept so that it is
			// not read again until it changes.
			k.system.log.Debug("knowledge: a note that does not parse stays out of recall", "err", perr)
			now.ID = "-" + h // no note's id; never a document id
		case k.byID[n.ID] != "" && k.byID[n.ID] != p:
			k.system.log.Warn("knowledge: two notes share an id; the second stays out of recall until its id is changed",
				"id", n.ID, "indexed", k.byID[n.ID], "skipped", p)
			now.ID = "-" + h
		default:
			var modified time.Time
			if fi, err := os.Stat(filepath.Join(k.root, filepath.FromSlash(p))); err == nil {
				modified = fi.ModTime()
			}
			nd = noteDocs(p, n, modified)
			now.ID, now.Docs = n.ID, len(nd)
		}
		if had {
			ids := oldIDs(old)
			if old.ID == now.ID {
				ids = ids[min(len(ids), now.Docs):] // the rest are replaced
			}
			gone = append(gone, ids...)
		}
		docs = append(docs, nd...)
		seen[p] = now
		changed++
		if len(docs) >= knowledgeBatch {
			if err := flush(); err != nil {
				return changed, removed, err
			}
		}
	}
	return changed, removed, flush()
}

// oldIDs are the document ids a note recorded as seen made.
func oldIDs(n seenNote) []string {
	if strings.HasPrefix(n.ID, "-") {
		return nil
	}
	ids := make([]string, n.Docs)
	for i := range ids {
		ids[i] = noteDocID(n.ID, i)
	}
	return ids
}

// store embeds and upserts docs, then deletes gone.
func (k *knowledge) store(ctx context.Context, docs []recall.Doc, gone []string) error {
	rs := k.system
	if len(docs) > 0 {
		var vecs [][]float32
		if e := rs.embedder; e != nil {
			texts := make([]string, len(docs))
			for i, d := range docs {
				texts[i] = d.Text
			}
			var err error
			if vecs, err = e.Embed(ctx, texts); err != nil {
				return fmt.Errorf("embed notes: %w", err)
			}
			if len(vecs) != len(docs) {
				return fmt.Errorf("embed notes: %d vectors for %d texts", len(vecs), len(docs))
			}
		}
		if err := rs.index.Upsert(ctx, docs, vecs); err != nil {
			return fmt.Errorf("index notes: %w", err)
		}
	}
	if len(gone) > 0 {
		if err := rs.index.Delete(ctx, gone); err != nil {
			return fmt.Errorf("drop notes: %w", err)
		}
	}
	return nil
}

// Knowledge brings recall in step with the vault's files paths
// (slash-separated, relative to the memory root), after a write or an
// owner's edit: each note among them whose file changed is indexed again
// (its sections as knowledge documents), each whose file is gone is
// dropped; other paths are ignored. While recall is not open there is
// nothing to do: Run reconciles every note by its hash once it opens.
func (m *Memory) Knowledge(ctx context.Context, paths []string) error {
	rs, release := m.acquire()
	if rs == nil {
		return nil
	}
	defer release()
	if rs.know == nil {
		return nil
	}
	if _, _, err := rs.know.sync(ctx, paths); err != nil {
		return fmt.Errorf("recall: knowledge: %w", err)
	}
	return nil
}

// reconcileKnowledge brings the index in step with the vault's notes as
// recall opens, after the indexer has checked the index's embedder (a
// reset then would drop the notes again).
func (rs *system) reconcileKnowledge(ctx context.Context) {
	if rs.know == nil {
		return
	}
	if err := rs.indexer.Prepare(ctx); err != nil {
		rs.log.Warn("recall: could not check the index's embedder before indexing the notes", "err", err)
	}
	changed, removed, err := rs.know.reconcile(ctx)
	if err != nil {
		rs.log.Warn("recall: could not bring the knowledge notes into the index; search finds them after their next change or restart", "err", err)
		return
	}
	if changed > 0 || removed > 0 {
		rs.log.Info("recall: knowledge notes indexed", "changed", changed, "removed", removed)
	}
}
