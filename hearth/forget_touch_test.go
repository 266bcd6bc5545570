package hearth

import (
	"testing"

	"github.com/mnemo/mnemo/memory/vault"
)

// TestTouches: which notes a forget reaches. Ids are global and sort in
// journal order; main's and side's records interleave (M1 < S1 < M2 <
// S2 < M3).
func TestTouches(t *testing.T) {
	const (
		m1 = "01KAK3J7Y0Q2V5S8WZ3C9D4E61"
		s1 = "01KAK3J7Y0Q2V5S8WZ3C9D4E62"
		m2 = "01KAK3J7Y0Q2V5S8WZ3C9D4E63"
		s2 = "01KAK3J7Y0Q2V5S8WZ3C9D4E64"
		m3 = "01KAK3J7Y0Q2V5S8WZ3C9D4E65"
	)
	src := func(conv string, ids ...string) []vault.Source {
		var out []vault.Source
		for _, id := range ids {
			out = append(out, vault.Source{Thread: conv, Turn: id})
		}
		return out
	}
	mainSum := "summaries/threads/main-" + m1 + ".md"
	session := "summaries/threads/2026-01-01-" + "01kak3j7y0q2v5s8wz3c9d4e61" + ".md"
	for _, tc := range []struct {
		name    string
		path    string
		srcs    []vault.Source
		gone    map[string]string
		summary bool
		want    bool
	}{
		{"note cites it", "knowledge/a.md", src("main", m1), map[string]string{m1: "main"}, false, true},
		{"note spans it, cites it not", "knowledge/a.md", src("main", m1, m3), map[string]string{m2: "main"}, false, false},
		{"thread summary spans its own", mainSum, src("main", m1, m3), map[string]string{m2: "main"}, true, true},
		{"thread summary spans another's", mainSum, src("main", m1, m3), map[string]string{s1: "side"}, true, false},
		{"thread summary, conversation not known", mainSum, src("main", m1, m3), map[string]string{s1: ""}, true, true},
		{"thread summary cites another's", mainSum, src("main", m1, s2), map[string]string{s2: "side"}, true, true},
		{"session summary spans any", session, src("main", m1, m3), map[string]string{s2: "side"}, true, true},
		{"daily summary spans any", "summaries/daily/2026-01-01.md", src("main", m1, m3), map[string]string{s1: "side"}, true, true},
		{"outside the span", mainSum, src("main", m1, m2), map[string]string{m3: "main"}, true, false},
		{"no sources", mainSum, nil, map[string]string{m1: "main"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := touches(tc.path, tc.srcs, tc.gone, tc.summary); got != tc.want {
				t.Errorf("touches = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSummaryKinds: a flush's thread summary names its conversation; a
// session's names its first record; neither is the other, nor is a
// daily summary either.
func TestSummaryKinds(t *testing.T) {
	const id = "01KAK3J7Y0Q2V5S8WZ3C9D4E6F"
	for _, tc := range []struct {
		path, conv, first string
	}{
		{"summaries/threads/main-" + id + ".md", "main", ""},
		{"summaries/threads/work-notes-" + id + ".md", "work-notes", ""},
		{"summaries/threads/2026-01-01-01kak3j7y0q2v5s8wz3c9d4e6f.md", "", id},
		{"summaries/daily/2026-01-01.md", "", ""},
		{"summaries/threads/main-a.md", "", ""},
		{"knowledge/threads/main-" + id + ".md", "", ""},
		{"summaries/threads/2026-13-01-01kak3j7y0q2v5s8wz3c9d4e6f.md", "", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := summaryConv(tc.path); got != tc.conv {
				t.Errorf("summaryConv = %q, want %q", got, tc.conv)
			}
			first, ok := sessionSummary(tc.path)
			if ok != (tc.first != "") || first != tc.first {
				t.Errorf("sessionSummary = %q, %v, want %q", first, ok, tc.first)
			}
		})
	}
}
