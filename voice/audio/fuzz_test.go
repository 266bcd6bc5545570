package audio

import (
	"testing"
	"time"
)

// FuzzPlayer drives a small Player with arbitrary Write/Read/Finish/Flush
// sequences (and odd-length PCM) against a plain queue: whatever comes out
// is the head of what was accepted, in order; nothing is invented or
// played twice; the counters add up.
func FuzzPlayer(f *testing.F) {
	f.Add([]byte{0, 200, 1, 100, 0, 50, 1, 255, 2, 1, 30, 3, 0})
	f.Add([]byte{0, 255, 0, 255, 0, 255, 1, 10})
	f.Fuzz(func(t *testing.T, script []byte) {
		p := NewPlayer(PlayerConfig{Capacity: 10 * time.Millisecond, PreBuffer: 2 * time.Millisecond})
		var model []int16
		var next int16
		items := []string{"a", "b", "c"}
		for i := 0; i+1 < len(script); i += 2 {
			op, arg := script[i]%4, int(script[i+1])
			switch op {
			case 0: // write arg bytes (possibly odd)
				pcm := make([]byte, arg)
				var in []int16
				for j := 0; j+1 < arg; j += 2 {
					pcm[j], pcm[j+1] = byte(next), byte(uint16(next)>>8)
					in = append(in, next)
					next++
				}
				n := p.Write(items[arg%3], pcm)
				if n < 0 || n > len(in) {
					t.Fatalf("Write accepted %d of %d", n, len(in))
				}
				model = append(model, in[:n]...)
				next -= int16(len(in) - n)
			case 1: // read arg samples
				out := make([]int16, arg)
				for j := range out {
					out[j] = 12345
				}
				n := p.Read(out)
				if n > len(model) {
					t.Fatalf("Read %d samples, only %d queued", n, len(model))
				}
				for j := range n {
					if out[j] != model[j] {
						t.Fatalf("sample %d = %d, want %d", j, out[j], model[j])
					}
				}
				for _, v := range out[n:] {
					if v != 0 {
						t.Fatalf("fill sample %d, want 0", v)
					}
				}
				model = model[n:]
			case 2:
				p.Finish()
			case 3:
				_, ms, _ := p.Flush()
				if ms < 0 {
					t.Fatalf("heard %d ms", ms)
				}
				model = nil
			}
			st := p.Stats()
			if st.Queued != len(model) || st.Written != st.Played+st.Flushed+uint64(st.Queued) {
				t.Fatalf("stats %+v with %d queued in the model", st, len(model))
			}
		}
	})
}
