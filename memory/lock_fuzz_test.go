package memory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadHolder feeds arbitrary bytes as the lock file's record: reading
// it never panics; a record accepted names a process (pid > 0) and,
// written back as LockRoot writes it, reads the same.
func FuzzReadHolder(f *testing.F) {
	for _, s := range []string{
		`{"pid":4242,"mode":"daemon","addr":"127.0.0.1:7744","since":"2026-01-02T03:04:05Z"}` + "\n",
		`{"pid":7,"mode":"local","since":"2026-01-02T03:04:05.123456789+02:00"}`,
		`{"pid":0,"mode":"daemon"}`, // no pid
		`{"pid":-1}`,                // no pid
		`{"pid":4242,"mode":"daemon","addr":"127.0.0.1:77`, // torn: the holder is writing it
		`{"pid":1,"since":"yesterday"}`,                    // not a time
		`{"pid":1e3}`,                                      // a float
		`{"pid":4242}` + "\n" + `{"pid":1}`,                // two records
		"",
		"\x00\x00\x00",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "lock")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		read := func() (Holder, error) {
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			return readHolder(fh)
		}
		h, err := read()
		if err != nil {
			if h != (Holder{}) {
				t.Fatalf("error %v with holder %+v", err, h)
			}
			return
		}
		if h.PID <= 0 {
			t.Fatalf("accepted a holder without a pid: %+v", h)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := read()
		if err != nil {
			t.Fatalf("%s, written back, does not read: %v", b, err)
		}
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
			t.Fatalf("round trip: %s, then %s", b, b2)
		}
	})
}
