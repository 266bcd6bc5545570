package hearth_test

import (
	"testing"
	"time"

	"github.com/mnemo/mnemo/hearth"
)

// TestFlushHysteresis: past FlushAt the flush pass flushes down to
// FlushLowWater, so one flush covers several turns and the next is
// several turns away; with the low-water mark at FlushAt (no hysteresis)
// each flush covers the one turn about to leave. Each turn is sent once
// the one before is curated, and the flush pass looks ahead from the
// turns curated, so the ranges do not depend on timing.
func TestFlushHysteresis(t *testing.T) {
	// A 900-token recent share: about eight of longTurn's turns.
	budget := hearth.ContextBudget{Tokens: 3000, Shares: hearth.ContextShares{Recent: 30}}
	const turns = 20
	for _, tc := range []struct {
		name              string
		lowWater          int
		minTurns, maxTurn int // user messages per flush
		minFlushes        int
		maxFlushes        int
	}{
		// Measured: 5 flushes of 3 to 4 turns.
		{"default low water", 0, 3, 5, 1, turns / 3},
		// Measured: 13 flushes of 1 turn, one of 2 (the first summary
		// takes its tokens from the share).
		{"low water at FlushAt", hearth.DefaultFlushAt, 1, 2, turns / 2, turns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, j, _ := openVaultRoot(t)
			flushed := make(chan hearth.Flushed, turns)
			curated := make(chan hearth.Curated, turns)
			h := runCore(t, hearth.Config{
				Journal: j, Vault: v, Models: fixed{&recModel{}}, ShutdownGrace: 5 * time.Second, Budget: budget,
				Curator: &hearth.CuratorConfig{StateDir: t.TempDir(), Model: &flushModel{}, FlushLowWater: tc.lowWater,
					OnFlush: func(f hearth.Flushed) { flushed <- f }, Observe: func(c hearth.Curated) { curated <- c }},
			})
			for i := range turns + 1 {
				sendAwait(t, h, longTurn(i))
				select {
				case <-curated:
				case <-time.After(30 * time.Second):
					t.Fatalf("turn %d not curated; health %+v", i, h.CuratorHealth())
				}
			}
			// Turn 20 is curated: the flush pass after turn 19 is over.
			n := 0
			for range len(flushed) {
				f := <-flushed
				n++
				users := len(f.Records) / 2 // a message and its reply
				if users < tc.minTurns || users > tc.maxTurn {
					t.Errorf("flush %d covers %d turns (%v), want %d to %d", n, users, f.Records, tc.minTurns, tc.maxTurn)
				}
			}
			if n < tc.minFlushes || n > tc.maxFlushes {
				t.Errorf("%d flushes over %d turns, want %d to %d", n, turns, tc.minFlushes, tc.maxFlushes)
			}
		})
	}
}
