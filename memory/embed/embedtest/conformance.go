package embedtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mnemo/mnemo/memory/recall"
)

// Words is the vocabulary of the conformance texts, for embedders that
// only know some words (a tiny test model should include them).
func Words() []string {
	return strings.Fields(`the a my we i you it was is on in at to of and for with
		cat dog puppy kitten park walk garden tea coffee breakfast dinner
		morning evening weekend trip beach mountain lake river book music
		guitar painting friend sister brother mother father school work
		office meeting project tax bank money car train city house note about`)
}

// Texts returns n distinct texts drawn from Words.
func Texts(n int) []string {
	w := Words()
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %s %s %d", w[i%len(w)], w[(i/len(w)+7*i)%len(w)], w[(3*i+11)%len(w)], i)
	}
	return out
}

// prompt bounds how long a cancelled Embed may take to return.
const prompt = 2 * time.Second

// RunEmbedderConformance checks the contract of recall.Embedder that the
// recall index relies on: an empty call is free, every vector has Dim
// components, order is preserved, the same text always gets the same
// vector (alone, in a batch, repeated, at any position of a 200-text
// batch that crosses batch boundaries), empty and odd texts are allowed,
// concurrent calls agree, and a cancelled context makes Embed return
// promptly with an error wrapping the context's.
func RunEmbedderConformance(t *testing.T, e recall.Embedder) {
	t.Helper()
	embed := func(t *testing.T, texts []string) [][]float32 {
		t.Helper()
		vs, err := e.Embed(t.Context(), texts)
		if err != nil {
			t.Fatalf("Embed(%d texts): %v", len(texts), err)
		}
		if len(vs) != len(texts) {
			t.Fatalf("Embed(%d texts) returned %d vectors", len(texts), len(vs))
		}
		for i, v := range vs {
			if len(v) != e.Dim() {
				t.Fatalf("Embed: vector %d has %d components, Dim() = %d", i, len(v), e.Dim())
			}
		}
		return vs
	}

	t.Run("empty call", func(t *testing.T) {
		for _, in := range [][]string{nil, {}} {
			vs, err := e.Embed(t.Context(), in)
			if err != nil || len(vs) != 0 {
				t.Errorf("Embed(%#v) = %d vectors, %v; want none, nil", in, len(vs), err)
			}
		}
	})

	t.Run("dimension", func(t *testing.T) {
		embed(t, []string{"the cat sat in the garden"})
		if e.Dim() <= 0 {
			t.Fatalf("Dim() = %d after a call, want > 0", e.Dim())
		}
		name := e.Name()
		if name == "" {
			t.Errorf("Name() is empty")
		}
		embed(t, Texts(3))
		if got := e.Name(); got != name {
			t.Errorf("Name() changed from %q to %q", name, got)
		}
	})

	t.Run("order and determinism", func(t *testing.T) {
		texts := Texts(5)
		batch := embed(t, texts)
		for i, text := range texts {
			alone := embed(t, []string{text})
			if diff := diffVector(batch[i], alone[0]); diff != "" {
				t.Errorf("text %d in a batch differs from alone (-batch +alone):\n%s", i, diff)
			}
		}
		rev := make([]string, len(texts))
		for i, text := range texts {
			rev[len(texts)-1-i] = text
		}
		back := embed(t, rev)
		for i := range texts {
			if diff := diffVector(batch[i], back[len(texts)-1-i]); diff != "" {
				t.Errorf("text %d differs when the batch is reversed:\n%s", i, diff)
			}
		}
		again := embed(t, []string{texts[2], texts[2], texts[0]})
		if diff := diffVectors([][]float32{batch[2], batch[2], batch[0]}, again); diff != "" {
			t.Errorf("repeated texts (-want +got):\n%s", diff)
		}
	})

	t.Run("batch of 200", func(t *testing.T) {
		texts := Texts(200)
		vs := embed(t, texts)
		for _, i := range []int{0, 1, 63, 64, 65, 127, 128, 199} {
			alone := embed(t, []string{texts[i]})
			if diff := diffVector(vs[i], alone[0]); diff != "" {
				t.Errorf("text %d of 200 differs from alone:\n%s", i, diff)
			}
		}
	})

	t.Run("empty and odd texts", func(t *testing.T) {
		texts := []string{"", "my dog in the park", "", "   \n\t", "🙂 🐶", "not \xff\xfe utf-8", strings.Repeat("coffee and tea ", 700)}
		vs := embed(t, texts)
		if diff := diffVector(vs[0], vs[2]); diff != "" {
			t.Errorf("two empty texts differ:\n%s", diff)
		}
		alone := embed(t, []string{texts[1]})
		if diff := diffVector(vs[1], alone[0]); diff != "" {
			t.Errorf("a text between empty ones differs from alone:\n%s", diff)
		}
		embed(t, []string{""})
	})

	t.Run("concurrent", func(t *testing.T) {
		texts := Texts(40)
		want := embed(t, texts)
		const workers = 4
		got := make([][][]float32, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { got[w], errs[w] = e.Embed(t.Context(), texts) })
		}
		wg.Wait()
		for w := range workers {
			if errs[w] != nil {
				t.Errorf("worker %d: %v", w, errs[w])
				continue
			}
			if diff := diffVectors(want, got[w]); diff != "" {
				t.Errorf("worker %d (-want +got):\n%s", w, diff)
			}
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(t.Context())
		cancel()
		expired, cancel2 := context.WithDeadline(t.Context(), time.Unix(1, 0))
		defer cancel2()
		for _, tc := range []struct {
			ctx  context.Context
			want error
		}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
			type result struct {
				vs  [][]float32
				err error
			}
			done := make(chan result, 1)
			go func() {
				vs, err := e.Embed(tc.ctx, Texts(200))
				done <- result{vs, err}
			}()
			select {
			case r := <-done:
				if !errors.Is(r.err, tc.want) {
					t.Errorf("Embed with a done context = %d vectors, %v; want an error wrapping %v", len(r.vs), r.err, tc.want)
				}
			case <-time.After(prompt):
				t.Fatalf("Embed with a done context (%v) did not return within %v", tc.want, prompt)
			}
		}
	})
}

// tolerance is the largest difference between components that counts as
// the same vector (a remote model may not be bit-for-bit deterministic).
const tolerance = 1e-5

// diffVectors compares two lists of vectors within tolerance, reporting
// the first difference; "" if they match.
func diffVectors(want, got [][]float32) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d vectors, want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffVector(want[i], got[i]); d != "" {
			return fmt.Sprintf("vector %d: %s", i, d)
		}
	}
	return ""
}

// diffVector compares two vectors within tolerance with a plain loop (cmp
// is too slow for thousands of floats) and uses cmp only to show them.
func diffVector(want, got []float32) string {
	if len(want) == len(got) {
		same := true
		for j := range want {
			if d := want[j] - got[j]; d > tolerance || d < -tolerance {
				same = false
				break
			}
		}
		if same {
			return ""
		}
	}
	return cmp.Diff(want, got, cmpopts.EquateApprox(0, tolerance))
}
