package wordvec

import (
	"bytes"
	"testing"
)

// FuzzConvert feeds arbitrary bytes to Convert as the wink package (JSON
// or tarball): it never panics; what it writes is a model file Parse
// accepts, holding the words it says it kept, with the dimension it says;
// and converting the same bytes twice gives the same file.
func FuzzConvert(f *testing.F) {
	f.Add(winkJSON(4, winkWords))
	f.Add(winkJSON(2, []string{"dog", "puppy"}))
	f.Add(winkJSON(1, nil))
	f.Add([]byte(`{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"size":1,"words":["a"],"vectors":{"a":[1,0,1,7]}}`))                   // rank beyond size
	f.Add([]byte(`{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"size":1,"words":["a"],"vectors":{"a":[1,0]}}`))                       // too short
	f.Add([]byte(`{"dimensions":2,"l2NormIndex":2,"wordIndex":3,"size":2,"words":["a","a"],"vectors":{"a":[1,0,1,0],"a":[0,1,1,1]}}`)) // a word twice
	f.Add([]byte(`{"vectors":{"a":[1,0,1,0]},"dimensions":2,"l2NormIndex":2,"wordIndex":3}`))                                          // vectors first
	f.Add([]byte(`{"dimensions":-1}`))
	f.Add([]byte(`{"dimensions":1e9,"vectors":{}}`))
	f.Add([]byte(`[`))
	f.Add([]byte("\x1f\x8b\x08\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		st, err := Convert(t.Context(), bytes.NewReader(data), &out, ConvertOptions{})
		if err != nil {
			return
		}
		m, err := Parse(out.Bytes())
		if err != nil {
			t.Fatalf("Convert wrote a file Parse refuses: %v (stats %+v)", err, st)
		}
		if m.dim != st.Dim || len(m.entries()) != st.Kept || st.Bytes != out.Len() {
			t.Fatalf("file of dim %d, %d words, %d bytes; stats say %+v", m.dim, len(m.entries()), out.Len(), st)
		}
		var again bytes.Buffer
		if _, err := Convert(t.Context(), bytes.NewReader(data), &again, ConvertOptions{}); err != nil || !bytes.Equal(again.Bytes(), out.Bytes()) {
			t.Fatalf("a second conversion differs (%v)", err)
		}
	})
}
