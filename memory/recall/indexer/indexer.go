// Package indexer keeps a recall index up to date with the journal, off the
// reply path. A cursor (the id of the last indexed record, stored with the
// index) makes it resume after a restart, an embedder outage or an index
// outage with nothing missed and nothing indexed twice. Chat never waits
// on it and never fails because of it.
//
// A turn document carries the text of the turns just before it in the
// conversation as its recall.Doc.Context (Options.ContextTurns), which the
// lexical side indexes with it; it embeds the turn's Text alone, which
// measured better on LoCoMo (bench/README.md). The indexer remembers those
// turns as it scans the journal in order. After a restart, or when the
// cursor moved under it, it reads them back from the end of the journal
// (a Tailer), at most a few dozen records, so that the turns it indexes
// next get the context they would have had without the restart; when the
// cursor's record is further back than that, or gone, they start without.
// A failed batch is retried with the context it had.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mnemo/mnemo/internal/backoff"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/recall"
)

// Meta keys the indexer keeps in the index.
const (
	MetaCursor   = "indexer.cursor"   // id of the last indexed journal record
	MetaEmbedder = "indexer.embedder" // Name of the embedder that made the vectors ("" = lexical only)
	MetaTerms    = "indexer.terms"    // recall.TermsVersion of the lexical terms
)

// InjectedSentinel marks context hearth injected into a prompt; text that
// carries it is never harvested back into memory.
const InjectedSentinel = "<!-- mnemo:injected -->"

// ChunkBytes bounds the text of one document; longer records are split.
const ChunkBytes = 4 << 10

// maxChunks bounds how much of one enormous record is indexed.
const maxChunks = 64

// Journal is the part of *journal.Journal the indexer reads.
type Journal interface {
	ScanAfter(ctx context.Context, id string, fn func(journal.Record) error) error
}

// Tailer is a Journal that can also return its last n valid records,
// oldest first, reading backwards from its end, as *journal.Journal does.
// An indexer whose Journal is a Tailer reads the turns before its cursor
// back from it when it starts from a cursor; with another Journal the
// first turns it indexes after a restart have no context.
type Tailer interface {
	Tail(n int) ([]journal.Record, error)
}

var _ Tailer = (*journal.Journal)(nil)

// primeRecords bounds, per context turn, how many records an indexer
// starting from a cursor reads back from the end of the journal to find the
// cursor's record and the turns before it: 64 by default. Tool outcomes
// and skipped records between the turns take room too.
const primeRecords = 32

// Options configure an Indexer.
type Options struct {
	Journal  Journal
	Index    recall.Index
	Embedder recall.Embedder // nil: lexical only
	Session  string          // Doc.Session of every document (the conversation id)
	Batch    int             // records per embed+upsert, default 128
	// ContextTurns is how many preceding turns a turn document carries as
	// its Context: 0 means recall.ContextTurns, a negative number none.
	// Tool documents get none.
	ContextTurns int
	// Backoff after a failure doubles from MinBackoff to MaxBackoff
	// (defaults 1s and 2m).
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often it looks for records it was not told about
	// (default 1m).
	Poll time.Duration
	Log  *slog.Logger
}

// Status is what the indexer reports for health.
type Status struct {
	Cursor    string // last indexed record
	Latest    string // newest record it knows of
	Lag       time.Duration
	Indexed   int // documents written since start
	Skipped   int // records skipped (empty, injected), since start
	Failures  int // consecutive failures
	LastError string
	RetryAt   time.Time
	// CaughtUp reports that a CatchUp since New reached the end of the
	// journal: everything the journal held when it began is indexed (or
	// skipped). It stays true when later batches fail; Failures says so.
	CaughtUp bool
}

// Indexer runs until its context ends.
type Indexer struct {
	opts Options
	wake chan struct{}

	// scan serialises CatchUp and guards prev and prevAt.
	scan   sync.Mutex
	prev   *recall.Preceding // the last turns up to prevAt, oldest first
	prevAt string            // the journal record prev has seen up to

	mu     sync.Mutex
	status Status
}

