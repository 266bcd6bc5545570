package curator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/memory/journal"
)

func TestDecodeRewrite(t *testing.T) {
	tests := []struct {
		name, reply string
		want        Rewrite
		err         string
	}{
		{"rewrite", `{"action":"rewrite","title":"Garden","body":"Tomatoes at the allotment.","reason":"a place was taken out"}`,
			Rewrite{Title: "Garden", Body: "Tomatoes at the allotment.", Reason: "a place was taken out"}, ""},
		{"remove", `{"action":"remove","title":null,"body":null,"reason":"nothing is left"}`, Rewrite{Remove: true, Reason: "nothing is left"}, ""},
		{"remove drops text", `{"action":"remove","title":"x","body":"y","reason":"nothing is left"}`, Rewrite{Remove: true, Reason: "nothing is left"}, ""},
		{"no body", `{"action":"rewrite","title":"Garden","body":null,"reason":"r"}`, Rewrite{}, "needs a title and a body"},
		{"no reason", `{"action":"remove","title":null,"body":null,"reason":" "}`, Rewrite{}, "no reason"},
		{"bad action", `{"action":"keep","title":null,"body":null,"reason":"r"}`, Rewrite{}, `action "keep"`},
		{"unknown field", `{"action":"remove","title":null,"body":null,"reason":"r","extra":1}`, Rewrite{}, "unknown field"},
		{"not json", `sure, here it is`, Rewrite{}, "not a JSON object"},
		{"trailing", `{"action":"remove","title":null,"body":null,"reason":"r"} {}`, Rewrite{}, "data after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRewrite([]byte(tt.reply))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// FuzzDecodeRewrite: any reply decodes or is refused, never a panic, and
// what decodes is whole.
func FuzzDecodeRewrite(f *testing.F) {
	f.Add([]byte(`{"action":"rewrite","title":"Garden","body":"Tomatoes.","reason":"r"}`))
	f.Add([]byte(`{"action":"remove","title":null,"body":null,"reason":"r"}`))
	f.Add([]byte(`{"action":"rewrite"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRewrite(b)
		if err != nil {
			return
		}
		if r.Reason == "" || (!r.Remove && (r.Title == "" || r.Body == "")) || (r.Remove && r.Body != "") {
			t.Fatalf("decoded an incomplete rewrite: %+v", r)
		}
	})
}

// TestRewriteMessageGolden: what the rewrite pass is sent, system prompt
// and message, for a note two of whose three sources were forgotten: its
// title, type and tags and the record it still cites, never its old
// text. The shipped prompts/rewrite.system.md says what RewritePrompt
// says. go test -run RewriteMessage -update rewrites the golden file.
func TestRewriteMessageGolden(t *testing.T) {
	recs := []journal.Record{{ID: "01KAK3J7Y0Q2V5S8WZ3C9D4E6F", Role: "user", Mode: "text", Text: "The tomatoes go along the south fence."}}
	got := RewritePrompt + "\n---\n" + RewriteMessage(RewriteNote{Path: "knowledge/projects/garden.md", Title: "Garden", Type: "project", Tags: []string{"garden", "spring"}}, "main", recs)
	checkGolden(t, filepath.Join("testdata", "prompt", "rewrite.golden"), got)
	shipped, err := os.ReadFile("../../data/vault/prompts/rewrite.system.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(shipped) != RewritePrompt {
		t.Errorf("the shipped prompts/rewrite.system.md is not RewritePrompt:\n%s", shipped)
	}
}
