package recollect

import (
	"context"
	"errors"
)

// ErrNoEmbedder is Embed's error while recall has no embedder: it is
// lexical only, or not open yet.
var ErrNoEmbedder = errors.New("recollect: no embedder (recall is lexical only or not open yet)")

// Embed embeds texts with recall's embedder and names it: what the HTTP
// door's /v1/embeddings answers with.
func (m *Memory) Embed(ctx context.Context, texts []string) (string, [][]float32, error) {
	rs, release := m.acquire()
	if rs == nil {
		return "", nil, ErrNoEmbedder
	}
	defer release()
	if rs.embedder == nil {
		return "", nil, ErrNoEmbedder
	}
	vecs, err := rs.embedder.Embed(ctx, texts)
	return rs.embedder.Name(), vecs, err
}
