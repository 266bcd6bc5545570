package curator

import (
	"encoding/json"
	"strings"
	"testing"
)

func flushReply(summary string, ops ...string) string {
	r := reply("", ops...)
	if summary == "OMIT" {
		return r
	}
	s, _ := json.Marshal(summary)
	return `{"summary":` + string(s) + `,` + r[1:]
}

func TestDecodeFlush(t *testing.T) {
	tests := []struct {
		name      string
		reply     string
		wantErr   string
		summary   string
		proposals int
		rejected  int
	}{
		{name: "summary and a note", reply: flushReply(" The person moved the tomatoes. ", op(nil)), summary: "The person moved the tomatoes.", proposals: 1},
		{name: "summary, nothing to keep", reply: flushReply("They talked about tomatoes."), summary: "They talked about tomatoes."},
		{name: "an op citing what was not shown", reply: flushReply("Tomatoes.", op(map[string]any{"sources": []string{"01JDQ0000000000000000000X9"}})), summary: "Tomatoes.", rejected: 1},
		{name: "no summary", reply: flushReply("OMIT", op(nil)), wantErr: "no summary"},
		{name: "empty summary", reply: flushReply("  ", op(nil)), wantErr: "no summary"},
		{name: "summary not a string", reply: `{"summary":3,"ops":[],"questions":[]}`, wantErr: "no summary"},
		{name: "unknown field", reply: `{"summary":"s","ops":[],"questions":[],"extra":1}`, wantErr: "unknown field"},
		{name: "not json", reply: `summary: s`, wantErr: "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, summary, err := DecodeFlush([]byte(tc.reply), testInput())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if summary != tc.summary || len(res.Proposals) != tc.proposals || len(res.Rejected) != tc.rejected {
				t.Errorf("summary %q, %d proposals, %d rejected %+v", summary, len(res.Proposals), len(res.Rejected), res.Rejected)
			}
		})
	}
}

// TestFlushSchema: the flush schema is the curator's with a required
// summary, still strict.
func TestFlushSchema(t *testing.T) {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional bool                       `json:"additionalProperties"`
	}
	if err := json.Unmarshal(FlushSchema, &s); err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Required, ",") != "summary,ops,questions" || len(s.Properties) != 3 || s.Additional {
		t.Errorf("flush schema %s", FlushSchema)
	}
	if !strings.Contains(string(Schema), `"required": ["ops", "questions"]`) {
		t.Error("making the flush schema changed the curator's")
	}
}

func FuzzDecodeFlush(f *testing.F) {
	f.Add(flushReply("s", op(nil)))
	f.Add(flushReply("OMIT"))
	f.Add(`{"summary":"x","ops":[{"op":"none"}],"questions":[]}`)
	f.Add(`{"summary":null}`)
	f.Fuzz(func(t *testing.T, s string) {
		r, summary, err := DecodeFlush([]byte(s), testInput())
		if err != nil {
			return
		}
		if strings.TrimSpace(summary) == "" || summary != strings.TrimSpace(summary) {
			t.Fatalf("summary %q let through", summary)
		}
		for _, p := range r.Proposals {
			if len(p.Sources) == 0 || p.Reason == "" {
				t.Fatalf("bad proposal let through: %+v", p)
			}
		}
	})
}
