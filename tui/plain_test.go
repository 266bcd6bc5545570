package tui

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/ipc"
)

// healthHearth answers one connection: history on connect, then report to
// health. It returns the address to dial.
func healthHearth(t *testing.T, report *ipc.HealthReport) string {
	t.Helper()
	return serveOne(t, func(r *ipc.Reader, w *ipc.Writer) {
		w.Write(&ipc.History{Server: "hearth/0.1.0", Protocol: ipc.ProtocolVersion, ConversationID: "main", State: ipc.StateIdle})
		m, err := r.Read()
		if err != nil {
			return
		}
		if h, ok := m.(*ipc.Health); ok {
			rep := *report
			rep.Ref = h.Ref
			w.Write(&rep)
		}
		r.Read() // until the client hangs up
	})
}

// serveOne is a stand-in hearth on a loopback port for one client: after
// the client's connect, serve speaks for hearth until it returns. It
// returns the address to dial; the test's cleanup waits for serve.
func serveOne(t *testing.T, serve func(r *ipc.Reader, w *ipc.Writer)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		r, w := ipc.NewReader(nc), ipc.NewWriter(nc)
		if m, err := r.Read(); err != nil || m.Type() != ipc.TypeConnect {
			return
		}
		serve(r, w)
	}()
	return ln.Addr().String()
}

