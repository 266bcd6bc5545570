package tui

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/mnemo/mnemo/ipc"
)

// replyText returns Markdown of about n bytes: paragraphs, a list, code.
func replyText(r *rand.Rand, n int) string {
	words := []string{"the", "garden", "**tomatoes**", "basil", "water", "`soil`", "morning", "north", "bed", "plant", "remember", "[plan](https://example.com)", "and", "roses", "prune", "winter"}
	var b strings.Builder
	for b.Len() < n {
		switch r.IntN(6) {
		case 0:
			b.WriteString("- " + words[r.IntN(len(words))] + " " + words[r.IntN(len(words))] + "\n- " + words[r.IntN(len(words))] + "\n\n")
		case 1:
			b.WriteString("```go\nfunc water(bed string) {\n\tfmt.Println(bed)\n}\n```\n\n")
		default:
			for range 10 + r.IntN(40) {
				b.WriteString(words[r.IntN(len(words))] + " ")
			}
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func history10k(r *rand.Rand) []ipc.Turn {
	turns := make([]ipc.Turn, 10_000)
	for i := range turns {
		if i%2 == 0 {
			turns[i] = userTurn(i+1, fmt.Sprintf("question %d: what about %s?", i, strings.Repeat("the garden ", 1+r.IntN(8))))
		} else {
			turns[i] = agentTurn(i+1, replyText(r, 100+r.IntN(900)))
		}
	}
	return turns
}

func percentile(d []time.Duration, p float64) time.Duration {
	slices.Sort(d)
	return d[min(int(float64(len(d))*p), len(d)-1)]
}

// BenchmarkView10k: one frame with 10,000 turns in the history at
// 120×40, after a keystroke (the common case: everything on screen is
// cached) and while paging up through the history (every page renders
// turns not seen before).
func BenchmarkView10k(b *testing.B) {
	for _, mode := range []string{"keystroke", "pageup"} {
		b.Run(mode, func(b *testing.B) {
			hs := newHarness(b, 120, 40)
			turns := history10k(rand.New(rand.NewPCG(1, 1)))
			load := time.Now()
			hs.connect(turns...) // merge the snapshot and draw the first frame
			loadMS := float64(time.Since(load).Microseconds()) / 1000
			var ms runtime.MemStats
			durs := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if mode == "keystroke" && i%64 == 0 {
					hs.m.in.reset() // messages of 64 characters
				}
				start := time.Now()
				switch mode {
				case "keystroke":
					hs.m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{rune('a' + i%26)}})
				case "pageup":
					if i%2000 == 1999 {
						hs.m.Update(tea.KeyMsg{Type: tea.KeyCtrlEnd})
					} else {
						hs.m.Update(tea.KeyMsg{Type: tea.KeyPgUp})
					}
				}
				hs.m.View()
				durs = append(durs, time.Since(start))
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			runtime.KeepAlive(hs)
			b.ReportMetric(float64(percentile(durs, 0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(durs, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
			b.ReportMetric(loadMS, "load-ms")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStream2000tps feeds a reply at 2,000 token messages per second
// of simulated time through Update, with View after every message as the
// program calls it and frame ticks delivered when they fall due. It checks
// that nothing is dropped and reports the repaint rate and the CPU the
// client spends per second of stream.
func BenchmarkStream2000tps(b *testing.B) {
	const (
		tps     = 2000
		seconds = 5
	)
	text := replyText(rand.New(rand.NewPCG(2, 2)), tps*seconds*5) // ~5 bytes a token
	var toks []string
	for rest := text; rest != "" && len(toks) < tps*seconds; {
		n := min(3+len(toks)%5, len(rest))
		toks = append(toks, rest[:n])
		rest = rest[n:]
	}
	want := strings.Join(toks, "")
	step := time.Second / tps

	var repaints int
	var cpu, wall time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		hs := newHarness(b, 120, 40)
		hs.connect(userTurn(1, "tell me everything"))
		hs.send(&ipc.Status{State: ipc.StateThinking})
		before := hs.m.Repaints()
		b.StartTimer()
		c0, w0 := cpuTime(), time.Now()

		var due time.Time
		for _, tok := range toks {
			hs.clk.Add(step)
			wasOn := hs.m.frameOn
			hs.m.Update(&ipc.Token{Content: tok})
			hs.m.View()
			if hs.m.frameOn && !wasOn {
				due = hs.clk.Now().Add(hs.m.frameD)
			}
			if hs.m.frameOn && !hs.clk.Now().Before(due) {
				hs.m.Update(frameMsg{})
				hs.m.View()
				if hs.m.frameOn {
					due = hs.clk.Now().Add(hs.m.frameD)
				}
			}
		}
		hs.m.Update(frameMsg{})
		hs.m.View()

		cpu += cpuTime() - c0
		wall += time.Since(w0)
		b.StopTimer()
		if got := hs.m.stream.doc.String(); got != sanitize(want) {
			b.Fatalf("streamed %d bytes, sent %d", len(got), len(want))
		}
		if !strings.Contains(hs.screen(), lastWords(want)) {
			b.Fatalf("the last tokens are not on screen")
		}
		repaints += hs.m.Repaints() - before
		b.StartTimer()
	}
	simulated := float64(b.N * seconds)
	b.ReportMetric(float64(repaints)/simulated, "repaints/s")
	b.ReportMetric(float64(cpu.Milliseconds())/simulated, "cpu-ms/s")
	b.ReportMetric(float64(wall.Milliseconds())/simulated, "wall-ms/s")
}

// lastWords is the end of the text as it shows on screen: the last line's
// last few plain characters.
func lastWords(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.Trim(s, "`*-[] ")
	if f := strings.Fields(s); len(f) > 0 {
		return strings.Trim(f[len(f)-1], "`*[]()")
	}
	return ""
}
