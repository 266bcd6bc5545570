package curator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

const (
	recUser  = "01JDQ0000000000000000000U1"
	recAgent = "01JDQ0000000000000000000A1"
)

var existingNote = "---\nid: 01JDQ000000000000000000N01\ntitle: Garden\ntype: project\nconfidence: 0.8\n---\nTomatoes on the balcony.\n"

func testInput() Input {
	return Input{
		Thread: "main",
		Records: []journal.Record{
			{ID: recUser, Role: "user", Text: "I moved the tomatoes to the allotment on Elm Street."},
			{ID: recAgent, Role: "agent", Text: "Noted."},
		},
		Read: func(p string) ([]byte, error) {
			if p == "knowledge/projects/garden.md" {
				return []byte(existingNote), nil
			}
			return nil, nil
		},
		Now: func() time.Time { return time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC) },
	}
}

// op returns one op of the schema as JSON, every property present, with
// overrides applied.
func op(over map[string]any) string {
	o := map[string]any{
		"op": "create", "path": "knowledge/projects/allotment.md", "title": "Allotment", "body": "The tomatoes grow at the allotment on Elm Street.",
		"note_type": "project", "tags": []string{"garden"}, "confidence": 0.9, "patch": nil,
		"reason": "the person said where the tomatoes are now", "sources": []string{recUser},
		"risk": "low", "domains": []string{}, "inferred": false, "supersedes": []string{}, "contradicts": false,
	}
	for k, v := range over {
		if v == "DELETE" {
			delete(o, k)
			continue
		}
		o[k] = v
	}
	b, _ := json.Marshal(o)
	return string(b)
}

