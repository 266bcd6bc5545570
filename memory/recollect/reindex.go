package recollect

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Reindex drops the recall index o configures and rebuilds it from
// o.Journal, the truth it derives from (`hearth reindex`), and reports
// what it did to w. Stop hearth first: the index has one writer.
func Reindex(ctx context.Context, o Options, w io.Writer) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	emb, err := newEmbedder(o.Settings, o.Log)
	if err != nil {
		return err
	}
	rs, err := openSystem(ctx, o, emb)
	if err != nil {
		return err
	}
	defer rs.index.Close()
	if err := rs.index.Reset(ctx); err != nil {
		return fmt.Errorf("reset index: %w", err)
	}
	start := time.Now()
	if err := rs.indexer.CatchUp(ctx); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	notes := 0
	if rs.know != nil {
		if notes, _, err = rs.know.reconcile(ctx); err != nil {
			return fmt.Errorf("reindex the knowledge notes: %w", err)
		}
	}
	st := rs.indexer.Status()
	fmt.Fprintf(w, "indexed %d documents from the journal (%d records had nothing to index) and %d knowledge notes in %s; backend %s, embedder %s\n",
		st.Indexed, st.Skipped, notes, time.Since(start).Round(time.Millisecond), rs.backend, embedderName(rs.embedder))
	return nil
}
