// Package recall is mnemo's semantic memory: documents (conversation turns
// and tool results) kept in an index with a lexical and a vector side,
// searched with hybrid retrieval (lexical + vector + recency + salience,
// fused and diversified), and assembled into context under a token budget.
//
// The journal is the truth: every index can be dropped and rebuilt from it.
// Backends (embedded, Qdrant) implement Index; embedders implement
// Embedder. Both are defined here, by their consumer.
package recall

import (
	"context"
	"errors"
	"time"
)

// Kinds of Doc.
const (
	KindTurn = "turn" // a conversation turn (user or agent, text or voice)
	KindTool = "tool" // a tool call and its result
	// KindKnowledge is one section of a knowledge note in the vault. Its
	// Role is the note's status (active, superseded, …), so that a Roles
	// filter narrows notes by status in every backend; Channel is the
	// note's path in the memory root; Salience its confidence; TS when it
	// was last updated; Text the section's Markdown, heading line first.
	KindKnowledge = "knowledge"
)

// Doc is one indexed unit.
type Doc struct {
	ID   string // stable: the journal record id, or "<record id>#<n>" for a chunk of a long record
	Kind string // KindTurn, KindTool or KindKnowledge
	Role string // "user", "agent" or "tool" (LoCoMo: the speaker's name); a note's status

	Mode    string // "text" or "voice"
	Channel string // where it came from: "chat", "voice", a tool's name
	Session string // the group it belongs to (hearth: the conversation id; LoCoMo: the sample id)
	Text    string // what is indexed and returned
	// Context is retrieval context: text indexed with the document (its
	// lexical tokens are those of IndexText, Text and Context) but never
	// part of what the document says. The indexer embeds Text alone, which
	// measured better on LoCoMo (bench/README.md). A search that
	// matches only the Context still finds the document, and what is
	// returned and assembled into prompts is Text alone. The indexer fills
	// it for a turn with the turns just before it in the same conversation
	// (see Preceding); "" means none. Backends store it, so that reopening
	// an index rebuilds the same postings, and Docs returns it.
	Context string
	TS      time.Time // when it was said
	// Salience in [0, 1] boosts a document regardless of the query
	// (confirmed facts, pinned memories); 0 is neutral.
	Salience float32
}

// Filter narrows a search. Zero fields do not filter.
type Filter struct {
	Kinds   []string
	Roles   []string
	Session string
	Since   time.Time // TS >= Since
	Until   time.Time // TS < Until
}

// Scored is a document id with a backend's score (higher is better).
type Scored struct {
	ID    string
	Score float32
}

// Index stores documents for lexical and vector search. It is safe for
// concurrent use. Implementations: memory/recall/embedded (the default) and
// memory/recall/qdrant.
type Index interface {
	// Upsert stores docs, replacing any with the same id. vecs is nil (a
	// lexical-only index) or holds one embedding per doc, each of the
	// index's dimension.
	Upsert(ctx context.Context, docs []Doc, vecs [][]float32) error
	Delete(ctx context.Context, ids []string) error
	// Lexical ranks documents by BM25 over Tokens(query).
	Lexical(ctx context.Context, query string, k int, f Filter) ([]Scored, error)
	// Vector ranks documents by cosine similarity to vec.
	Vector(ctx context.Context, vec []float32, k int, f Filter) ([]Scored, error)
	// Docs returns the stored documents with those ids, in that order,
	// skipping ids that are not stored.
	Docs(ctx context.Context, ids []string) ([]Doc, error)
	Count(ctx context.Context) (int, error)
	// Meta and SetMeta keep small state with the index: the indexer's
	// journal cursor, the embedder's identity.
	Meta(ctx context.Context, key string) (value string, ok bool, err error)
	SetMeta(ctx context.Context, key, value string) error
	// Reset drops every document, vector and meta value.
	Reset(ctx context.Context) error
	Close() error
}

// Embedder turns texts into vectors. Its Name identifies the model and the
// dimension: a stored vector is tagged with it, and a change of embedder
// re-embeds everything rather than mixing vectors.
type Embedder interface {
	Name() string
	Dim() int
	// Embed returns one vector per text, in order. Query embeddings go
	// through the same call (prefix queries yourself if a model wants it).
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrDimension is returned by Upsert and Vector for a vector whose length
// is not the index's dimension.
var ErrDimension = errors.New("recall: vector dimension does not match the index")
