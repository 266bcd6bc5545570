package vault

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSaveQuestion(t *testing.T) {
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		q       Question
		wantErr string
		want    []string // lines the file holds
	}{
		{
			name: "curator question",
			q:    Question{ID: "q_01JDAAAAAAAAAAAAAAAAAAAAAA", Text: "Is the trip in May or June?", Reason: "two dates were said", Author: AuthorCurator, CreatedAt: at, Sources: []Source{{Thread: "main", Turn: "01JDBBBBBBBBBBBBBBBBBBBBBB"}}},
			want: []string{"id: q_01JDAAAAAAAAAAAAAAAAAAAAAA", "author: curator", "reason: two dates were said", "turn: 01JDBBBBBBBBBBBBBBBBBBBBBB", "Is the trip in May or June?"},
		},
		{name: "bad id", q: Question{ID: "q_../x", Text: "x", Author: AuthorCurator}, wantErr: "want q_<ULID>"},
		{name: "no text", q: Question{Text: "  ", Author: AuthorCurator}, wantErr: "no text"},
		{name: "bad author", q: Question{Text: "x?", Author: "a\nb"}, wantErr: "author"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, err := SaveQuestion(dir, &tt.q)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p, QuestionsDir+"/q_") {
				t.Errorf("path %q", p)
			}
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("file lacks %q:\n%s", w, b)
				}
			}
		})
	}
}
