package recallbench

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/mnemo/mnemo/memory/graph"
)

// TestExpandSearch: a query naming an entity of the group is searched
// again with its neighbours' names, and the rankings fused; a query
// naming none is searched once.
func TestExpandSearch(t *testing.T) {
	b, err := os.ReadFile("../../data/vault/config/archetype.yml")
	if err != nil {
		t.Fatal(err)
	}
	arch, err := graph.ParseArchetype(b)
	if err != nil {
		t.Fatal(err)
	}
	g := &Group{ID: "g", Docs: []Doc{
		{ID: "d1", Text: "I had lunch with Ana in Lisbon."},
		{ID: "d2", Text: "The bakery in Lisbon opens early."},
	}}
	var asked []string
	search := func(_ context.Context, q SearchQuery) ([]string, error) {
		asked = append(asked, q.Text)
		if q.Text == "where is Ana" {
			return []string{"d1"}, nil
		}
		return []string{"d2", "d1"}, nil
	}
	x := expandSearch(search, GroupGraph(g, arch))
	tests := []struct {
		query     string
		wantAsked []string
		want      []string
	}{
		{"where is Ana", []string{"where is Ana", "where is Ana Lisbon"}, []string{"d1", "d2"}},
		{"what opens early", []string{"what opens early"}, []string{"d2", "d1"}},
	}
	for _, tt := range tests {
		asked = nil
		got, err := x(context.Background(), SearchQuery{Text: tt.query, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(asked, tt.wantAsked) || !slices.Equal(got, tt.want) {
			t.Errorf("%q: asked %q, ranked %q; want %q, %q", tt.query, asked, got, tt.wantAsked, tt.want)
		}
	}
}
