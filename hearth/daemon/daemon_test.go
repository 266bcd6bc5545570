package daemon

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/internal/nettest"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory/recall/qdrant/qdranttest"
	"github.com/mnemo/mnemo/memory/recollect"
)

func TestAuthToken(t *testing.T) {
	t.Run("env wins", func(t *testing.T) {
		got, err := authToken(loadConfig(t, map[string]string{"APP_AUTH_TOKEN": " from-env "}))
		if err != nil || got != "from-env" {
			t.Errorf("authToken() = %q, %v, want from-env", got, err)
		}
	})
	t.Run("minted once, 0600, reused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sub", "token")
		o := loadConfig(t, nil)
		o.TokenFile.Value = path
		first, err := authToken(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(first) < 32 {
			t.Errorf("minted token %q is too short", first)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("token file mode = %v, want 0600", st.Mode().Perm())
		}
		again, err := authToken(o)
		if err != nil || again != first {
			t.Errorf("second authToken() = %q, %v, want the first token", again, err)
		}
	})
	t.Run("loose permissions refused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(path, []byte("leaked\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		o := loadConfig(t, nil)
		o.TokenFile.Value = path
		if _, err := authToken(o); err == nil || !strings.Contains(err.Error(), "0600") {
			t.Errorf("authToken() error = %v, want a 0600 complaint", err)
		}
	})
}

// healthUntil asks hearth for its health until ok accepts the index's.
func healthUntil(t *testing.T, c *ipc.Conn, what string, ok func(*ipc.IndexHealth) bool) *ipc.IndexHealth {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := c.Send(&ipc.Health{Ref: "h"}); err != nil {
			t.Fatal(err)
		}
		got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.HealthReport); return ok })
		ix := got[len(got)-1].(*ipc.HealthReport).Index
		if ok(ix) {
			return ix
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; index health %+v", what, ix)
		}
		time.Sleep(20 * time.Millisecond) // polling hearth's background retries
	}
}

// search asks hearth's memory once.
func search(t *testing.T, c *ipc.Conn, query string) []ipc.SearchHit {
	t.Helper()
	if err := c.Send(&ipc.Search{Query: query, Ref: "s"}); err != nil {
		t.Fatal(err)
	}
	got := recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.SearchResults); return ok })
	return got[len(got)-1].(*ipc.SearchResults).Results
}

// TestRecallOpensWhenQdrantComesUp starts hearth with MNEMO_QDRANT_ADDR
// where nothing listens: recall reports itself unavailable (safely) while
// search uses keywords; once a Qdrant starts there, recall opens on a
// retry, with no restart, and search goes through it.
func TestRecallOpensWhenQdrantComesUp(t *testing.T) {
	// Qdrant is behind a gate that is down until it "starts": the gate
	// holds the port throughout (a port closed and listened on again
	// later may have been taken meanwhile).
	q, err := qdranttest.Start(qdranttest.Options{APIKey: "qdrant-secret-key"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	gate := nettest.NewGate(t, q.Addr())
	gate.Down()
	qdrantAddr := gate.Addr()
	_, port, _ := net.SplitHostPort(qdrantAddr)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	cfg := loadConfig(t, map[string]string{
		"APP_AUTH_TOKEN":       testToken,
		"MNEMO_EMBEDDER":       "none",
		"MNEMO_QDRANT_ADDR":    qdrantAddr,
		"MNEMO_QDRANT_API_KEY": "qdrant-secret-key",
	})
	cfg.Addr.Value = "127.0.0.1:0"
	cfg.Root.Value = t.TempDir()
	rt := Runtime{
		Log:         slog.New(slog.NewTextHandler(t.Output(), nil)),
		Ready:       func(a net.Addr) { ready <- a },
		recallRetry: recollect.RetryPolicy{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	}
	go func() { done <- Run(ctx, cfg, rt) }()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	c := dial(t, addr.String())

	down := healthUntil(t, c, "recall to report its failed attempts", func(ix *ipc.IndexHealth) bool { return ix != nil && ix.Failures >= 2 })
	if !down.Unavailable || down.Backend != "qdrant" || !strings.Contains(down.Failing, "retrying") {
		t.Errorf("health while Qdrant is down = %+v", down)
	}
	for _, leak := range []string{"127.0.0.1", port, "qdrant-secret-key", "refused"} {
		if strings.Contains(down.Failing, leak) {
			t.Errorf("health leaks %q: %q", leak, down.Failing)
		}
	}
	c.Send(&ipc.Transcript{Role: ipc.RoleUser, Text: "We planted tomatoes in the raised bed."})
	recvUntil(t, c, func(m ipc.Msg) bool { _, ok := m.(*ipc.TurnStored); return ok })
	if hits := search(t, c, "tomatoes"); len(hits) != 1 || !strings.Contains(hits[0].Turn.Content, "tomatoes") {
		t.Errorf("keyword search while Qdrant is down = %+v", hits)
	}

	if n := q.Calls("/qdrant.Collections/Get"); n != 0 {
		t.Fatalf("Qdrant answered %d collection lookups while down", n)
	}
	gate.Up()
	up := healthUntil(t, c, "recall to open", func(ix *ipc.IndexHealth) bool { return ix != nil && !ix.Unavailable })
	if q.Calls("/qdrant.Collections/Get") == 0 {
		t.Error("recall opened without looking its collection up in Qdrant")
	}
	if up.Backend != "qdrant" || up.Failing != "" {
		t.Errorf("health once Qdrant is up = %+v", up)
	}
	// The indexer catches up from the journal; search now queries Qdrant.
	deadline := time.Now().Add(20 * time.Second)
	for {
		hits := search(t, c, "tomatoes")
		if q.Calls("/qdrant.Points/Query") > 0 && len(hits) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search never went through Qdrant (%d queries)", q.Calls("/qdrant.Points/Query"))
		}
		time.Sleep(20 * time.Millisecond) // polling the asynchronous indexer
	}
	if hits := search(t, c, "raised bed"); len(hits) == 0 || !strings.Contains(hits[0].Turn.Content, "tomatoes") {
		t.Errorf("recall search = %+v, want the indexed turn", hits)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