// New returns an indexer; nothing happens until Run.
func New(opts Options) *Indexer {
	if opts.Batch <= 0 {
		opts.Batch = 128
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(2*time.Minute, opts.MinBackoff)
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.ContextTurns == 0 {
		opts.ContextTurns = recall.ContextTurns
	}
	return &Indexer{opts: opts, wake: make(chan struct{}, 1), prev: recall.NewPreceding(opts.ContextTurns)}
}

// Notify tells the indexer a record was appended. It never blocks.
func (ix *Indexer) Notify(id string) {
	ix.mu.Lock()
	if id > ix.status.Latest {
		ix.status.Latest = id
		ix.status.Lag = lag(ix.status.Cursor, id)
	}
	ix.mu.Unlock()
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// Status reports progress and the last failure.
func (ix *Indexer) Status() Status {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.status
}

// Run indexes what the journal holds beyond the cursor, then waits for
// Notify (or Poll) and does it again, backing off after failures, until
// ctx ends.
func (ix *Indexer) Run(ctx context.Context) error {
	retry := backoff.Policy{Initial: ix.opts.MinBackoff, Max: ix.opts.MaxBackoff}
	failures := 0
	for {
		err := ix.CatchUp(ctx)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		wait := ix.opts.Poll
		if err != nil {
			failures++
			wait = retry.Delay(failures)
			ix.mu.Lock()
			ix.status.Failures++
			ix.status.LastError = err.Error()
			ix.status.RetryAt = time.Now().Add(wait)
			ix.mu.Unlock()
			ix.opts.Log.Warn("indexing failed; will retry", "err", err, "retry", wait)
		} else {
			failures = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-ix.wake:
			t.Stop()
			if err != nil {
				// A failure waits out its backoff even when new turns
				// arrive: a dead embedder is not hammered.
				ix.sleep(ctx, time.Until(ix.Status().RetryAt))
			}
		case <-t.C:
		}
	}
}

func (ix *Indexer) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// CatchUp indexes every record after the cursor, a batch at a time,
// advancing the cursor only after a batch is stored. Calls are serialised.
func (ix *Indexer) CatchUp(ctx context.Context) error {
	ix.scan.Lock()
	defer ix.scan.Unlock()
	idx := ix.opts.Index
	if err := ix.checkEmbedder(ctx); err != nil {
		return err
	}
	cursor, _, err := idx.Meta(ctx, MetaCursor)
	if err != nil {
		return fmt.Errorf("read cursor: %w", err)
	}
	ix.setCursor(cursor)
	if cursor != ix.prevAt {
		// The remembered turns are not the ones up to the cursor (a
		// restart, a reset index, another writer): read them back.
		ix.prev, ix.prevAt = ix.preceding(cursor), cursor
	}

	var batch []journal.Record
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		prev := ix.prev.Clone()
		n, skipped, err := ix.store(ctx, batch, prev)
		if err != nil {
			return err
		}
		last := batch[len(batch)-1].ID
		if err := idx.SetMeta(ctx, MetaCursor, last); err != nil {
			return fmt.Errorf("save cursor: %w", err)
		}
		ix.prev, ix.prevAt = prev, last
		ix.mu.Lock()
		ix.status.Indexed += n
		ix.status.Skipped += skipped
		ix.status.Failures = 0
		ix.status.LastError = ""
		ix.status.RetryAt = time.Time{}
		ix.mu.Unlock()
		ix.setCursor(last)
		batch = batch[:0]
		return nil
	}
	start := cursor
	err = ix.opts.Journal.ScanAfter(ctx, cursor, func(r journal.Record) error {
		if r.IsTombstone() {
			// The records it forgets are not in the scan; what was
			// indexed of them before it goes now, after the batch in
			// flight.
			if err := flush(); err != nil {
				return err
			}
			if err := ix.forget(ctx, r.Forgets, start); err != nil {
				return err
			}
		}
		batch = append(batch, r)
		if len(batch) >= ix.opts.Batch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan journal: %w", err)
	}
	if err := flush(); err != nil {
		return err
	}
	ix.mu.Lock()
	ix.status.CaughtUp = true
	ix.mu.Unlock()
	return nil
}

// Prepare resets the index when its vectors or lexical terms came from
// another embedder or tokenizer, as CatchUp does first: what is stored
// beside the journal's documents (knowledge notes) is stored after it, so
// that a reset does not drop it.
func (ix *Indexer) Prepare(ctx context.Context) error {
	ix.scan.Lock()
	defer ix.scan.Unlock()
	return ix.checkEmbedder(ctx)
}

// checkEmbedder resets the index when its vectors came from another
// embedder, or its lexical terms from another tokenizer: vectors of two
// models, or terms of two tokenizers, never mix.
func (ix *Indexer) checkEmbedder(ctx context.Context) error {
	want := ""
	if ix.opts.Embedder != nil {
		want = ix.opts.Embedder.Name()
	}
	have, ok, err := ix.opts.Index.Meta(ctx, MetaEmbedder)
	if err != nil {
		return fmt.Errorf("read embedder tag: %w", err)
	}
	terms, termsOK, err := ix.opts.Index.Meta(ctx, MetaTerms)
	if err != nil {
		return fmt.Errorf("read terms tag: %w", err)
	}
	if ok && have == want && termsOK && terms == recall.TermsVersion {
		return nil
	}
	switch {
	case ok && have != want:
		ix.opts.Log.Info("embedder changed: re-indexing from the journal", "was", have, "now", want)
	case ok:
		ix.opts.Log.Info("tokenizer changed: re-indexing from the journal", "was", terms, "now", recall.TermsVersion)
	}
	if err := ix.opts.Index.Reset(ctx); err != nil {
		return fmt.Errorf("reset index for a new embedder: %w", err)
	}
	if err := ix.opts.Index.SetMeta(ctx, MetaEmbedder, want); err != nil {
		return fmt.Errorf("save embedder tag: %w", err)
	}
	if err := ix.opts.Index.SetMeta(ctx, MetaTerms, recall.TermsVersion); err != nil {
		return fmt.Errorf("save terms tag: %w", err)
	}
	return nil
}

// store turns records into documents, embeds and upserts them. prev holds
// the turns before recs and is advanced past them.
func (ix *Indexer) store(ctx context.Context, recs []journal.Record, prev *recall.Preceding) (indexed, skipped int, err error) {
	var docs []recall.Doc
	for _, r := range recs {
		if !r.IsTurn() {
			continue // a tombstone, handled as the scan met it, or a decision
		}
		d := Docs(r, ix.opts.Session)
		if len(d) == 0 {
			skipped++
			continue
		}
		if text, ok := turnText(d); ok {
			c := prev.Context()
			for i := range d {
				d[i].Context = c
			}
			prev.Push(text)
		}
		docs = append(docs, d...)
	}
	if len(docs) == 0 {
		return 0, skipped, nil
	}
	var vecs [][]float32
	if e := ix.opts.Embedder; e != nil {
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Text
		}
		vecs, err = e.Embed(ctx, texts)
		if err != nil {
			return 0, 0, fmt.Errorf("embed: %w", err)
		}
		if len(vecs) != len(docs) {
			return 0, 0, fmt.Errorf("embed: %d vectors for %d texts", len(vecs), len(docs))
		}
	}
	if err := ix.opts.Index.Upsert(ctx, docs, vecs); err != nil {
		return 0, 0, fmt.Errorf("upsert: %w", err)
	}
	return len(docs), skipped, nil
}

// DocIDs are the ids of every document a record can make: its own, and
// those of its chunks.
func DocIDs(recordID string) []string {
	ids := make([]string, 0, maxChunks+1)
	ids = append(ids, recordID)
	for i := range maxChunks {
		ids = append(ids, fmt.Sprintf("%s#%d", recordID, i))
	}
	return ids
}

// Forget drops from the index every document of the records ids, and
// re-indexes the turns that carried them in their retrieval context
// without it. Calls are serialised with CatchUp, so that a batch being
// stored cannot bring a forgotten record back.
func (ix *Indexer) Forget(ctx context.Context, ids []string) error {
	ix.scan.Lock()
	defer ix.scan.Unlock()
	cursor, _, err := ix.opts.Index.Meta(ctx, MetaCursor)
	if err != nil {
		return fmt.Errorf("read cursor: %w", err)
	}
	if err := ix.forget(ctx, ids, cursor); err != nil {
		return err
	}
	// The remembered turns may hold a forgotten one: read them back from
	// the live view.
	ix.prev, ix.prevAt = ix.preceding(cursor), cursor
	return nil
}

// Reconcile brings the index in line with a journal changed under it
// (a shard edited by hand while hearth was stopped): the records gone
// are forgotten, and recs — the live records of the changed shards, in
// order — are indexed again when the cursor has passed them (upserts
// replace what was there; later ones are indexed as the cursor reaches
// them). Their retrieval context starts at the first of them.
func (ix *Indexer) Reconcile(ctx context.Context, gone []string, recs []journal.Record) error {
	ix.scan.Lock()
	defer ix.scan.Unlock()
	if err := ix.checkEmbedder(ctx); err != nil {
		return err
	}
	cursor, _, err := ix.opts.Index.Meta(ctx, MetaCursor)
	if err != nil {
		return fmt.Errorf("read cursor: %w", err)
	}
	if len(gone) > 0 {
		if err := ix.forget(ctx, gone, cursor); err != nil {
			return err
		}
	}
	var redo []journal.Record
	for _, r := range recs {
		if r.ID <= cursor {
			redo = append(redo, r)
		}
	}
	prev := recall.NewPreceding(ix.opts.ContextTurns)
	for chunk := range slices.Chunk(redo, ix.opts.Batch) {
		if _, _, err := ix.store(ctx, chunk, prev); err != nil {
			return err
		}
	}
	ix.prev, ix.prevAt = ix.preceding(cursor), cursor
	return nil
}

// errEnough stops a scan that has what it wanted.
var errEnough = errors.New("enough")

// forget is Forget with the scan lock held; upTo is the newest record
// indexed before this scan: the turns after a forgotten one up to it were
// indexed with it in their context.
func (ix *Indexer) forget(ctx context.Context, ids []string, upTo string) error {
	var del []string
	for _, id := range ids {
		del = append(del, DocIDs(id)...)
	}
	if err := ix.opts.Index.Delete(ctx, del); err != nil {
		return fmt.Errorf("delete forgotten records: %w", err)
	}
	if ix.opts.ContextTurns <= 0 {
		return nil
	}
	for _, id := range ids {
		if id > upTo {
			continue // not indexed yet: nothing carries it
		}
		var after []journal.Record
		turns := 0
		err := ix.opts.Journal.ScanAfter(ctx, id, func(r journal.Record) error {
			if r.ID > upTo || turns >= ix.opts.ContextTurns {
				return errEnough
			}
			if !r.IsTurn() {
				return nil
			}
			after = append(after, r)
			if _, ok := turnText(Docs(r, ix.opts.Session)); ok {
				turns++
			}
			return nil
		})
		if err != nil && !errors.Is(err, errEnough) {
			return fmt.Errorf("scan journal: %w", err)
		}
		// Their context starts again after the gap: the turns before the
		// forgotten one are not read back (a backwards read from the
		// middle of the journal), which costs these few turns a little
		// recall and never keeps a forgotten word.
		if _, _, err := ix.store(ctx, after, recall.NewPreceding(ix.opts.ContextTurns)); err != nil {
			return err
		}
	}
	return nil
}

// turnText is what the documents of one record add to the turns that make
// later turns' Context: the text of a turn's first document. ok is false
// for a tool outcome and for a record that makes no documents.
func turnText(docs []recall.Doc) (text string, ok bool) {
	if len(docs) == 0 || docs[0].Kind != recall.KindTurn {
		return "", false
	}
	return docs[0].Text, true
}

// preceding returns the turns up to and including the record cursor, as
// an indexer that had scanned the journal from its start would hold them.
// It reads only the last primeRecords×ContextTurns records: when the
// cursor's record is not among them (far behind the end, or gone), or the
// journal is not a Tailer or cannot be read, it returns none, and when the
// records before the cursor among them hold fewer turns than wanted, the
// ones they hold.
func (ix *Indexer) preceding(cursor string) *recall.Preceding {
	prev := recall.NewPreceding(ix.opts.ContextTurns)
	if cursor == "" || ix.opts.ContextTurns <= 0 {
		return prev // the start of the journal, or no context wanted
	}
	log := ix.opts.Log
	t, ok := ix.opts.Journal.(Tailer)
	if !ok {
		log.Debug("indexer: journal cannot be read backwards: the next turns have no context", "cursor", cursor)
		return prev
	}
	window := primeRecords * ix.opts.ContextTurns
	recs, err := t.Tail(window)
	if err != nil {
		log.Debug("indexer: cannot read the turns before the cursor: the next turns have no context", "cursor", cursor, "err", err)
		return prev
	}
	at := -1
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].ID == cursor {
			at = i
			break
		}
	}
	if at < 0 {
		log.Debug("indexer: cursor's record not among the last records of the journal: the next turns have no context", "cursor", cursor, "records", window)
		return prev
	}
	turns := 0
	for _, r := range recs[:at+1] {
		if text, ok := turnText(Docs(r, ix.opts.Session)); ok {
			prev.Push(text)
			turns++
		}
	}
	if turns < ix.opts.ContextTurns && len(recs) == window {
		log.Debug("indexer: fewer turns before the cursor than the context wants among the last records of the journal", "cursor", cursor, "turns", turns, "records", window)
	}
	return prev
}

