package tui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// mnemo status says when vault changes wait for git, and says nothing of
// the vault when none do.
func TestPrintHealthVault(t *testing.T) {
	since := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		vault *ipc.VaultHealth
		want  string
	}{
		{"no vault", nil, ""},
		{"all committed", &ipc.VaultHealth{}, ""},
		{"waiting", &ipc.VaultHealth{Uncommitted: 2, Failing: "another git process holds the memory root's .git/index.lock", Since: since},
			"vault: 2 changes saved but not committed to git yet (since " + since.Local().Format(time.DateTime) + "): another git process holds the memory root's .git/index.lock; hearth retries\n"},
	} {
		var b bytes.Buffer
		printHealth(&b, "dev", &ipc.HealthReport{State: "idle", Vault: tc.vault})
		got := ""
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(l, "vault:") {
				got += l
			}
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
