package hearth

import (
	"context"
	"errors"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mnemo/mnemo/memory/journal"
)

// HistoryQuery selects stored records for a client reading back beyond
// its snapshot: the newest Limit (0: all) of the records after the record
// After ("": from the first) whose time is Since or later.
type HistoryQuery struct {
	Limit int
	After string
	Since time.Time
	// Conversation is the conversation read ("": main); an unknown one is
	// a *Problem with CodeConversationNotFound.
	Conversation string
}

// HistoryPage is the oldest part of a selection, oldest first. More says
// the selection goes on past the page's last record: the same query with
// After set to that record's id continues it.
type HistoryPage struct {
	Records []journal.Record
	More    bool
}

// MaxHistoryPage bounds the records of one HistoryPage.
const MaxHistoryPage = 1000

// errPageFull stops a scan once a page is full.
var errPageFull = errors.New("page full")

// History reads stored records back from the journal. It reads the
// journal, not the conversation's state, and takes no lock of the core:
// a record committed meanwhile may or may not be in the page.
func (h *Hearth) History(ctx context.Context, q HistoryQuery) (HistoryPage, error) {
	if q.Limit < 0 {
		return HistoryPage{}, &Problem{Code: CodeBadRequest, Message: "history: limit must not be negative"}
	}
	info, err := h.Conversation(q.Conversation)
	if err != nil {
		return HistoryPage{}, err
	}
	if info.First == "" {
		return HistoryPage{}, nil // nothing said yet
	}
	q.Conversation = info.ID
	page, err := h.history(ctx, q, firstBound(info.ID, info.First))
	if err != nil {
		if ctx.Err() != nil {
			return HistoryPage{}, ctx.Err()
		}
		h.log.Warn("history read failed", "err", err)
		return HistoryPage{}, &Problem{Code: CodeInternal, Message: "hearth could not read the journal; details are in hearth's log"}
	}
	return page, nil
}

func (h *Hearth) history(ctx context.Context, q HistoryQuery, first string) (HistoryPage, error) {
	// The journal's scan is its live view plus the tombstones and the
	// decisions, which are not turns.
	conv := convField(q.Conversation)
	match := func(r journal.Record) bool { return r.IsTurn() && r.Conv == conv && !r.TS.Before(q.Since) }
	if q.After == "" && q.Since.IsZero() && q.Limit > 0 && q.Limit <= MaxHistoryPage {
		// The common case, `mnemo history -n N`: read back from the end,
		// down to the conversation's first day at most.
		recs, err := h.cfg.Journal.TailOf(conv, q.Limit, first)
		return HistoryPage{Records: recs}, err
	}
	if q.After == "" && first != "" {
		// Scan from the conversation's first record's day on, not the
		// whole journal.
		q.After = before(first)
	}
	// Skip the part of the selection before the newest Limit: count it
	// first (bounded memory, whatever the journal's size).
	skip := 0
	if q.Limit > 0 {
		n := 0
		err := h.cfg.Journal.ScanAfter(ctx, q.After, func(r journal.Record) error {
			if match(r) {
				n++
			}
			return nil
		})
		if err != nil {
			return HistoryPage{}, err
		}
		skip = max(n-q.Limit, 0)
	}
	var page HistoryPage
	err := h.cfg.Journal.ScanAfter(ctx, q.After, func(r journal.Record) error {
		switch {
		case !match(r):
		case skip > 0:
			skip--
		case len(page.Records) == MaxHistoryPage:
			page.More = true
			return errPageFull
		default:
			page.Records = append(page.Records, r)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return HistoryPage{}, err
	}
	return page, nil
}

// before is an id that sorts just before id: its time less a millisecond
// (ScanAfter reads from that day on), or "" when id is no ULID.
func before(id string) string {
	u, err := ulid.ParseStrict(id)
	if err != nil || u.Time() == 0 {
		return ""
	}
	var b ulid.ULID
	if err := b.SetTime(u.Time() - 1); err != nil {
		return ""
	}
	return b.String()
}
