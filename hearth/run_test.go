package hearth_test

import (
	"context"
	"testing"

	"github.com/mnemo/mnemo/hearth"
)

// runCore makes a core of cfg and runs it until the test ends; cleanup
// waits for Run to return.
func runCore(t *testing.T, cfg hearth.Config) *hearth.Hearth {
	t.Helper()
	h, err := hearth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}
