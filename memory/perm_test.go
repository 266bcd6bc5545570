//go:build unix

package memory_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/internal/logtest"
	"github.com/mnemo/mnemo/internal/permtest"
	"github.com/mnemo/mnemo/memory"
)

// Everything Open and LockRoot create in a root is private to the owner —
// defaults, .gitignore, the lock file and the whole git repository — in a
// new root and in an existing one that others may enter (umask 0: see
// TestMain). An existing root keeps its mode, and Open warns about it.
func TestRootIsPrivate(t *testing.T) {
	tests := []struct {
		name     string
		rootMode os.FileMode // 0: Open creates the root
		wantWarn bool
	}{
		{"new root", 0, false},
		{"existing private root", 0o700, false},
		{"existing root open to all", 0o755, true},
		{"existing root open to the group", 0o750, true},
		{"existing root others may traverse", 0o701, true},
	}
	quoted := map[string]string{
		"existing root open to all": "it's mine", // the fix quotes it for the shell
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, fix := "mnemo", ""
			if q, ok := quoted[tt.name]; ok {
				name = q
			}
			dir := filepath.Join(t.TempDir(), name)
			fix = "chmod 700 " + dir
			if _, ok := quoted[tt.name]; ok {
				fix = "chmod 700 '" + strings.ReplaceAll(dir, "'", `'\''`) + "'"
			}
			if tt.rootMode != 0 {
				if err := os.Mkdir(dir, tt.rootMode); err != nil {
					t.Fatal(err)
				}
			}
			l, err := memory.LockRoot(dir, memory.Holder{Mode: memory.ModeDaemon})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			log, logs := logtest.New()
			if _, err := memory.Open(t.Context(), dir, testDefaults, log); err != nil {
				t.Fatalf("Open: %v", err)
			}
			// Reopening commits nothing new, but must not loosen anything.
			if _, err := memory.Open(t.Context(), dir, testDefaults, nil); err != nil {
				t.Fatalf("reopen: %v", err)
			}

			if n := permtest.CheckPrivate(t, dir); n < 20 {
				t.Errorf("checked only %d entries: the root lacks its repository?", n)
			}
			st, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.rootMode
			if want == 0 {
				want = 0o700
			}
			if st.Mode().Perm() != want {
				t.Errorf("root is %#o, want %#o (an existing root keeps its mode)", st.Mode().Perm(), want)
			}

			warns := logs.Lines(slog.LevelWarn, "")
			if !tt.wantWarn {
				if len(warns) != 0 {
					t.Errorf("warnings for a private root: %q", warns)
				}
				return
			}
			if len(warns) != 1 {
				t.Fatalf("warnings = %q, want one", warns)
			}
			for _, want := range []string{"dir=" + textValue(dir), fmt.Sprintf("mode=%#o", tt.rootMode), "fix=" + textValue(fix)} {
				if !strings.Contains(warns[0], want) {
					t.Errorf("warning %q does not contain %q", warns[0], want)
				}
			}
		})
	}
}

// textValue is s as slog's text handler writes it: quoted when it holds
// a space, a double quote, a backslash or an equals sign.
func textValue(s string) string {
	if strings.ContainsAny(s, " \"\\=") {
		return strconv.Quote(s)
	}
	return s
}
