package ipc_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/mnemo/mnemo/ipc"
)

// A streamed reply is mostly token lines with a few characters each.
var benchToken = &ipc.Token{Content: "Hello, wor"}

func BenchmarkEncodeToken(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ipc.Encode(benchToken); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeToken(b *testing.B) {
	line := []byte(`{"type":"token","content":"Hello, wor"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ipc.Decode(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReader reads a stream of token lines, as a client does during
// a reply.
func BenchmarkReader(b *testing.B) {
	const lines = 10_000
	var buf bytes.Buffer
	for i := range lines {
		line, err := ipc.Encode(&ipc.Token{Content: fmt.Sprintf("tok%d ", i)})
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(line)
	}
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := ipc.NewReader(bytes.NewReader(in))
		n := 0
		for {
			_, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != lines {
			b.Fatalf("read %d lines, want %d", n, lines)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}