func (ix *Indexer) setCursor(id string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.status.Cursor = id
	if id > ix.status.Latest {
		ix.status.Latest = id
	}
	ix.status.Lag = lag(id, ix.status.Latest)
}

// lag is how far the cursor's record is behind the latest one.
func lag(cursor, latest string) time.Duration {
	l, err := ulid.ParseStrict(latest)
	if err != nil {
		return 0
	}
	c, err := ulid.ParseStrict(cursor)
	if err != nil {
		return time.Since(ulid.Time(l.Time())) // nothing indexed yet
	}
	return ulid.Time(l.Time()).Sub(ulid.Time(c.Time()))
}

// Docs are the documents a journal record becomes: none for a record with
// nothing to recall (empty, injected context, an agent step that only
// called tools), several for a long one.
func Docs(r journal.Record, session string) []recall.Doc {
	if r.Conv != "" {
		session = r.Conv // a record of another conversation than the default one
	}
	base := recall.Doc{ID: r.ID, Kind: recall.KindTurn, Role: r.Role, Mode: r.Mode, Channel: "chat", Session: session, TS: r.TS}
	if r.Mode == "voice" {
		base.Channel = "voice"
	}
	text := r.Text
	if r.Role == "tool" {
		if r.Tool == nil {
			return nil
		}
		base.Kind, base.Channel = recall.KindTool, r.Tool.Name
		var b strings.Builder
		fmt.Fprintf(&b, "tool %s", r.Tool.Name)
		if r.Tool.Reason != "" {
			fmt.Fprintf(&b, " (%s)", r.Tool.Reason)
		}
		if len(r.Tool.Arguments) > 2 {
			fmt.Fprintf(&b, " %s", r.Tool.Arguments)
		}
		if r.Tool.Error != "" {
			fmt.Fprintf(&b, "\nerror: %s", r.Tool.Error)
		} else {
			fmt.Fprintf(&b, "\n%s", r.Text)
		}
		text = b.String()
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	if strings.TrimSpace(text) == "" || strings.Contains(text, InjectedSentinel) {
		return nil
	}
	chunks := split(text, ChunkBytes)
	docs := make([]recall.Doc, 0, len(chunks))
	for i, c := range chunks {
		d := base
		d.Text = c
		if len(chunks) > 1 {
			d.ID = fmt.Sprintf("%s#%d", r.ID, i)
		}
		docs = append(docs, d)
	}
	return docs
}

// split cuts s into pieces of at most n bytes on rune boundaries, preferring
// line and word breaks, at most maxChunks of them.
func split(s string, n int) []string {
	var out []string
	for len(s) > 0 && len(out) < maxChunks {
		if len(s) <= n {
			out = append(out, s)
			break
		}
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if i := strings.LastIndexAny(s[:cut], "\n "); i > n/2 {
			cut = i + 1
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
