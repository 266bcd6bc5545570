package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// mapRSS is the resident memory of one mapping of the process.
type mapRSS struct {
	name string // file (and offset into it) or [anon], [heap]…
	size int64  // bytes mapped
	rss  int64  // resident
	anon int64  // of which anonymous (written or copied)
}

// readSmaps reads /proc/self/smaps-format text: every mapping with its
// size and resident bytes.
func readSmaps(r io.Reader) ([]mapRSS, error) {
	var out []mapRSS
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			m := mapRSS{name: "[anon]"}
			if len(fs) >= 6 {
				m.name = filepath.Base(fs[5])
				if !strings.HasPrefix(fs[5], "[") {
					m.name += "@" + strings.TrimLeft(fs[2], "0")
				}
			}
			lo, hi, _ := strings.Cut(fs[0], "-")
			a, _ := strconv.ParseUint(lo, 16, 64)
			b, _ := strconv.ParseUint(hi, 16, 64)
			m.size = int64(b - a)
			out = append(out, m)
			continue
		}
		if len(out) == 0 || len(fs) != 3 || fs[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil {
			continue
		}
		switch fs[0] {
		case "Rss:":
			out[len(out)-1].rss = kb << 10
		case "Anonymous:":
			out[len(out)-1].anon = kb << 10
		}
	}
	return out, sc.Err()
}

// printRSSMap prints the mappings holding at least 1 MiB resident, the
// largest first.
func printRSSMap(w io.Writer, title string) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		fmt.Fprintf(w, "rss map: %v\n", err)
		return
	}
	defer f.Close()
	ms, err := readSmaps(f)
	if err != nil {
		fmt.Fprintf(w, "rss map: %v\n", err)
		return
	}
	slices.SortFunc(ms, func(a, b mapRSS) int { return cmp.Compare(b.rss, a.rss) })
	fmt.Fprintf(w, "resident by mapping, %s:\n", title)
	var rest int64
	for _, m := range ms {
		if m.rss < 1<<20 {
			rest += m.rss
			continue
		}
		fmt.Fprintf(w, "  %8.1f MiB of %8.1f (anon %6.1f)  %s\n", mib(m.rss), mib(m.size), mib(m.anon), m.name)
	}
	fmt.Fprintf(w, "  %8.1f MiB in smaller mappings\n", mib(rest))
}
