package embed

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReply feeds arbitrary bytes as an embedder's reply, to both
// protocols, for 1 to 4 inputs. A reply accepted (parsed and
// dimension-checked, as once does) has one vector per input, all of one
// non-zero dimension; an error reply's message is valid UTF-8, bounded,
// and never shows the API key.
func FuzzReply(f *testing.F) {
	for _, s := range []struct {
		data string
		n    uint8
	}{
		{`{"data":[{"index":0,"embedding":[0.1,0.2]}]}`, 1},
		{`{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`, 2},
		{`{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`, 2}, // index twice
		{`{"data":[{"embedding":[1]}]}`, 1},                                           // no index
		{`{"data":[{"index":0,"embedding":[]}]}`, 1},                                  // empty vector
		{`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3]}]}`, 2},   // ragged
		{`{"embeddings":[[0.5,0.5],[1,0]]}`, 2},
		{`{"embeddings":[null]}`, 1},
		{`{"embeddings":[[1e39]]}`, 1}, // beyond float32
		{`{"error":{"message":"bad key sk-secret-123"}}`, 1},
		{`{"error":"model \"x\" not found, try pulling it first"}`, 1},
		{"\xff\xfe not json sk-secret-123", 1},
		{"", 1},
		{"null", 3},
	} {
		f.Add([]byte(s.data), s.n)
	}
	const key = "sk-secret-123"
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		inputs := int(n%4) + 1
		for _, c := range []*client{
			NewOpenAI(HTTPOptions{Model: "m", APIKey: key}).c,
			NewOllama(HTTPOptions{Model: "m", APIKey: key}).c,
		} {
			vecs, err := c.proto.parse(data, inputs)
			if err == nil {
				err = c.checkDim(vecs)
			}
			if err == nil {
				if len(vecs) != inputs {
					t.Fatalf("%s: %d vectors for %d inputs", c.provider, len(vecs), inputs)
				}
				for i, v := range vecs {
					if len(v) == 0 || len(v) != len(vecs[0]) {
						t.Fatalf("%s: vector %d has %d components, vector 0 %d", c.provider, i, len(v), len(vecs[0]))
					}
				}
				if int(c.dim.Load()) != len(vecs[0]) {
					t.Fatalf("%s: learned dimension %d, vectors have %d", c.provider, c.dim.Load(), len(vecs[0]))
				}
			}
			msg := c.errorf(500, true, "%s", redact(c.message(data), key)).Error()
			if strings.Contains(msg, key) {
				t.Fatalf("%s: the key shows in %q", c.provider, msg)
			}
			if !utf8.ValidString(msg) {
				t.Fatalf("%s: message %q is not UTF-8", c.provider, msg)
			}
			if len(msg) > 2048 && len(c.proto.message(data)) == 0 {
				t.Fatalf("%s: message of %d bytes for a reply that has none", c.provider, len(msg))
			}
		}
	})
}
