package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadSmaps(t *testing.T) {
	const smaps = `00400000-00800000 r-xp 00000000 fd:00 123 /usr/bin/scale
Size:               4096 kB
Rss:                2048 kB
Anonymous:             0 kB
7f0000000000-7f0000200000 rw-p 00000000 00:00 0 
Rss:                1024 kB
Anonymous:          1024 kB
7f1000000000-7f1000100000 rw-p 01234000 fd:00 456 /idx/recall.snap
Rss:                 512 kB
Anonymous:             4 kB
VmFlags: rd wr mr mw me ac
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
Rss:                  12 kB
`
	got, err := readSmaps(strings.NewReader(smaps))
	if err != nil {
		t.Fatal(err)
	}
	want := []mapRSS{
		{name: "scale@", size: 4 << 20, rss: 2 << 20},
		{name: "[anon]", size: 2 << 20, rss: 1 << 20, anon: 1 << 20},
		{name: "recall.snap@1234000", size: 1 << 20, rss: 512 << 10, anon: 4 << 10},
		{name: "[stack]", size: 0x21000, rss: 12 << 10},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(mapRSS{})); diff != "" {
		t.Errorf("readSmaps (-want +got):\n%s", diff)
	}
}

// FuzzReadSmaps: any text reads without a panic.
func FuzzReadSmaps(f *testing.F) {
	f.Add("00400000-00800000 r-xp 00000000 fd:00 123 /usr/bin/x\nRss: 4 kB\n")
	f.Add("-\nRss: x kB\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = readSmaps(strings.NewReader(s))
	})
}
