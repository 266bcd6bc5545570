package hearth_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory/vault"
)

// summaryGate holds the first read of a thread summary made after it is
// armed, until release is closed: a flush reads the summary's file just
// before it proposes the summary, outside the vault's lock.
type summaryGate struct {
	*vault.Vault
	armed   atomic.Bool
	entered chan string
	release chan struct{}
}

func (g *summaryGate) Read(p string) ([]byte, error) {
	if strings.HasPrefix(p, vault.SummariesDir+"/threads/") && g.armed.CompareAndSwap(true, false) {
		g.entered <- p
		<-g.release
	}
	return g.Vault.Read(p)
}

// TestFlushRacesForget: the owner forgets a record a flush read while the
// flush is still out. While its model call is ("model"), the flush is
// dropped: nothing it made is written, its cursor stays, and a later
// flush reads the live records. While it writes ("write": held after its
// note is written and before its summary is, while the forget commits and
// its cascade runs to the end), what it wrote after is forgotten again
// and its cursor is reset. Either way no note or summary in the vault
// cites the forgotten record afterwards.
func TestFlushRacesForget(t *testing.T) {
	for _, when := range []string{"model", "write"} {
		t.Run(when, func(t *testing.T) {
			v, j, dir := openVaultRoot(t)
			g := &summaryGate{Vault: v, entered: make(chan string, 1), release: make(chan struct{})}
			released := false
			defer func() {
				if !released {
					close(g.release)
				}
			}()
			var core atomic.Pointer[hearth.Hearth]
			forgetErr := make(chan error, 1)
			forget := func(id string) {
				_, err := core.Load().Forget(context.Background(), hearth.ForgetRequest{IDs: []string{id}})
				forgetErr <- err
			}
			var target atomic.Value // the record forgotten: the first the first flush shows
			model := &flushModel{during: func(msg string) {
				id := shownRecord.FindStringSubmatch(msg)[1]
				if !target.CompareAndSwap(nil, id) {
					return // a later flush
				}
				if when == "model" {
					forget(id)
					return
				}
				g.armed.Store(true)
			}}
			flushed := make(chan hearth.Flushed, 16)
			curated := make(chan hearth.Curated, 64)
			h := runCore(t, hearth.Config{
				Journal: j, Vault: g, Models: fixed{&recModel{}}, ShutdownGrace: 5 * time.Second, Budget: flushBudget,
				Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: model,
					OnFlush: func(f hearth.Flushed) { flushed <- f }, Observe: func(c hearth.Curated) { curated <- c }},
			})
			core.Store(h)
			if when == "write" {
				released = true
				go func() {
					<-g.entered
					forget(target.Load().(string))
					close(g.release)
				}()
			}

			got := turnsUntilFlush(t, h, curated, flushed, 24, longTurn)
			if err := <-forgetErr; err != nil {
				t.Fatal(err)
			}
			gone := target.Load().(string)
			switch when {
			case "model":
				if slices.Contains(got.Records, gone) || len(got.Forgotten) != 0 {
					t.Errorf("the flush after the forget %+v, want it without %s", got, gone)
				}
			case "write":
				if !slices.Equal(got.Forgotten, []string{gone}) {
					t.Errorf("flush reports %v forgotten while it wrote, want [%s]", got.Forgotten, gone)
				}
				if c := h.CuratorHealth().FlushCursor; c != "" {
					t.Errorf("flush cursor %q after what the flush made was forgotten, want reset", c)
				}
			}
			for _, sub := range []string{vault.KnowledgeDir, vault.SummariesDir} {
				filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					if b, _ := os.ReadFile(p); strings.Contains(string(b), gone) {
						t.Errorf("%s still cites the forgotten record %s:\n%s", p, gone, b)
					}
					return nil
				})
			}
		})
	}
}
