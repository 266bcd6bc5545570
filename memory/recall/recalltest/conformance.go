// Package recalltest holds the conformance suite every recall.Index
// backend passes, so that the embedded index and Qdrant behave the same.
package recalltest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/memory/recall"
)

// ConformanceDim is the vector dimension the suite asks open for, except
// where a subtest says otherwise.
const ConformanceDim = 8

// RunIndexConformance runs the backend-neutral contract of recall.Index.
// open returns a new, empty index of dimension dim; the suite closes it.
// Scores are compared only by order, never by value.
func RunIndexConformance(t *testing.T, open func(t *testing.T, dim int) recall.Index) {
	t.Helper()
	s := &suite{open: open}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"RoundTrip", s.roundTrip},
		{"DocsOrderAndMissing", s.docsOrder},
		{"Replace", s.replace},
		{"Context", s.context},
		{"Delete", s.delete},
		{"LexicalRarerTermsOutrank", s.lexicalIDF},
		{"LexicalSaturation", s.lexicalSaturation},
		{"LexicalLengthNormalisation", s.lexicalLength},
		{"LexicalSharedTokenizer", s.lexicalTokenizer},
		{"LexicalEmptyQuery", s.lexicalEmpty},
		{"Filters", s.filters},
		{"Knowledge", s.knowledge},
		{"VectorCosine", s.vectorCosine},
		{"VectorDimension", s.vectorDimension},
		{"VectorCountMismatch", s.vectorCountMismatch},
		{"LexicalOnlyDocs", s.lexicalOnlyDocs},
		{"KLargerThanCount", s.kLarge},
		{"Meta", s.meta},
		{"CountAndReset", s.countReset},
		{"Concurrent", s.concurrent},
		{"AwkwardTexts", s.awkwardTexts},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.fn)
	}
}

type suite struct {
	open func(t *testing.T, dim int) recall.Index
}

// index opens a fresh index and closes it when the test ends.
func (s *suite) index(t *testing.T, dim int) recall.Index {
	t.Helper()
	ix := s.open(t, dim)
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ix
}

// base is a fixed instant with a millisecond part, in a non-UTC zone.
var base = time.Date(2024, 3, 14, 15, 9, 26, 535_000_000, time.FixedZone("X", 3600))

// doc builds a turn with defaults for the fields a test does not care about.
func doc(id, text string) recall.Doc {
	return recall.Doc{ID: id, Kind: recall.KindTurn, Role: "user", Mode: "text", Channel: "chat", Session: "s1", Text: text, TS: base}
}

func upsert(t *testing.T, ix recall.Index, docs []recall.Doc, vecs [][]float32) {
	t.Helper()
	if err := ix.Upsert(context.Background(), docs, vecs); err != nil {
		t.Fatalf("Upsert(%d docs): %v", len(docs), err)
	}
}

func lexicalIDs(t *testing.T, ix recall.Index, q string, k int, f recall.Filter) []string {
	t.Helper()
	res, err := ix.Lexical(context.Background(), q, k, f)
	if err != nil {
		t.Fatalf("Lexical(%q): %v", q, err)
	}
	checkOrder(t, "Lexical("+q+")", res)
	return ids(res)
}

func vectorIDs(t *testing.T, ix recall.Index, v []float32, k int, f recall.Filter) []string {
	t.Helper()
	res, err := ix.Vector(context.Background(), v, k, f)
	if err != nil {
		t.Fatalf("Vector(%v): %v", v, err)
	}
	checkOrder(t, "Vector", res)
	return ids(res)
}

// checkOrder checks that scores do not increase and ids are unique.
func checkOrder(t *testing.T, what string, res []recall.Scored) {
	t.Helper()
	seen := map[string]bool{}
	for i, r := range res {
		if seen[r.ID] {
			t.Errorf("%s: id %q returned twice", what, r.ID)
		}
		seen[r.ID] = true
		if i > 0 && r.Score > res[i-1].Score {
			t.Errorf("%s: score of result %d (%v) above result %d (%v)", what, i, r.Score, i-1, res[i-1].Score)
		}
		if math.IsNaN(float64(r.Score)) {
			t.Errorf("%s: result %d has a NaN score", what, i)
		}
	}
}

func ids(res []recall.Scored) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// unit returns a dim-length vector with v at the front and zeros after.
func vec(dim int, v ...float32) []float32 {
	out := make([]float32, dim)
	copy(out, v)
	return out
}

