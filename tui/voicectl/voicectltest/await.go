package voicectltest

import (
	"context"
	"testing"

	"github.com/mnemo/mnemo/tui/voicectl"
)

// Await reads the desk's events until ok holds for one; the session
// ending first, or ctx ending, fails the test.
func Await(ctx context.Context, t testing.TB, desk *voicectl.Desk, what string, ok func(voicectl.Event) bool) {
	t.Helper()
	for {
		ev, err := desk.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if e, end := ev.(voicectl.Ended); end {
			t.Fatalf("the session ended waiting for %s: %v", what, e.Err)
		}
		if ok(ev) {
			return
		}
	}
}
