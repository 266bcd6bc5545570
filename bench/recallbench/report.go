package recallbench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteMarkdown prints r as Markdown: a summary of the overall row per
// mode, recall@k beside the published references, then each mode's full
// table at turn and session level.
func WriteMarkdown(w io.Writer, r *Result) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	head := headline(r.Ks)

	p("# Recall benchmark: %s\n\n", r.Dataset)
	emb := "none (lexical only)"
	if r.Embedder != "" {
		emb = r.Embedder
	}
	p("%s groups, %s docs, %s queries; embedder: %s.\n", thousands(int64(r.Groups)), thousands(int64(r.Docs)), thousands(int64(r.Queries)), emb)
	rate := ""
	if r.Index.Time > 0 {
		rate = fmt.Sprintf(", %s docs/s", thousands(int64(float64(r.Docs)/r.Index.Time.Seconds())))
	}
	p("Index: %s (embedding %s)%s; %s on disk.\n", seconds(r.Index.Time), seconds(r.Index.Embed), rate, size(r.Index.Bytes))
	for _, n := range r.Notes {
		p("\n> %s\n", n)
	}

	if len(r.Modes) > 0 {
		overall := r.Modes[0].Rows[slices.IndexFunc(r.Modes[0].Rows, func(row Row) bool { return row.Key == KeyOverall })]
		p("\n## Summary: %s, %s queries\n\n", overall.Label, thousands(int64(overall.N)))
		cols := []string{"mode"}
		for _, k := range r.Ks {
			cols = append(cols, "R@"+strconv.Itoa(k))
		}
		cols = append(cols, "hit@"+strconv.Itoa(head), "nDCG@"+strconv.Itoa(head), "session R@"+strconv.Itoa(head), "query p50", "query p95")
		table(bw, cols)
		hi := slices.Index(r.Ks, head)
		for _, m := range r.Modes {
			row := m.Rows[slices.IndexFunc(m.Rows, func(row Row) bool { return row.Key == KeyOverall })]
			cells := []string{m.Mode}
			for i := range r.Ks {
				cells = append(cells, num(row.Turn[i].Recall))
			}
			cells = append(cells, num(row.Turn[hi].Hit), num(row.Turn[hi].NDCG), num(row.Session[hi].Recall), millis(m.P50), millis(m.P95))
			tableRow(bw, cells)
		}
	}

	if len(r.References) > 0 && len(r.Modes) > 0 {
		writeReferences(bw, r)
	}

	for _, m := range r.Modes {
		for _, level := range []string{"turn", "session"} {
			p("\n## %s: %s level\n\n", m.Mode, level)
			cols := []string{"category", "n"}
			for _, name := range []string{"R", "hit", "all", "nDCG"} {
				for _, k := range r.Ks {
					cols = append(cols, name+"@"+strconv.Itoa(k))
				}
			}
			table(bw, cols)
			for _, row := range m.Rows {
				ms := row.Turn
				if level == "session" {
					ms = row.Session
				}
				cells := []string{row.Label, strconv.Itoa(row.N)}
				for _, get := range []func(Metrics) float64{
					func(m Metrics) float64 { return m.Recall },
					func(m Metrics) float64 { return m.Hit },
					func(m Metrics) float64 { return m.All },
					func(m Metrics) float64 { return m.NDCG },
				} {
					for i := range r.Ks {
						cells = append(cells, num(get(ms[i])))
					}
				}
				tableRow(bw, cells)
			}
		}
	}
	return bw.Flush()
}

// writeReferences prints recall@k of every mode over all queries (as the
// published figures count them) and recall@10 by category, beside the
// references.
func writeReferences(bw *bufio.Writer, r *Result) {
	rows := r.Modes[0].Rows
	all := slices.IndexFunc(rows, func(row Row) bool { return row.Key == KeyAll })
	if all < 0 {
		all = slices.IndexFunc(rows, func(row Row) bool { return row.Key == KeyOverall })
	}
	// Category columns: recall@10 of the categories a reference reports.
	ten := slices.Index(r.Ks, 10)
	var cats []int // indexes into rows
	for i, row := range rows {
		if ten < 0 || row.Key == KeyAll || row.Key == KeyOverall {
			continue
		}
		if slices.ContainsFunc(r.References, func(ref Reference) bool { _, ok := ref.Recall10[row.Key]; return ok }) {
			cats = append(cats, i)
		}
	}
	fmt.Fprintf(bw, "\n## Recall@k beside published figures (%s: %s queries)\n\n", rows[all].Label, thousands(int64(rows[all].N)))
	cols := []string{"retriever"}
	for _, k := range r.Ks {
		cols = append(cols, "R@"+strconv.Itoa(k))
	}
	for _, c := range cats {
		cols = append(cols, rows[c].Label+" R@10")
	}
	table(bw, cols)
	for _, m := range r.Modes {
		cells := []string{m.Mode}
		for i := range r.Ks {
			cells = append(cells, num(m.Rows[all].Turn[i].Recall))
		}
		for _, c := range cats {
			cells = append(cells, num(m.Rows[c].Turn[ten].Recall))
		}
		tableRow(bw, cells)
	}
	for _, ref := range r.References {
		cells := []string{ref.Label}
		for _, k := range r.Ks {
			cells = append(cells, optNum(ref.All, k))
		}
		for _, c := range cats {
			cells = append(cells, optNum(ref.Recall10, rows[c].Key))
		}
		tableRow(bw, cells)
	}
}

func optNum[K comparable](m map[K]float64, k K) string {
	if x, ok := m[k]; ok {
		return num(x)
	}
	return "–"
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// headline is the cutoff the summary columns use: 10 when scored.
func headline(ks []int) int {
	if slices.Contains(ks, 10) || len(ks) == 0 {
		return 10
	}
	return ks[0]
}

func table(w *bufio.Writer, cols []string) {
	tableRow(w, cols)
	seps := make([]string, len(cols))
	for i := range cols {
		seps[i] = "--:"
		if i == 0 {
			seps[i] = "---"
		}
	}
	tableRow(w, seps)
}

func tableRow(w *bufio.Writer, cells []string) {
	w.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
}

// size prints bytes exactly and in MiB.
func size(n int64) string {
	return fmt.Sprintf("%s bytes (%.1f MiB)", thousands(n), float64(n)/(1<<20))
}

// thousands prints n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