// docCmp compares docs by instant (to the millisecond), not by zone.
var docCmp = cmp.Options{
	cmp.Comparer(func(a, b time.Time) bool {
		return a.Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
	}),
	cmpopts.EquateEmpty(),
}

func (s *suite) roundTrip(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	docs := []recall.Doc{
		{ID: "01J0000000000000000000000A", Kind: recall.KindTurn, Role: "user", Mode: "voice", Channel: "voice", Session: "conv-1",
			Text: "I adopted a puppy named Biscuit", Context: "Did you get a pet?\nWhat is it called?", TS: base, Salience: 0.75},
		{ID: "01J0000000000000000000000B#2", Kind: recall.KindTool, Role: "tool", Mode: "text", Channel: "web_search", Session: "conv-2",
			Text: "search results: weather in Lisbon is sunny", TS: base.Add(-36*time.Hour + 7*time.Millisecond), Salience: 0},
		{ID: "c", Kind: recall.KindTurn, Role: "Caroline", Mode: "text", Channel: "chat", Session: "conv-26",
			Text: "Ünïcödé ✓ text\nwith lines", TS: time.Date(1999, 12, 31, 23, 59, 59, 999_000_000, time.UTC), Salience: 1},
	}
	upsert(t, ix, docs, [][]float32{vec(ConformanceDim, 1), vec(ConformanceDim, 0, 1), vec(ConformanceDim, 0, 0, 1)})
	got, err := ix.Docs(ctx, []string{docs[0].ID, docs[1].ID, docs[2].ID})
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	if diff := cmp.Diff(docs, got, docCmp); diff != "" {
		t.Errorf("Docs mismatch (-want +got):\n%s", diff)
	}
	// Sub-millisecond parts may be dropped, never rounded away from the
	// millisecond.
	d := doc("ns", "nanoseconds")
	d.TS = base.Add(999_999 * time.Nanosecond)
	upsert(t, ix, []recall.Doc{d}, nil)
	got, err = ix.Docs(ctx, []string{"ns"})
	if err != nil || len(got) != 1 {
		t.Fatalf("Docs(ns) = %v, %v; want one doc", got, err)
	}
	if !got[0].TS.Truncate(time.Millisecond).Equal(base) {
		t.Errorf("TS = %v, want %v to the millisecond", got[0].TS, base)
	}
}

func (s *suite) docsOrder(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	upsert(t, ix, []recall.Doc{doc("a", "alpha"), doc("b", "beta"), doc("c", "gamma")}, nil)
	got, err := ix.Docs(context.Background(), []string{"c", "missing", "a", "b"})
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	var gotIDs []string
	for _, d := range got {
		gotIDs = append(gotIDs, d.ID)
	}
	if diff := cmp.Diff([]string{"c", "a", "b"}, gotIDs); diff != "" {
		t.Errorf("Docs ids mismatch (-want +got):\n%s", diff)
	}
	got, err = ix.Docs(context.Background(), nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Docs(nil) = %v, %v; want nothing, no error", got, err)
	}
}

func (s *suite) replace(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	upsert(t, ix, []recall.Doc{doc("a", "apples and pears"), doc("b", "bananas")}, [][]float32{vec(ConformanceDim, 1), vec(ConformanceDim, 0, 1)})
	d := doc("a", "oranges and lemons")
	d.Role = "agent"
	d.Salience = 0.5
	upsert(t, ix, []recall.Doc{d}, [][]float32{vec(ConformanceDim, 0, 0, 1)})

	if n, err := ix.Count(ctx); err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
	if got := lexicalIDs(t, ix, "apples", 10, recall.Filter{}); len(got) != 0 {
		t.Errorf("Lexical(old text) = %v, want nothing", got)
	}
	if got := lexicalIDs(t, ix, "lemons", 10, recall.Filter{}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Lexical(new text) = %v, want [a]", got)
	}
	if got := vectorIDs(t, ix, vec(ConformanceDim, 0, 0, 1), 1, recall.Filter{}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Vector(new vector) = %v, want [a]", got)
	}
	if got := lexicalIDs(t, ix, "lemons", 10, recall.Filter{Roles: []string{"user"}}); len(got) != 0 {
		t.Errorf("Lexical(new text, old role) = %v, want nothing", got)
	}
	got, err := ix.Docs(ctx, []string{"a"})
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	if diff := cmp.Diff([]recall.Doc{d}, got, docCmp); diff != "" {
		t.Errorf("Docs after replace (-want +got):\n%s", diff)
	}

	// Replacing with no vector makes the doc lexical-only.
	upsert(t, ix, []recall.Doc{doc("a", "oranges and lemons")}, nil)
	if got := vectorIDs(t, ix, vec(ConformanceDim, 0, 0, 1), 10, recall.Filter{}); slices.Contains(got, "a") {
		t.Errorf("Vector after replacing with no vector = %v, want no a", got)
	}
	// The same id twice in one batch: the last one wins.
	upsert(t, ix, []recall.Doc{doc("c", "first version"), doc("c", "second version")}, nil)
	if got := lexicalIDs(t, ix, "first", 10, recall.Filter{}); len(got) != 0 {
		t.Errorf("Lexical(first of a duplicated batch) = %v, want nothing", got)
	}
	if n, err := ix.Count(ctx); err != nil || n != 3 {
		t.Errorf("Count = %d, %v; want 3", n, err)
	}
}

