package curator

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/memory/graph"
	"github.com/mnemo/mnemo/memory/journal"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func archetypeFile(t *testing.T, path string) graph.Archetype {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := graph.ParseArchetype(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSystemPromptGolden: the curator's system prompt is the vault's
// prompt, then the archetype's extraction instructions and types; the
// shipped companion archetype and a research one (another file, no code)
// tell it different things. go test -run SystemPrompt -update rewrites
// the golden files.
func TestSystemPromptGolden(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"companion", "../../data/vault/config/archetype.yml"},
		{"research", "testdata/prompt/research.yml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SystemPrompt(DefaultPrompt, archetypeFile(t, tc.file))
			checkGolden(t, filepath.Join("testdata", "prompt", tc.name+".golden"), got)
		})
	}
}

// checkGolden compares got with the golden file, which -update rewrites.
func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("differs from %s (-update to accept):\n%s", golden, got)
	}
}

// The schema with an archetype asks for entities and relations of its
// types only; Decode refuses the others, and those citing what the model
// was not shown, and relations between names the reply does not name.
func TestDecodeEntities(t *testing.T) {
	recs := []journal.Record{{ID: "01KAK3J7Y0Q2V5S8WZ3C9D4E6F", Role: "user", Text: "Ana read the LoCoMo paper by Maharana."}}
	reply := `{"ops":[],"questions":[],
	  "entities":[
	    {"name":"Ana","type":"person","aliases":["Ana Lima"],"sources":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"]},
	    {"name":"LoCoMo","type":"paper","aliases":[],"sources":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"]},
	    {"name":"Maharana","type":"author","aliases":[],"sources":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"]},
	    {"name":"Lisbon","type":"place","aliases":[],"sources":["01ARZ3NDEKTSV4RRFFQ69G5FAV"]}],
	  "relations":[
	    {"from":"Maharana","to":"LoCoMo","type":"wrote","sources":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"]},
	    {"from":"Ana","to":"LoCoMo","type":"knows","sources":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"]},
	    {"from":"Ana","to":"Rui","type":"knows","sources":["01KAK3J7Y0Q2V5S8WZ3C9D4E6F"]}]}`
	tests := []struct {
		name          string
		file          string
		ents, rels    []string // accepted, name:type / from>to:type
		rejectedTypes int
	}{
		{"companion", "../../data/vault/config/archetype.yml", []string{"Ana:person"}, []string{}, 0},
		{"research", "testdata/prompt/research.yml", []string{"LoCoMo:paper", "Maharana:author"}, []string{"Maharana>LoCoMo:wrote"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := ExtractionOf(archetypeFile(t, tt.file))
			var schema map[string]any
			if err := json.Unmarshal(SchemaWith(x), &schema); err != nil {
				t.Fatal(err)
			}
			enum := schema["properties"].(map[string]any)["entities"].(map[string]any)["items"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["enum"]
			b, _ := json.Marshal(enum)
			want, _ := json.Marshal(x.EntityTypes)
			if string(b) != string(want) || !slices.Contains(schema["required"].([]any), any("entities")) {
				t.Errorf("schema's entity types %s, want %s", b, want)
			}
			res, err := Decode([]byte(reply), Input{Thread: "main", Records: recs, Extraction: x})
			if err != nil {
				t.Fatal(err)
			}
			var ents, rels []string
			for _, e := range res.Entities {
				ents = append(ents, e.Name+":"+e.Type)
			}
			for _, r := range res.Relations {
				rels = append(rels, r.From+">"+r.To+":"+r.Type)
			}
			if !slices.Equal(ents, tt.ents) || !slices.Equal(rels, tt.rels) && len(rels)+len(tt.rels) > 0 {
				t.Errorf("entities %q relations %q, want %q %q", ents, rels, tt.ents, tt.rels)
			}
			if len(res.Rejected) != 7-len(ents)-len(rels) {
				t.Errorf("rejected %+v", res.Rejected)
			}
			for _, r := range res.Rejected {
				if r.Op != "entity" && r.Op != "relation" || !strings.Contains(r.Why, "type") && !strings.Contains(r.Why, "cites") && !strings.Contains(r.Why, "between two entities") {
					t.Errorf("rejection %+v", r)
				}
			}
		})
	}
}