func TestStatus(t *testing.T) {
	const first = "hearth hearth/0.1.0: idle, 1 client(s), model xai grok-4.3\n"
	report := func(ix *ipc.IndexHealth) *ipc.HealthReport {
		return &ipc.HealthReport{State: ipc.StateIdle, Clients: 1, Provider: "xai", Model: "grok-4.3", Index: ix}
	}
	retrying := "the qdrant index cannot be opened; retrying at 12:00:05, memory search uses keywords meanwhile (details in hearth's log)"
	misconfigured := "recall is misconfigured and stays off until hearth restarts; memory search uses keywords (details in hearth's log)"
	for _, tt := range []struct {
		name   string
		report *ipc.HealthReport
		want   string
		absent []string // must not appear
	}{
		{
			name:   "catching up",
			report: report(&ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec", Indexed: 120, LagMS: 1500}),
			want:   first + "recall: embedded index, embedder wordvec, catching up with the journal (search may use keywords meanwhile); 120 documents indexed since start, 1.5s behind the journal\n",
			absent: []string{"unavailable", "failures", "searches"},
		},
		{
			name:   "ready, after a restart, with searches",
			report: report(&ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec", Ready: true, RecallSearches: 4, KeywordSearches: 1}),
			want: first + "recall: embedded index, embedder wordvec, ready; 0 documents indexed since start, 0s behind the journal\n" +
				"recall: searches since start: 4 by recall, 1 by keywords\n",
		},
		{
			name:   "clients dropped and refused",
			report: &ipc.HealthReport{State: ipc.StateIdle, Clients: 1, Provider: "xai", Model: "grok-4.3", Dropped: 1, Refused: 2, Throttled: 3},
			want: first + "clients: 1 dropped for falling behind, 2 connections refused before authenticating, 3 failed handshakes throttled\n" +
				"recall: not running (opening, or unavailable: see hearth's log); search uses keywords over the journal\n",
		},
		{
			name:   "indexing failing",
			report: report(&ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec", Ready: true, Indexed: 7, Failures: 2, Failing: "indexing is failing; retrying at 12:00:05 (details in hearth's log)"}),
			want: first + "recall: embedded index, embedder wordvec, ready; 7 documents indexed since start, 0s behind the journal\n" +
				"recall: indexing is failing; retrying at 12:00:05 (details in hearth's log) (2 failures)\n",
			absent: []string{"unavailable"},
		},
		{
			name:   "rebuilding",
			report: report(&ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec", Rebuilding: true, Indexed: 12, KeywordSearches: 1}),
			want: first + "recall: embedded index, embedder wordvec, rebuilding from the journal and the notes (search uses keywords meanwhile); 12 documents indexed since start, 0s behind the journal\n" +
				"recall: searches since start: 0 by recall, 1 by keywords\n",
		},
		{
			name:   "unavailable, retrying",
			report: report(&ipc.IndexHealth{Backend: "qdrant", Embedder: "wordvec", Unavailable: true, Failures: 3, Failing: retrying}),
			want: first + "recall: unavailable: the qdrant index (embedder wordvec) could not be opened after 3 attempts; nothing is being indexed\n" +
				"recall: " + retrying + "\n",
			absent: []string{"documents indexed", "behind the journal"},
		},
		{
			name:   "unavailable, first attempt failed",
			report: report(&ipc.IndexHealth{Backend: "qdrant", Embedder: "wordvec", Unavailable: true, Failures: 1, Failing: retrying}),
			want: first + "recall: unavailable: the qdrant index (embedder wordvec) could not be opened after 1 attempt; nothing is being indexed\n" +
				"recall: " + retrying + "\n",
			absent: []string{"documents indexed", "behind the journal"},
		},
		{
			name:   "unavailable, misconfigured",
			report: report(&ipc.IndexHealth{Backend: "qdrant", Embedder: "wordvec", Unavailable: true, Failures: 1, Failing: misconfigured}),
			want: first + "recall: unavailable: the qdrant index (embedder wordvec) could not be opened after 1 attempt; nothing is being indexed\n" +
				"recall: " + misconfigured + "\n",
			absent: []string{"documents indexed", "retrying"},
		},
		{
			name:   "unavailable, no reason given",
			report: report(&ipc.IndexHealth{Backend: "qdrant", Embedder: "wordvec", Unavailable: true, Failures: 2}),
			want: first + "recall: unavailable: the qdrant index (embedder wordvec) could not be opened after 2 attempts; nothing is being indexed\n" +
				"recall: memory search uses keywords over the journal meanwhile (details in hearth's log)\n",
			absent: []string{"documents indexed"},
		},
		{
			name:   "recall off",
			report: report(nil),
			want:   first + "recall: not running (opening, or unavailable: see hearth's log); search uses keywords over the journal\n",
			absent: []string{"documents indexed"},
		},
		{
			name:   "no provider",
			report: &ipc.HealthReport{State: ipc.StateIdle, Clients: 2, Index: &ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec", Ready: true}},
			want: "hearth hearth/0.1.0: idle, 2 client(s), model none configured\n" +
				"recall: embedded index, embedder wordvec, ready; 0 documents indexed since start, 0s behind the journal\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out strings.Builder
			if err := Status(ctx, Options{Addr: healthHearth(t, tt.report), Client: "test"}, &out); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("Status printed\n%s\nwant\n%s", got, tt.want)
			}
			for _, s := range tt.absent {
				if strings.Contains(out.String(), s) {
					t.Errorf("Status says %q:\n%s", s, out.String())
				}
			}
		})
	}
}

// A reply of ours cut off (cancelled, or hearth stopping mid-reply) counts
// as a failed message; so does one still owed when the connection is lost,
// unless it waits in the outbox to go out again.
func TestChatViewUnansweredMessagesFail(t *testing.T) {
	stored := func(ref, text string) ipc.Event {
		return ipc.Event{Msg: &ipc.TurnStored{Ref: ref, Turn: ipc.Turn{ID: "id-" + ref, Role: ipc.RoleUser, Content: text}}}
	}
	done := func(id string, incomplete bool) ipc.Event {
		return ipc.Event{Msg: &ipc.Done{Turn: ipc.Turn{ID: id, Role: ipc.RoleAgent, Content: "par", Incomplete: incomplete}}}
	}
	tests := []struct {
		name       string
		events     []ipc.Event
		keep       map[string]bool // abandon at the end with these kept; nil: no abandon
		wantFailed int
		wantOwed   int
	}{
		{"answered", []ipc.Event{stored("a", "hi"), done("r1", false)}, nil, 0, 0},
		{"cut off", []ipc.Event{stored("a", "hi"), done("r1", true)}, nil, 1, 0},
		{"connection lost", []ipc.Event{stored("a", "hi")}, map[string]bool{}, 1, 0},
		{"in the outbox", nil, map[string]bool{"a": true}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			v := &chatView{w: &out, seen: map[string]bool{}, mine: map[string]string{"a": "hi"}, sent: 1}
			for _, e := range tt.events {
				v.show(e)
			}
			if tt.keep != nil {
				v.abandon(tt.keep)
			}
			if v.failed != tt.wantFailed || len(v.mine) != tt.wantOwed {
				t.Errorf("failed %d, owed %d; want %d, %d\n%s", v.failed, len(v.mine), tt.wantFailed, tt.wantOwed, out.String())
			}
		})
	}
}