// context checks recall.Doc.Context: indexed with the document, returned
// by Docs apart from Text, and dropped with it on replace and delete.
func (s *suite) context(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	withCtx := func(id, text, context string) recall.Doc {
		d := doc(id, text)
		d.Context = context
		return d
	}
	docs := []recall.Doc{
		withCtx("a", "that sounds lovely", "my sister moved to Lisbon\nshe loves the trams"),
		withCtx("b", "Lisbon has great pastries", ""),
		withCtx("c", "unrelated chatter", "weather talk"),
	}
	docs = append(docs, filler(6, "f", "filler text")...)
	upsert(t, ix, docs, nil)

	tests := []struct {
		query string
		want  []string // sorted
	}{
		{"sister", []string{"a"}},              // only in a's context
		{"trams", []string{"a"}},               // second context line
		{"Lisbon", []string{"a", "b"}},         // text of one, context of the other
		{"lovely weather", []string{"a", "c"}}, // text of a, context of c
		{"pastries", []string{"b"}},
	}
	for _, tt := range tests {
		if got := sorted(lexicalIDs(t, ix, tt.query, 10, recall.Filter{})); !slices.Equal(got, tt.want) {
			t.Errorf("Lexical(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
	got, err := ix.Docs(ctx, []string{"a", "b", "c"})
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	if diff := cmp.Diff(docs[:3], got, docCmp); diff != "" {
		t.Errorf("Docs mismatch (-want +got):\n%s", diff)
	}

	// Replacing a with another context forgets the old one.
	a := withCtx("a", "that sounds lovely", "my brother plays chess")
	upsert(t, ix, []recall.Doc{a}, nil)
	if got := lexicalIDs(t, ix, "sister", 10, recall.Filter{}); len(got) != 0 {
		t.Errorf("Lexical(old context) = %v, want nothing", got)
	}
	if got := lexicalIDs(t, ix, "chess", 10, recall.Filter{}); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Lexical(new context) = %v, want [a]", got)
	}
	if got := lexicalIDs(t, ix, "Lisbon", 10, recall.Filter{}); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Lexical(Lisbon) after replace = %v, want [b]", got)
	}
	// Deleting c drops the postings of its context.
	if err := ix.Delete(ctx, []string{"c"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := lexicalIDs(t, ix, "weather", 10, recall.Filter{}); len(got) != 0 {
		t.Errorf("Lexical(deleted context) = %v, want nothing", got)
	}
	got, err = ix.Docs(ctx, []string{"a"})
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	if diff := cmp.Diff([]recall.Doc{a}, got, docCmp); diff != "" {
		t.Errorf("Docs after replace (-want +got):\n%s", diff)
	}
}

func (s *suite) delete(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	upsert(t, ix, []recall.Doc{doc("a", "shared apple"), doc("b", "shared banana"), doc("c", "shared cherry")},
		[][]float32{vec(ConformanceDim, 1), vec(ConformanceDim, 1, 0.1), vec(ConformanceDim, 1, 0.2)})
	if err := ix.Delete(ctx, []string{"b", "never-stored"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := ix.Delete(ctx, nil); err != nil {
		t.Errorf("Delete(nil): %v", err)
	}
	if n, err := ix.Count(ctx); err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
	if got := sorted(lexicalIDs(t, ix, "shared", 10, recall.Filter{})); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Lexical after delete = %v, want [a c]", got)
	}
	if got := lexicalIDs(t, ix, "banana", 10, recall.Filter{}); len(got) != 0 {
		t.Errorf("Lexical(deleted text) = %v, want nothing", got)
	}
	if got := sorted(vectorIDs(t, ix, vec(ConformanceDim, 1), 10, recall.Filter{})); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Vector after delete = %v, want [a c]", got)
	}
	if got, err := ix.Docs(ctx, []string{"b"}); err != nil || len(got) != 0 {
		t.Errorf("Docs(deleted) = %v, %v; want nothing", got, err)
	}
	// A deleted id can be stored again.
	upsert(t, ix, []recall.Doc{doc("b", "banana again")}, [][]float32{vec(ConformanceDim, 0, 1)})
	if got := lexicalIDs(t, ix, "banana", 10, recall.Filter{}); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Lexical(re-added) = %v, want [b]", got)
	}
}

// filler returns n docs on other topics, so that document frequencies
// differ between terms.
func filler(n int, prefix, text string) []recall.Doc {
	out := make([]recall.Doc, n)
	for i := range out {
		out[i] = doc(fmt.Sprintf("%s%02d", prefix, i), fmt.Sprintf("%s number %d", text, i))
	}
	return out
}

func (s *suite) lexicalIDF(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	docs := filler(10, "f", "coffee and weather talk")
	docs = append(docs,
		doc("common", "we talked about coffee yesterday"),
		doc("rare", "we talked about espresso yesterday"),
	)
	upsert(t, ix, docs, nil)
	got := lexicalIDs(t, ix, "coffee espresso", 3, recall.Filter{})
	if len(got) == 0 || got[0] != "rare" {
		t.Errorf("Lexical(coffee espresso) = %v, want rare first", got)
	}
	if i := slices.Index(got, "common"); i >= 0 && i < slices.Index(got, "rare") {
		t.Errorf("Lexical(coffee espresso) = %v: common above rare", got)
	}
}

func (s *suite) lexicalSaturation(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	docs := filler(10, "f", "apple orchard visit")
	docs = append(docs,
		doc("repeat", "apple apple apple apple apple apple apple apple apple apple"),
		doc("both", "apple banana one two three four five six seven eight"),
	)
	upsert(t, ix, docs, nil)
	got := lexicalIDs(t, ix, "apple banana", 2, recall.Filter{})
	if len(got) == 0 || got[0] != "both" {
		t.Errorf("Lexical(apple banana) = %v, want both first (term frequency saturates)", got)
	}
}

func (s *suite) lexicalLength(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	docs := filler(10, "f", "garden party plans")
	docs = append(docs,
		doc("short", "guitar lessons"),
		doc("long", "guitar "+strings.Repeat("and then something else entirely unrelated happened ", 8)),
	)
	upsert(t, ix, docs, nil)
	got := lexicalIDs(t, ix, "guitar", 2, recall.Filter{})
	if !slices.Equal(got, []string{"short", "long"}) {
		t.Errorf("Lexical(guitar) = %v, want [short long] (length normalisation)", got)
	}
}

func (s *suite) lexicalTokenizer(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	upsert(t, ix, []recall.Doc{
		doc("hike", "We went HIKING in the mountains!"),
		doc("party", "Caroline's parties are legendary"),
		doc("other", "Nothing to see"),
	}, nil)
	tests := []struct {
		query string
		want  []string
	}{
		{"hike", []string{"hike"}},
		{"Mountain hikes?", []string{"hike"}},
		{"caroline party", []string{"party"}},
		{"the of and", nil},
	}
	for _, tt := range tests {
		got := lexicalIDs(t, ix, tt.query, 10, recall.Filter{})
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Lexical(%q) mismatch (-want +got):\n%s", tt.query, diff)
		}
	}
}

func (s *suite) lexicalEmpty(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	upsert(t, ix, []recall.Doc{doc("a", "something"), doc("b", "")}, nil)
	for _, q := range []string{"", "   ", "?!", "the", "\xff\xfe"} {
		res, err := ix.Lexical(context.Background(), q, 10, recall.Filter{})
		if err != nil || len(res) != 0 {
			t.Errorf("Lexical(%q) = %v, %v; want no results, no error", q, res, err)
		}
	}
	empty := s.index(t, ConformanceDim)
	if res, err := empty.Lexical(context.Background(), "something", 10, recall.Filter{}); err != nil || len(res) != 0 {
		t.Errorf("Lexical on an empty index = %v, %v; want no results, no error", res, err)
	}
	if res, err := empty.Vector(context.Background(), vec(ConformanceDim, 1), 10, recall.Filter{}); err != nil || len(res) != 0 {
		t.Errorf("Vector on an empty index = %v, %v; want no results, no error", res, err)
	}
}

func (s *suite) filters(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	mk := func(id, kind, role, session string, ts time.Time) recall.Doc {
		d := doc(id, "shared topic "+id)
		d.Kind, d.Role, d.Session, d.TS = kind, role, session, ts
		return d
	}
	day := 24 * time.Hour
	docs := []recall.Doc{
		mk("t1", recall.KindTurn, "user", "s1", base),
		mk("t2", recall.KindTurn, "agent", "s1", base.Add(day)),
		mk("t3", recall.KindTurn, "user", "s2", base.Add(2*day)),
		mk("x1", recall.KindTool, "tool", "s1", base.Add(3*day)),
		mk("x2", recall.KindTool, "tool", "s2", base.Add(4*day)),
	}
	vecs := make([][]float32, len(docs))
	for i := range vecs {
		vecs[i] = vec(ConformanceDim, 1, float32(i)/10)
	}
	upsert(t, ix, docs, vecs)
	tests := []struct {
		name string
		f    recall.Filter
		want []string
	}{
		{"none", recall.Filter{}, []string{"t1", "t2", "t3", "x1", "x2"}},
		{"kind", recall.Filter{Kinds: []string{recall.KindTool}}, []string{"x1", "x2"}},
		{"kinds", recall.Filter{Kinds: []string{recall.KindTool, recall.KindTurn}}, []string{"t1", "t2", "t3", "x1", "x2"}},
		{"role", recall.Filter{Roles: []string{"user"}}, []string{"t1", "t3"}},
		{"roles", recall.Filter{Roles: []string{"agent", "tool"}}, []string{"t2", "x1", "x2"}},
		{"unknown role", recall.Filter{Roles: []string{"nobody"}}, nil},
		{"session", recall.Filter{Session: "s2"}, []string{"t3", "x2"}},
		{"since inclusive", recall.Filter{Since: base.Add(3 * day)}, []string{"x1", "x2"}},
		{"until exclusive", recall.Filter{Until: base.Add(day)}, []string{"t1"}},
		{"window", recall.Filter{Since: base.Add(day), Until: base.Add(3 * day)}, []string{"t2", "t3"}},
		{"window in another zone", recall.Filter{Since: base.Add(day).UTC(), Until: base.Add(3 * day).In(time.FixedZone("Y", -5*3600))}, []string{"t2", "t3"}},
		{"combined", recall.Filter{Kinds: []string{recall.KindTurn}, Session: "s1", Roles: []string{"agent"}}, []string{"t2"}},
		{"empty window", recall.Filter{Since: base.Add(day), Until: base.Add(day)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sorted(lexicalIDs(t, ix, "shared topic", 10, tt.f))
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Lexical mismatch (-want +got):\n%s", diff)
			}
			got = sorted(vectorIDs(t, ix, vec(ConformanceDim, 1), 10, tt.f))
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Vector mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// knowledge: sections of knowledge notes live beside turns, their status
// as role, their path as channel, their confidence as salience; a roles
// filter that names statuses narrows notes by status in the same search
// as turns by speaker.
func (s *suite) knowledge(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	note := func(id, status, path string, conf float32) recall.Doc {
		return recall.Doc{ID: id, Kind: recall.KindKnowledge, Role: status, Mode: "text", Channel: path,
			Text: "## Home\nshared topic " + id, Context: "About the owner", TS: base, Salience: conf}
	}
	docs := []recall.Doc{
		doc("t1", "shared topic t1"),
		note("note:A#0", "active", "knowledge/people/ana.md", 0.9),
		note("note:A#1", "active", "knowledge/people/ana.md", 0.9),
		note("note:B#0", "superseded", "knowledge/people/old.md", 0.5),
	}
	vecs := make([][]float32, len(docs))
	for i := range vecs {
		vecs[i] = vec(ConformanceDim, 1, float32(i)/10)
	}
	upsert(t, ix, docs, vecs)
	got, err := ix.Docs(context.Background(), []string{"note:A#1", "note:B#0"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]recall.Doc{docs[2], docs[3]}, got, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("Docs (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		f    recall.Filter
		want []string
	}{
		{"active notes", recall.Filter{Kinds: []string{recall.KindKnowledge}, Roles: []string{"active"}}, []string{"note:A#0", "note:A#1"}},
		{"every note", recall.Filter{Kinds: []string{recall.KindKnowledge}}, []string{"note:A#0", "note:A#1", "note:B#0"}},
		{"turns and active notes", recall.Filter{Roles: []string{"user", "agent", "tool", "active"}}, []string{"note:A#0", "note:A#1", "t1"}},
		{"turns only", recall.Filter{Kinds: []string{recall.KindTurn}}, []string{"t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sorted(lexicalIDs(t, ix, "shared topic", 10, tt.f))
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Lexical mismatch (-want +got):\n%s", diff)
			}
			got = sorted(vectorIDs(t, ix, vec(ConformanceDim, 1), 10, tt.f))
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Vector mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func (s *suite) vectorCosine(t *testing.T) {
	const dim = 4
	ix := s.index(t, dim)
	upsert(t, ix, []recall.Doc{doc("near", "a"), doc("big", "b"), doc("far", "c"), doc("opposite", "d"), doc("ortho", "e")}, [][]float32{
		{1, 0.1, 0, 0},    // cos ≈ 0.995
		{10, 10, 0, 0},    // cos ≈ 0.707, but the largest dot product
		{0.2, 1, 0, 0},    // cos ≈ 0.196
		{-1, 0, 0, 0},     // cos = -1
		{0, 0, 0.5, -0.5}, // cos = 0
	})
	got := vectorIDs(t, ix, []float32{3, 0, 0, 0}, 5, recall.Filter{})
	if want := []string{"near", "big", "far", "ortho", "opposite"}; !slices.Equal(got, want) {
		t.Errorf("Vector = %v, want %v (cosine, not dot product)", got, want)
	}
	got = vectorIDs(t, ix, []float32{3, 0, 0, 0}, 2, recall.Filter{})
	if want := []string{"near", "big"}; !slices.Equal(got, want) {
		t.Errorf("Vector(k=2) = %v, want %v", got, want)
	}
}

func (s *suite) vectorDimension(t *testing.T) {
	for _, dim := range []int{3, 16} {
		t.Run(fmt.Sprint(dim), func(t *testing.T) {
			ix := s.index(t, dim)
			ctx := context.Background()
			upsert(t, ix, []recall.Doc{doc("ok", "fine")}, [][]float32{vec(dim, 1)})
			for _, bad := range [][]float32{vec(dim - 1), vec(dim + 1), nil} {
				err := ix.Upsert(ctx, []recall.Doc{doc("bad", "x")}, [][]float32{bad})
				if !errors.Is(err, recall.ErrDimension) {
					t.Errorf("Upsert(len %d vector) error = %v, want ErrDimension", len(bad), err)
				}
				_, err = ix.Vector(ctx, bad, 10, recall.Filter{})
				if !errors.Is(err, recall.ErrDimension) {
					t.Errorf("Vector(len %d) error = %v, want ErrDimension", len(bad), err)
				}
			}
			if got, err := ix.Docs(ctx, []string{"bad"}); err != nil || len(got) != 0 {
				t.Errorf("Docs(rejected) = %v, %v; want nothing stored", got, err)
			}
		})
	}
}

func (s *suite) vectorCountMismatch(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	err := ix.Upsert(context.Background(), []recall.Doc{doc("a", "x"), doc("b", "y")}, [][]float32{vec(ConformanceDim, 1)})
	if err == nil {
		t.Errorf("Upsert(2 docs, 1 vector) succeeded, want an error")
	}
}

func (s *suite) lexicalOnlyDocs(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	upsert(t, ix, []recall.Doc{doc("v1", "shared words one"), doc("v2", "shared words two")}, [][]float32{vec(ConformanceDim, 1), vec(ConformanceDim, 0, 1)})
	upsert(t, ix, []recall.Doc{doc("l1", "shared words three"), doc("l2", "shared words four")}, nil)
	if got := sorted(vectorIDs(t, ix, vec(ConformanceDim, 1, 1), 10, recall.Filter{})); !slices.Equal(got, []string{"v1", "v2"}) {
		t.Errorf("Vector = %v, want only [v1 v2]", got)
	}
	if got := sorted(lexicalIDs(t, ix, "shared words", 10, recall.Filter{})); !slices.Equal(got, []string{"l1", "l2", "v1", "v2"}) {
		t.Errorf("Lexical = %v, want all four", got)
	}
}

func (s *suite) kLarge(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	upsert(t, ix, []recall.Doc{doc("a", "word"), doc("b", "word"), doc("c", "other")}, [][]float32{vec(ConformanceDim, 1), vec(ConformanceDim, 1, 1), vec(ConformanceDim, 0, 1)})
	if got := sorted(lexicalIDs(t, ix, "word", 1000, recall.Filter{})); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Lexical(k=1000) = %v, want [a b]", got)
	}
	if got := vectorIDs(t, ix, vec(ConformanceDim, 1), 1000, recall.Filter{}); len(got) != 3 {
		t.Errorf("Vector(k=1000) = %v, want all 3", got)
	}
}

func (s *suite) meta(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	if v, ok, err := ix.Meta(ctx, "cursor"); err != nil || ok || v != "" {
		t.Errorf("Meta(unset) = %q, %v, %v; want \"\", false, nil", v, ok, err)
	}
	sets := []struct{ k, v string }{
		{"cursor", "01J00000000000000000000001"},
		{"embedder", "wink-sif-100@100"},
		{"cursor", "01J00000000000000000000002"},
		{"empty", ""},
		{"unicode ✓", "値\nwith newline"},
	}
	for _, kv := range sets {
		if err := ix.SetMeta(ctx, kv.k, kv.v); err != nil {
			t.Fatalf("SetMeta(%q): %v", kv.k, err)
		}
	}
	want := map[string]string{"cursor": "01J00000000000000000000002", "embedder": "wink-sif-100@100", "empty": "", "unicode ✓": "値\nwith newline"}
	for k, w := range want {
		v, ok, err := ix.Meta(ctx, k)
		if err != nil || !ok || v != w {
			t.Errorf("Meta(%q) = %q, %v, %v; want %q, true, nil", k, v, ok, err, w)
		}
	}
	// Meta is not a document.
	if n, err := ix.Count(ctx); err != nil || n != 0 {
		t.Errorf("Count with only meta = %d, %v; want 0", n, err)
	}
}

func (s *suite) countReset(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	if n, err := ix.Count(ctx); err != nil || n != 0 {
		t.Errorf("Count(empty) = %d, %v; want 0", n, err)
	}
	docs := filler(25, "d", "reset me")
	vecs := make([][]float32, len(docs))
	for i := range vecs {
		vecs[i] = vec(ConformanceDim, 1, float32(i))
	}
	upsert(t, ix, docs, vecs)
	if err := ix.SetMeta(ctx, "cursor", "x"); err != nil {
		t.Fatalf("SetMeta: %v", err)
	}
	if n, err := ix.Count(ctx); err != nil || n != 25 {
		t.Errorf("Count = %d, %v; want 25", n, err)
	}
	if err := ix.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if n, err := ix.Count(ctx); err != nil || n != 0 {
		t.Errorf("Count after Reset = %d, %v; want 0", n, err)
	}
	if got := lexicalIDs(t, ix, "reset", 100, recall.Filter{}); len(got) != 0 {
		t.Errorf("Lexical after Reset = %v, want nothing", got)
	}
	if got := vectorIDs(t, ix, vec(ConformanceDim, 1), 100, recall.Filter{}); len(got) != 0 {
		t.Errorf("Vector after Reset = %v, want nothing", got)
	}
	if _, ok, err := ix.Meta(ctx, "cursor"); err != nil || ok {
		t.Errorf("Meta after Reset: ok = %v, err = %v; want unset", ok, err)
	}
	// Usable after Reset.
	upsert(t, ix, []recall.Doc{doc("new", "fresh start")}, [][]float32{vec(ConformanceDim, 1)})
	if got := lexicalIDs(t, ix, "fresh", 10, recall.Filter{}); !slices.Equal(got, []string{"new"}) {
		t.Errorf("Lexical after Reset and Upsert = %v, want [new]", got)
	}
	if got := vectorIDs(t, ix, vec(ConformanceDim, 1), 10, recall.Filter{}); !slices.Equal(got, []string{"new"}) {
		t.Errorf("Vector after Reset and Upsert = %v, want [new]", got)
	}
}

func (s *suite) concurrent(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	const writers, batches, per, readers = 4, 8, 5, 4
	errs := make(chan error, writers*batches+readers*batches*4)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				docs := make([]recall.Doc, per)
				vecs := make([][]float32, per)
				for i := range docs {
					n := (w*batches+b)*per + i
					docs[i] = doc(fmt.Sprintf("w%d-%d", w, n), fmt.Sprintf("concurrent doc %d from writer %d", n, w))
					vecs[i] = vec(ConformanceDim, 1, float32(n%7), float32(w))
				}
				if err := ix.Upsert(ctx, docs, vecs); err != nil {
					errs <- fmt.Errorf("Upsert: %w", err)
				}
				if err := ix.SetMeta(ctx, fmt.Sprintf("writer%d", w), fmt.Sprint(b)); err != nil {
					errs <- fmt.Errorf("SetMeta: %w", err)
				}
			}
		})
	}
	for r := range readers {
		wg.Go(func() {
			for range batches {
				if _, err := ix.Lexical(ctx, "concurrent doc writer", 10, recall.Filter{}); err != nil {
					errs <- fmt.Errorf("Lexical: %w", err)
				}
				res, err := ix.Vector(ctx, vec(ConformanceDim, 1, float32(r)), 10, recall.Filter{})
				if err != nil {
					errs <- fmt.Errorf("Vector: %w", err)
				}
				if _, err := ix.Docs(ctx, ids(res)); err != nil {
					errs <- fmt.Errorf("Docs: %w", err)
				}
				if _, err := ix.Count(ctx); err != nil {
					errs <- fmt.Errorf("Count: %w", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, err := ix.Count(ctx); err != nil || n != writers*batches*per {
		t.Errorf("Count = %d, %v; want %d", n, err, writers*batches*per)
	}
	if got := lexicalIDs(t, ix, "concurrent", 1000, recall.Filter{}); len(got) != writers*batches*per {
		t.Errorf("Lexical(concurrent) found %d docs, want %d", len(got), writers*batches*per)
	}
}

// awkwardTexts checks that odd texts never break the index. Texts that
// are valid UTF-8 and of a sane size must be stored and found; the others
// may be rejected with an error, but must not panic or poison the index.
func (s *suite) awkwardTexts(t *testing.T) {
	ix := s.index(t, ConformanceDim)
	ctx := context.Background()
	fine := []recall.Doc{
		doc("empty", ""),
		doc("spaces", " \t\n "),
		doc("emoji", "I love 🍕 pizza 🎉🎉 and 👨‍👩‍👧 family time"),
		doc("code", "```go\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n```"),
		doc("cjk", "我喜欢喝咖啡"),
		doc("long", strings.Repeat("lorem ipsum dolor sit amet ", 4000)+"needle"),
		doc("control", "tab\there\x00nul\x1bescape"),
	}
	vecs := make([][]float32, len(fine))
	for i := range vecs {
		vecs[i] = vec(ConformanceDim, 1, float32(i))
	}
	upsert(t, ix, fine, vecs)
	got, err := ix.Docs(ctx, []string{"empty", "emoji", "code", "cjk", "long", "control"})
	if err != nil {
		t.Fatalf("Docs: %v", err)
	}
	if diff := cmp.Diff([]recall.Doc{fine[0], fine[2], fine[3], fine[4], fine[5], fine[6]}, got, docCmp); diff != "" {
		t.Errorf("Docs mismatch (-want +got):\n%s", diff)
	}
	tests := []struct{ q, want string }{
		{"pizza", "emoji"},
		{"println", "code"},
		{"咖啡", "cjk"},
		{"needle", "long"},
		{"escape", "control"},
	}
	for _, tt := range tests {
		if got := lexicalIDs(t, ix, tt.q, 10, recall.Filter{}); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("Lexical(%q) = %v, want [%s]", tt.q, got, tt.want)
		}
	}

	// Hostile input: may be rejected, must not panic or break the index.
	hostile := []recall.Doc{
		doc("invalid", "abc\xff\xfedef \xc3"),
		doc("huge", strings.Repeat("word ", 1<<20/5*3)),
		doc("nulid\x00", "id with a nul"),
		doc("", "empty id"),
	}
	for _, d := range hostile {
		_ = ix.Upsert(ctx, []recall.Doc{d}, [][]float32{vec(ConformanceDim, 0, 1)})
		_, _ = ix.Lexical(ctx, d.Text, 10, recall.Filter{})
	}
	if got := lexicalIDs(t, ix, "pizza", 10, recall.Filter{}); !slices.Equal(got, []string{"emoji"}) {
		t.Errorf("Lexical(pizza) after hostile input = %v, want [emoji]", got)
	}
	for _, q := range []string{"\xff\xfe", strings.Repeat("🍕", 10000), strings.Repeat("needle ", 100000)} {
		if _, err := ix.Lexical(ctx, q, 10, recall.Filter{}); err != nil {
			t.Errorf("Lexical(hostile query of %d bytes): %v", len(q), err)
		}
	}
	for _, v := range [][]float32{vec(ConformanceDim), vec(ConformanceDim, float32(math.NaN())), vec(ConformanceDim, float32(math.Inf(1)))} {
		_, _ = ix.Vector(ctx, v, 10, recall.Filter{})
	}
}
