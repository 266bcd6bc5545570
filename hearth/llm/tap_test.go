package llm

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAllTapped reads body through a streamTap in reads of at most size
// bytes and reports whether the tap saw [DONE].
func readAllTapped(t *testing.T, body string, size int) bool {
	t.Helper()
	tap := &streamTap{body: io.NopCloser(&chunkReader{s: body, size: size})}
	if _, err := io.Copy(io.Discard, tap); err != nil {
		t.Fatalf("reading through the tap: %v", err)
	}
	if tap.readErr != nil {
		t.Errorf("readErr = %v after a clean read, want nil", tap.readErr)
	}
	return tap.done
}

// chunkReader returns s in reads of at most size bytes.
type chunkReader struct {
	s    string
	size int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.size)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// wantDone is the reference: some complete line (ended by \r or \n) is a
// data line whose value starts with [DONE].
func wantDone(body string) bool {
	last := strings.LastIndexAny(body, "\r\n")
	if last < 0 {
		return false
	}
	for _, line := range strings.FieldsFunc(body[:last+1], func(r rune) bool { return r == '\r' || r == '\n' }) {
		rest, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		if strings.HasPrefix(strings.TrimPrefix(rest, " "), "[DONE]") {
			return true
		}
	}
	return false
}

var tapSeeds = []struct {
	body string
	want bool
}{
	{"data: [DONE]\n\n", true},
	{"data:[DONE]\n", true},
	{"data: [DONE]\r\n\r\n", true},
	{"data: {\"x\":1}\n\ndata: [DONE]\n\n", true},
	{"data: [DONE]", false}, // unterminated: the decoder never dispatches it
	{"data:  [DONE]\n", false},
	{"data: \"[DONE]\"\n", false},
	{"event: done\n\n", false},
	{": data: [DONE]\n", false},
	{"xdata: [DONE]\n", false},
	{"data: {\"content\":\"data: [DONE]\"}\n\n", false},
	{"data: [DONE] trailing\n", true},
	{strings.Repeat("a", 100) + "\ndata: [DONE]\n", true},
	{"", false},
}

func TestStreamTapDone(t *testing.T) {
	for _, tt := range tapSeeds {
		if ref := wantDone(tt.body); ref != tt.want {
			t.Fatalf("reference wantDone(%q) = %v, want %v", tt.body, ref, tt.want)
		}
		for size := 1; size <= max(1, len(tt.body)); size++ {
			if got := readAllTapped(t, tt.body, size); got != tt.want {
				t.Errorf("tap over %q in %d-byte reads: done = %v, want %v", tt.body, size, got, tt.want)
			}
		}
	}
}

func TestStreamTapReadError(t *testing.T) {
	tap := &streamTap{body: io.NopCloser(iotest.TimeoutReader(strings.NewReader("data: {}\n\n")))}
	_, err := io.Copy(io.Discard, tap)
	if err == nil || tap.readErr == nil {
		t.Errorf("copy error = %v, readErr = %v; want both non-nil", err, tap.readErr)
	}
}

func FuzzStreamTap(f *testing.F) {
	for _, tt := range tapSeeds {
		f.Add(tt.body, uint8(1))
		f.Add(tt.body, uint8(7))
	}
	f.Fuzz(func(t *testing.T, body string, size uint8) {
		got := readAllTapped(t, body, max(1, int(size)))
		if want := wantDone(body); got != want {
			t.Errorf("tap over %q in %d-byte reads: done = %v, want %v", body, size, got, want)
		}
	})
}

func TestSnippetRedactsKey(t *testing.T) {
	const key = "sk-0123456789abcdefghij"
	// Bodies with the key at every offset around the cut, alone and after
	// earlier copies whose redaction shortens the text.
	var bodies []string
	for prefix := range 3 {
		for pos := 150; pos < 260; pos++ {
			lead := strings.Repeat(key+" ", prefix)
			bodies = append(bodies, lead+strings.Repeat(".", pos)+key+strings.Repeat(".", 50))
		}
	}
	for _, body := range bodies {
		got := snippet(strings.NewReader(body), key)
		for i := 0; i+6 <= len(key); i++ {
			if part := key[i : i+6]; strings.Contains(got, part) {
				t.Fatalf("snippet(%q) = %q shows %q of the key", body, got, part)
			}
		}
		if len(got) > 200+len(" …") {
			t.Fatalf("snippet(%q) is %d bytes, want at most %d", body, len(got), 200+len(" …"))
		}
	}
}

func TestSnippet(t *testing.T) {
	tests := []struct {
		body, want string
	}{
		{"", ""},
		{"<html>\n  <body>Bad   Gateway</body>\n</html>\n", "<html> <body>Bad Gateway</body> </html>"},
		{strings.Repeat("x", 250), strings.Repeat("x", 200) + " …"},
		{"bad \xff byte", "bad \uFFFD byte"},
	}
	for _, tt := range tests {
		if got := snippet(strings.NewReader(tt.body), "secret-key"); got != tt.want {
			t.Errorf("snippet(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}
