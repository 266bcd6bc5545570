package recollect

import (
	"context"
	"fmt"
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

// memoryTimeout bounds how long a turn waits for relevant memories: the
// reply never waits long on the index.
const memoryTimeout = 300 * time.Millisecond

// Headings of the injected memory block's two sections.
const (
	turnsHeading = "## Relevant memories (older turns found for this message; use them if they help)\n"
	toolsHeading = "## Relevant tool results (earlier tool outputs found for this message; use them if they help)\n"

	knowledgeHeading    = "## What you know (notes from the memory vault relevant to this message, named by file; prefer them to older turns)\n"
	sessionKnowHeading  = "## What you know (notes from the memory vault relevant to where we left off, named by file)\n"
	sessionTurnsHeading = "## Memories relevant to where we left off (older turns found as this session starts)\n"
	sessionToolsHeading = "## Tool results relevant to where we left off (found as this session starts)\n"
)

// memories returns a block of relevant older turns and tool results for
// req.Query, each section within its allowance, leaving out what the
// context window already holds. The two searches run concurrently within
// memoryTimeout. It is injected context: marked with the sentinel, never
// journaled, never indexed.
func (rs *system) memories(ctx context.Context, req memory.ContextRequest) string {
	ctx, cancel := context.WithTimeout(ctx, memoryTimeout)
	defer cancel()
	q := recall.Query{Text: req.Query}
	searches := 0
	for _, on := range []bool{req.Knowledge > 0 && rs.know != nil, req.Turns+req.Knowledge > 0, req.Tools > 0} {
		if on {
			searches++
		}
	}
	if rs.embedder != nil && searches > 1 {
		// The searches share one embedding of the query.
		v, err := rs.searcher.EmbedQuery(ctx, req.Query)
		if err != nil {
			rs.log.Warn("recall: cannot embed the query; relevant memories are lexical only", "err", err)
			v = make([]float32, rs.embedder.Dim())
		}
		q.Vector = v
	}
	var notes, turns, results []recall.Hit
	var wg sync.WaitGroup
	// Turns may take what the notes leave: enough of them are asked for.
	wg.Go(func() { notes = rs.relevantNotes(ctx, q, req.Knowledge) })
	wg.Go(func() { turns = rs.relevant(ctx, q, recall.KindTurn, req.Turns+req.Knowledge) })
	wg.Go(func() { results = rs.relevant(ctx, q, recall.KindTool, req.Tools) })
	wg.Wait()
	return memoryBlock(req, notes, turns, results)
}

// relevantNotes searches the sections of active knowledge notes, enough
// of them to fill allowance; none when the search fails or is too slow.
func (rs *system) relevantNotes(ctx context.Context, q recall.Query, allowance int) []recall.Hit {
	if allowance <= 0 || rs.know == nil {
		return nil
	}
	q.K = memoryHits(allowance)
	q.Filter = recall.Filter{Kinds: []string{recall.KindKnowledge}, Roles: []string{memory.StatusActive}}
	hits, err := rs.searcher.Search(ctx, q)
	if err != nil {
		rs.log.Debug("no relevant notes for this turn", "err", err)
		return nil
	}
	// The generated tool catalog repeats the tool definitions the model
	// is given with every call: searchable, never injected.
	return slices.DeleteFunc(hits, func(h recall.Hit) bool { return h.Doc.Channel == vault.ToolCatalogFile })
}

// relevant searches documents of one kind, enough of them to fill
// allowance; none when the search fails or is too slow.
func (rs *system) relevant(ctx context.Context, q recall.Query, kind string, allowance int) []recall.Hit {
	if allowance <= 0 {
		return nil
	}
	q.K, q.Filter = memoryHits(allowance), recall.Filter{Kinds: []string{kind}}
	hits, err := rs.searcher.Search(ctx, q)
	if err != nil {
		rs.log.Debug("no relevant memories for this turn", "kind", kind, "err", err)
		return nil
	}
	return hits
}

// memoryHits is how many hits to ask for to fill allowance tokens.
func memoryHits(allowance int) int {
	return min(max(allowance/40, 10), 50)
}

// memoryBlock is the injected block, in the tiers of seed 003 §5.1: the
// sentinel, then the sections of knowledge notes (durable memory first),
// then older turns, which may use what the notes left of their allowance,
// then tool results; each part omitted when empty; "" when all are.
func memoryBlock(req memory.ContextRequest, notes, turns, results []recall.Hit) string {
	kh, th, rh := knowledgeHeading, turnsHeading, toolsHeading
	if req.Session {
		kh, th, rh = sessionKnowHeading, sessionTurnsHeading, sessionToolsHeading
	}
	known, used := memorySection(kh, notes, req, req.Knowledge, noteLine)
	turnsPart, _ := memorySection(th, turns, req, req.Turns+req.Knowledge-used, turnLine)
	toolsPart, _ := memorySection(rh, results, req, req.Tools, toolLine)
	body := known + turnsPart + toolsPart
	if body == "" {
		return ""
	}
	return indexer.InjectedSentinel + "\n" + body
}

// memorySection is heading and the lines of the hits not in req.Exclude,
// in rank order, skipping any that would take it over allowance tokens,
// and the tokens it uses; "" and 0 when no hit fits. The records it shows
// are added to req.Injected (a note's section by its own id, a record by
// the id of the record its chunk is part of).
func memorySection(heading string, hits []recall.Hit, req memory.ContextRequest, allowance int, line func(recall.Doc) string) (string, int) {
	used := memory.EstimateTokens(heading)
	var b strings.Builder
	for _, h := range hits {
		base := h.Doc.ID
		if h.Doc.Kind != recall.KindKnowledge {
			base, _, _ = strings.Cut(h.Doc.ID, "#")
		}
		if req.Exclude[base] {
			continue
		}
		l := line(h.Doc)
		if n := memory.EstimateTokens(l); used+n <= allowance {
			used += n
			b.WriteString(l)
			if req.Injected != nil {
				req.Injected[base] = true
			}
		}
	}
	if b.Len() == 0 {
		return "", 0
	}
	return heading + b.String(), used
}

// noteLine shows a section of a note by its file and heading, then its
// text without the heading line.
func noteLine(d recall.Doc) string {
	where, text := d.Channel, d.Text
	if first, rest, _ := strings.Cut(d.Text, "\n"); isHeading(first) {
		h, _ := heading(first)
		where, text = where+" § "+h, rest
	}
	return fmt.Sprintf("- [%s] %s\n", where, oneLine(text, 600))
}

func turnLine(d recall.Doc) string {
	return fmt.Sprintf("- [%s] %s: %s\n", d.TS.UTC().Format("2006-01-02 15:04"), d.Role, oneLine(d.Text, 600))
}

// toolLine shows a tool document, whose text names the tool, its reason
// and arguments, then the result.
func toolLine(d recall.Doc) string {
	return fmt.Sprintf("- [%s] %s\n", d.TS.UTC().Format("2006-01-02 15:04"), oneLine(d.Text, 600))
}

// oneLine puts s on one line and cuts it to n bytes, marking the cut with
// "…".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
