package vault

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"go.yaml.in/yaml/v3"
)

// Question is something a proposer (the curator, a job) asks the owner
// instead of guessing: stored as inbox/questions/<id>.md, front matter
// then the question, for the owner to read and answer in any editor.
type Question struct {
	ID        string    // q_<ULID>; "" gets a fresh one
	Text      string    // the question
	Reason    string    // why it is asked
	Sources   []Source  // the turns it comes from
	Author    string    // curator, job:<name>
	CreatedAt time.Time // zero: now
}

// NewQuestionID returns a fresh question id.
func NewQuestionID() string { return "q_" + ulid.Make().String() }

// SaveQuestion stores q as inbox/questions/<id>.md in the memory root dir,
// atomically and fsync'd, and returns its path. Like a queued proposal it
// is governance, not knowledge: it is not committed.
func SaveQuestion(dir string, q *Question) (string, error) {
	if q.ID == "" {
		q.ID = NewQuestionID()
	}
	if rest, ok := strings.CutPrefix(q.ID, "q_"); !ok {
		return "", fmt.Errorf("question id %q: want q_<ULID>", q.ID)
	} else if _, err := ulid.ParseStrict(rest); err != nil {
		return "", fmt.Errorf("question id %q: want q_<ULID>", q.ID)
	}
	if strings.TrimSpace(q.Text) == "" {
		return "", fmt.Errorf("question %s: no text", q.ID)
	}
	if !validAuthor(q.Author) {
		return "", fmt.Errorf("question %s: author %q: want agent, owner, curator, job:<name> or external:<name>", q.ID, q.Author)
	}
	if q.CreatedAt.IsZero() {
		q.CreatedAt = time.Now().UTC()
	}
	fm := struct {
		ID        string    `yaml:"id"`
		Author    string    `yaml:"author"`
		CreatedAt time.Time `yaml:"created_at"`
		Reason    string    `yaml:"reason,omitempty"`
		Sources   []Source  `yaml:"sources,omitempty"`
	}{q.ID, q.Author, q.CreatedAt.UTC(), q.Reason, q.Sources}
	head, err := yaml.Marshal(fm)
	if err != nil {
		return "", fmt.Errorf("question %s: %w", q.ID, err)
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(head)
	b.WriteString("---\n")
	b.WriteString(strings.TrimSpace(q.Text))
	b.WriteString("\n")
	p := QuestionsDir + "/" + q.ID + ".md"
	if err := writeAtomic(dir, p, b.Bytes()); err != nil {
		return "", fmt.Errorf("question %s: %w", q.ID, err)
	}
	return p, nil
}