func reply(qs string, ops ...string) string {
	if qs == "" {
		qs = "[]"
	}
	return `{"ops":[` + strings.Join(ops, ",") + `],"questions":` + qs + `}`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name      string
		reply     string
		wantErr   string
		proposals int
		questions int
		none      bool
		rejected  []string // the reasons, in order (substrings)
		check     func(t *testing.T, r Result)
	}{
		{name: "not json", reply: `I think the person likes tomatoes`, wantErr: "not a JSON object"},
		{name: "truncated", reply: `{"ops":[`, wantErr: "curator reply"},
		{name: "array", reply: `[]`, wantErr: "not a JSON object"},
		{name: "unknown top field", reply: `{"ops":[],"questions":[],"mood":"good"}`, wantErr: "unknown field"},
		{name: "no ops", reply: `{"questions":[]}`, wantErr: "no ops"},
		{name: "trailing data", reply: `{"ops":[],"questions":[]} {}`, wantErr: "after the JSON"},
		{name: "explicit none", reply: reply("", `{"op":"none","path":"","title":null,"body":null,"note_type":null,"tags":null,"confidence":null,"patch":null,"reason":"small talk","sources":[],"risk":"low","domains":[],"inferred":false,"supersedes":[],"contradicts":false}`), none: true},
		{name: "empty ops", reply: reply(""), none: true},
		{
			name: "good create", reply: reply("", op(nil)), proposals: 1,
			check: func(t *testing.T, r Result) {
				p := r.Proposals[0]
				if p.Op != vault.OpCreate || p.Author != vault.AuthorCurator || p.Base != "" || len(p.Sources) != 1 || p.Sources[0] != (vault.Source{Thread: "main", Turn: recUser}) {
					t.Errorf("proposal %+v", p)
				}
				n, err := vault.ParseNote(p.Path, []byte(p.Content))
				if err != nil || n.Title != "Allotment" || n.Confidence != 0.9 || len(n.Sources) != 1 {
					t.Errorf("note %+v, %v", n, err)
				}
			},
		},
		{name: "hallucinated source", reply: reply("", op(map[string]any{"sources": []string{"01JDQ0000000000000000000ZZ"}})), rejected: []string{"not in the conversation"}},
		{name: "sourceless", reply: reply("", op(map[string]any{"sources": []string{}})), rejected: []string{"no sources"}},
		{name: "no reason", reply: reply("", op(map[string]any{"reason": " "})), rejected: []string{"no reason"}},
		{name: "path outside notes", reply: reply("", op(map[string]any{"path": "prompts/curator.system.md"})), rejected: []string{"under knowledge/ or summaries/"}},
		{name: "path escapes", reply: reply("", op(map[string]any{"path": "knowledge/../inbox/x.md"})), rejected: []string{"want a .md file"}},
		{name: "dot file", reply: reply("", op(map[string]any{"path": "knowledge/.x.md"})), rejected: []string{"no dot files"}},
		{name: "unknown op", reply: reply("", op(map[string]any{"op": "merge"})), rejected: []string{"op \"merge\""}},
		{name: "unknown field in op", reply: reply("", op(map[string]any{"mood": 1})), rejected: []string{"unknown field"}},
		{name: "wrong type", reply: reply("", op(map[string]any{"confidence": "high"})), rejected: []string{"breaks the schema"}},
		{name: "confidence out of range", reply: reply("", op(map[string]any{"confidence": 7})), rejected: []string{"confidence"}},
		{name: "bad risk", reply: reply("", op(map[string]any{"risk": "none"})), rejected: []string{"risk"}},
		{name: "create over existing", reply: reply("", op(map[string]any{"path": "knowledge/projects/garden.md"})), rejected: []string{"exists: update it"}},
		{name: "update missing", reply: reply("", op(map[string]any{"op": "update"})), rejected: []string{"does not exist: create it"}},
		{
			name: "update replaces, keeps id", reply: reply("", op(map[string]any{"op": "update", "path": "knowledge/projects/garden.md", "title": "Garden", "body": "Tomatoes at the allotment."})), proposals: 1,
			check: func(t *testing.T, r Result) {
				p := r.Proposals[0]
				n, err := vault.ParseNote(p.Path, []byte(p.Content))
				if err != nil || n.ID != "01JDQ000000000000000000N01" || p.Base != vault.Hash([]byte(existingNote)) {
					t.Errorf("note %+v base %s err %v", n, p.Base, err)
				}
			},
		},
		{
			name: "update patches", reply: reply("", op(map[string]any{"op": "update", "path": "knowledge/projects/garden.md", "title": nil, "body": nil, "confidence": nil, "patch": map[string]any{"body_append": "Moved to Elm Street.", "tags_add": nil, "confirmed": nil}})), proposals: 1,
			check: func(t *testing.T, r Result) {
				if p := r.Proposals[0]; p.Patch == nil || p.Patch.BodyAppend != "Moved to Elm Street." || p.Content != "" {
					t.Errorf("proposal %+v", p)
				}
			},
		},
		{name: "patch and body", reply: reply("", op(map[string]any{"op": "update", "path": "knowledge/projects/garden.md", "patch": map[string]any{"body_append": "x", "tags_add": nil, "confirmed": nil}})), rejected: []string{"not both"}},
		{name: "empty patch", reply: reply("", op(map[string]any{"op": "update", "path": "knowledge/projects/garden.md", "title": nil, "body": nil, "confidence": nil, "patch": map[string]any{"body_append": "", "tags_add": nil, "confirmed": nil}})), rejected: []string{"changes nothing"}},
		{name: "deprecate", reply: reply("", op(map[string]any{"op": "deprecate", "path": "knowledge/projects/garden.md", "title": nil, "body": nil})), proposals: 1},
		{name: "deprecate with content", reply: reply("", op(map[string]any{"op": "deprecate", "path": "knowledge/projects/garden.md"})), rejected: []string{"takes no content"}},
		{
			name: "contradiction supersedes", reply: reply("", op(map[string]any{"supersedes": []string{"knowledge/projects/garden.md"}, "contradicts": true})), proposals: 1,
			check: func(t *testing.T, r Result) {
				if p := r.Proposals[0]; !p.Contradicts || len(p.Supersedes) != 1 {
					t.Errorf("proposal %+v", p)
				}
			},
		},
		{name: "contradicts nothing named", reply: reply("", op(map[string]any{"contradicts": true})), rejected: []string{"name the notes it contradicts"}},
		{name: "supersedes missing note", reply: reply("", op(map[string]any{"supersedes": []string{"knowledge/projects/gone.md"}})), rejected: []string{"does not exist"}},
		{
			name: "inferred is a draft", reply: reply("", op(map[string]any{"inferred": true})), proposals: 1,
			check: func(t *testing.T, r Result) {
				n, _ := vault.ParseNote(r.Proposals[0].Path, []byte(r.Proposals[0].Content))
				if n == nil || n.Status != vault.Draft || !r.Proposals[0].Inferred {
					t.Errorf("note %+v", n)
				}
			},
		},
		{
			name: "sensitive domains kept", reply: reply("", op(map[string]any{"domains": []string{"Health", "health"}, "risk": "high"})), proposals: 1,
			check: func(t *testing.T, r Result) {
				if p := r.Proposals[0]; len(p.Domains) != 1 || p.Domains[0] != "health" || p.Risk != "high" {
					t.Errorf("proposal %+v", p)
				}
			},
		},
		{
			name: "one bad op, one good", reply: reply("", op(map[string]any{"sources": []string{"nope"}}), op(map[string]any{"path": "knowledge/projects/b.md"})),
			proposals: 1, rejected: []string{"not in the conversation"},
		},
		{
			name: "questions", reply: reply(`[{"text":"Is the allotment yours or shared?","reason":"ownership unclear","sources":["` + strings.ToLower(recUser) + `"]},{"text":"?","reason":"x","sources":["nope"]},{"text":"","reason":"x","sources":[]}]`),
			questions: 1, rejected: []string{"not in the conversation", "without text"},
			check: func(t *testing.T, r Result) {
				if q := r.Questions[0]; q.Author != vault.AuthorCurator || q.Sources[0].Turn != recUser {
					t.Errorf("question %+v", q)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Decode([]byte(tt.reply), testInput())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(r.Proposals) != tt.proposals || len(r.Questions) != tt.questions || r.None != tt.none {
				t.Fatalf("got %d proposals, %d questions, none %v; want %d, %d, %v (rejected %+v)", len(r.Proposals), len(r.Questions), r.None, tt.proposals, tt.questions, tt.none, r.Rejected)
			}
			if len(r.Rejected) != len(tt.rejected) {
				t.Fatalf("rejected %+v, want %q", r.Rejected, tt.rejected)
			}
			for i, w := range tt.rejected {
				if !strings.Contains(r.Rejected[i].Why, w) {
					t.Errorf("rejection %d: %q, want %q", i, r.Rejected[i].Why, w)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestSchemaIsStrict: the schema is valid JSON, and in the strict
// subset every object lists all its properties as required and allows no
// others, or providers refuse it.
func TestSchemaIsStrict(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(Schema, &s); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v map[string]any)
	walk = func(path string, v map[string]any) {
		if props, ok := v["properties"].(map[string]any); ok {
			if v["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties is not false", path)
			}
			req, _ := v["required"].([]any)
			if len(req) != len(props) {
				t.Errorf("%s: %d required of %d properties", path, len(req), len(props))
			}
			for k, p := range props {
				walk(path+"."+k, p.(map[string]any))
			}
		}
		if items, ok := v["items"].(map[string]any); ok {
			walk(path+"[]", items)
		}
	}
	walk("$", s)
}

// FuzzDecode: whatever the model says, Decode neither panics nor lets
// through a proposal that cites a record it was not shown or writes
// outside the notes.
func FuzzDecode(f *testing.F) {
	f.Add(reply("", op(nil)))
	f.Add(reply("", op(map[string]any{"sources": []string{"x"}})))
	f.Add(reply(`[{"text":"q?","reason":"r","sources":["` + recUser + `"]}]`))
	f.Add(`{"ops":[{"op":"none"}],"questions":[]}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, s string) {
		in := testInput()
		r, err := Decode([]byte(s), in)
		if err != nil {
			return
		}
		for _, p := range r.Proposals {
			if notePath(p.Path) != nil || p.Reason == "" || len(p.Sources) == 0 || p.Author != vault.AuthorCurator {
				t.Fatalf("bad proposal let through: %+v", p)
			}
			for _, s := range p.Sources {
				if s.Turn != recUser && s.Turn != recAgent {
					t.Fatalf("cites %q", s.Turn)
				}
			}
		}
	})
}
