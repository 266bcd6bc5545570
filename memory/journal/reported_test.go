package journal_test

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/internal/logtest"
	"github.com/mnemo/mnemo/memory/journal"
)

// Damage in the journal is a warning once: a torn line when it is
// terminated, a corrupt line when first skipped. Later reads, and later
// starts with a Reported file, tell of it at debug level only; damage that
// changes is new damage.
func TestDamageWarnedOnce(t *testing.T) {
	const (
		valid1  = `{"id":"01HQ0000000000000000000001","role":"user","text":"first"}`
		valid2  = `{"id":"01HQ0000000000000000000002","role":"user","text":"second"}`
		torn    = `{"id":"01HQ0000000000000000000003","role":"user","text":"SECRET tor`
		corrupt = `{"id":"01HQ0000000000000000000009","role":"user","text":SECRET}`
	)
	// start is one start of hearth: Open, then what hearth reads.
	type start struct {
		edit      func(t *testing.T, shard string) // before Open
		wantWarns []string                         // the warnings, by message
	}
	noWarns := []string(nil)
	tests := []struct {
		name     string
		reported bool // a Reported file
		content  string
		starts   []start
	}{
		{
			name: "torn line", reported: true, content: valid1 + "\n" + valid2 + "\n" + torn,
			starts: []start{
				{wantWarns: []string{"torn last line"}},
				{wantWarns: noWarns},
				{wantWarns: noWarns},
			},
		},
		{
			name: "corrupt line", reported: true, content: valid1 + "\n" + corrupt + "\n" + valid2 + "\n",
			starts: []start{
				{wantWarns: []string{"skipping line"}},
				{wantWarns: noWarns},
			},
		},
		{
			name: "damage changed by hand", reported: true, content: valid1 + "\n" + corrupt + "\n" + valid2 + "\n",
			starts: []start{
				{wantWarns: []string{"skipping line"}},
				{edit: replace(corrupt, `{"SECRET"}`), wantWarns: []string{"skipping line"}},
				{edit: replace(`{"SECRET"}`, `{"id":"01HQ0000000000000000000009","role":"user","text":"mended"}`), wantWarns: noWarns},
				{edit: replace(`"mended"}`, `"mended`), wantWarns: []string{"skipping line"}},
			},
		},
		{
			name: "no reported file: once per start", reported: false, content: valid1 + "\n" + corrupt + "\n" + valid2 + "\n" + torn,
			starts: []start{
				{wantWarns: []string{"torn last line", "skipping line"}},
				{wantWarns: []string{"skipping line", "skipping line"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			shard := filepath.Join(dir, "threads", "2024-02-01.jsonl")
			if err := os.Mkdir(filepath.Dir(shard), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, shard, tt.content)
			opts := journal.Options{}
			if tt.reported {
				opts.Reported = filepath.Join(dir, "index", "journal-reported")
			}
			for i, s := range tt.starts {
				if s.edit != nil {
					s.edit(t, shard)
				}
				log, logs := logtest.New()
				opts.Log = log
				j, err := journal.Open(filepath.Dir(shard), opts)
				if err != nil {
					t.Fatalf("start %d: Open: %v", i+1, err)
				}
				// What hearth reads: recent history, and the indexer's scan,
				// each more than once.
				for range 2 {
					if _, err := j.Tail(10); err != nil {
						t.Fatalf("Tail: %v", err)
					}
					if _, err := scanAll(j); err != nil {
						t.Fatalf("Scan: %v", err)
					}
				}
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, w := range logs.Lines(slog.LevelWarn, "") {
					for _, msg := range []string{"torn last line", "skipping line"} {
						if strings.Contains(w, msg) {
							got = append(got, msg)
						}
					}
				}
				if strings.Join(got, ", ") != strings.Join(s.wantWarns, ", ") {
					t.Errorf("start %d: warnings %q, want %q; log:\n%s", i+1, got, s.wantWarns, logs)
				}
				if strings.Contains(logs.String(), "SECRET") {
					t.Errorf("start %d: log quotes the journal:\n%s", i+1, logs)
				}
			}
			if !tt.reported {
				return
			}
			for path, want := range map[string]fs.FileMode{
				filepath.Join(dir, "index"):                     fs.ModeDir | 0o700,
				filepath.Join(dir, "index", "journal-reported"): 0o600,
			} {
				if st, err := os.Stat(path); err != nil || st.Mode() != want {
					t.Errorf("%s: %v, %v, want mode %v", path, st.Mode(), err, want)
				}
			}
		})
	}
}

// replace edits the shard by hand, replacing old with new.
func replace(old, new string) func(t *testing.T, shard string) {
	return func(t *testing.T, shard string) {
		t.Helper()
		b, err := os.ReadFile(shard)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("shard does not hold %q", old)
		}
		writeFile(t, shard, strings.Replace(string(b), old, new, 1))
	}
}

// A reported file that cannot be written is said once; the damage is still
// warned of once in the run.
func TestDamageReportedFileUnwritable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "2024-02-01.jsonl"), "SECRET not json\n")
	blocker := filepath.Join(t.TempDir(), "index")
	writeFile(t, blocker, "a file where a directory should be")
	log, logs := logtest.New()
	j := open(t, dir, journal.Options{Log: log, Reported: filepath.Join(blocker, "journal-reported")})
	for range 3 {
		if _, err := scanAll(j); err != nil {
			t.Fatal(err)
		}
	}
	if got := logs.Lines(slog.LevelWarn, "skipping line"); len(got) != 1 {
		t.Errorf("skip warnings %q, want one", got)
	}
	if got := logs.Lines(slog.LevelWarn, "cannot record"); len(got) != 1 {
		t.Errorf("warnings of the unwritable file %q, want one", got)
	}
}
