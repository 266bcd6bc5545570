package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

var ts = time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)

func TestEvent(t *testing.T) {
	user := journal.Record{ID: "u1", Role: "user", Text: "hi", TS: ts, Mode: "text"}
	yes := true
	tool := journal.Record{ID: "t1", Role: "tool", Text: "42", TS: ts, Mode: "text", Tool: &journal.ToolResult{
		CallID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":1}`), Reason: "sum", DurationMS: 3, Confirmed: &yes,
	}}
	failed := journal.Record{ID: "t2", Role: "tool", Text: "boom", TS: ts, Mode: "text", Tool: &journal.ToolResult{CallID: "c2", Name: "calc", Error: "boom"}}
	step := journal.Record{ID: "a1", Role: "agent", Text: "let me see", TS: ts, Mode: "text", ToolCalls: []journal.ToolCall{{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":1}`), Reason: "sum"}}}
	tests := []struct {
		name string
		ev   hearth.Event
		want ipc.Msg
	}{
		{"snapshot", &hearth.Snapshot{Conversation: "main", Turns: []journal.Record{user}, State: "thinking", Detail: "provider overloaded, retry 2/3 in 1 s", Pending: "so far", Provider: "xai", Model: "grok", Version: "1.2", Features: []string{"search"}},
			&ipc.History{Turns: []ipc.Turn{{ID: "u1", Role: "user", Content: "hi", TS: ts, Mode: "text"}}, Server: "hearth/1.2", Protocol: ipc.ProtocolVersion, ConversationID: "main", State: "thinking", Detail: "provider overloaded, retry 2/3 in 1 s", Pending: "so far", Provider: "xai", Model: "grok", Features: []string{"search"}}},
		{"turn stored", &hearth.TurnStored{Record: user, Ref: "r"}, &ipc.TurnStored{Turn: ipc.Turn{ID: "u1", Role: "user", Content: "hi", TS: ts, Mode: "text"}, Ref: "r"}},
		{"agent step", &hearth.TurnStored{Record: step}, &ipc.TurnStored{Turn: ipc.Turn{ID: "a1", Role: "agent", Content: "let me see", TS: ts, Mode: "text",
			ToolCalls: []ipc.ToolCall{{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":1}`), Reason: "sum"}}}}},
		{"tool outcome", &hearth.ToolOutcome{Record: tool}, &ipc.ToolResult{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":1}`), Reason: "sum", Result: "42", DurationMS: 3, Confirmed: &yes}},
		{"tool failure", &hearth.ToolOutcome{Record: failed}, &ipc.ToolResult{ID: "c2", Name: "calc", Error: "boom"}},
		{"done", &hearth.ReplyDone{Record: journal.Record{ID: "a2", Role: "agent", Text: "ok", TS: ts, Mode: "text", Incomplete: true}, Model: "grok", Usage: &hearth.Usage{InputTokens: 5, OutputTokens: 1}},
			&ipc.Done{Turn: ipc.Turn{ID: "a2", Role: "agent", Content: "ok", TS: ts, Mode: "text", Incomplete: true}, Model: "grok", Usage: &ipc.Usage{InputTokens: 5, OutputTokens: 1}}},
		{"token", &hearth.Token{Text: "abc"}, &ipc.Token{Content: "abc"}},
		{"state", &hearth.StateChanged{State: "tool", Detail: "calc"}, &ipc.Status{State: "tool", Detail: "calc"}},
		{"tool started", &hearth.ToolStarted{ID: "c1", Name: "calc", Args: json.RawMessage(`{"x":1}`), Reason: "sum"}, &ipc.ToolCall{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":1}`), Reason: "sum"}},
		{"tool started, bad args", &hearth.ToolStarted{ID: "c1", Name: "calc", Args: json.RawMessage(`{nope`)}, &ipc.ToolCall{ID: "c1", Name: "calc"}},
		{"confirm", &hearth.ConfirmAsked{ID: "c3", Name: "fs__write", Reason: "save", Effect: "writes_local", ExpiresAt: ts},
			&ipc.ConfirmRequest{ID: "c3", Name: "fs__write", Reason: "save", Effect: "writes_local", ExpiresAt: ts}},
		{"problem", &hearth.Problem{Code: hearth.CodeProviderError, Message: "m", Ref: "r"}, &ipc.Error{Code: ipc.CodeProviderError, Message: "m", Ref: "r"}},
		{"notice", &hearth.Notice{Code: hearth.CodeConfigInvalid, Message: "bad prefs"}, &ipc.Error{Code: ipc.CodeConfigInvalid, Message: "bad prefs"}},
		{"reply", &hearth.Reply{Value: &ipc.Pong{Ref: "p"}}, &ipc.Pong{Ref: "p"}},
		{"proposal queued", &hearth.ProposalQueued{Why: "the policy reviews changes to knowledge/prefs/", Proposal: vault.Proposal{
			ID: "prop_1", Op: vault.OpCreate, Path: "knowledge/prefs/tea.md", Content: strings.Repeat("x", ipc.MaxTurnContent+1), Reason: "said so", Author: "agent", CreatedAt: ts,
			Sources: []vault.Source{{Thread: "main", Turn: "u1"}}}},
			&ipc.Proposal{ID: "prop_1", Op: "create", Path: "knowledge/prefs/tea.md", Content: strings.Repeat("x", ipc.MaxTurnContent), Truncated: true,
				Reason: "said so", Author: "agent", Why: "the policy reviews changes to knowledge/prefs/", CreatedAt: ts,
				Sources: []ipc.ProposalSource{{Thread: "main", Turn: "u1"}}}},
		{"proposal queued, an update", &hearth.ProposalQueued{Why: "identity is reviewed", Current: []byte("old\n"), Proposal: vault.Proposal{
			ID: "prop_2", Op: vault.OpUpdate, Path: "knowledge/people/owner.md", Content: "new\n", Reason: "moved", Author: "agent", CreatedAt: ts}},
			&ipc.Proposal{ID: "prop_2", Op: "update", Path: "knowledge/people/owner.md", Content: "new\n", Current: "old\n",
				Reason: "moved", Author: "agent", Why: "identity is reviewed", CreatedAt: ts}},
		{"proposal decided", &hearth.ProposalDecided{By: "policy", ProposalOutcome: hearth.ProposalOutcome{ID: "prop_1", Path: "knowledge/a.md", Decision: "applied", Why: "low risk", Commit: "abc"}},
			&ipc.ProposalDecided{ID: "prop_1", Path: "knowledge/a.md", Decision: "applied", Why: "low risk", Commit: "abc", By: "policy"}},
		{"reply of another door", &hearth.Reply{Value: "not a message"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Event(tt.ev)); diff != "" {
				t.Errorf("Event (-want +got):\n%s", diff)
			}
		})
	}
}

// Every code the core uses is a code of protocol v1: the wire carries the
// core's codes as they are.
func TestCodesAreProtocolCodes(t *testing.T) {
	wire := map[string]bool{}
	for _, c := range []string{ipc.CodeBadRequest, ipc.CodeUnknownType, ipc.CodeLineTooLong, ipc.CodeUnauthorized, ipc.CodeProtocol,
		ipc.CodeHandshake, ipc.CodeTooManyClients, ipc.CodeSlowClient, ipc.CodeNoProvider, ipc.CodeProviderError, ipc.CodeToolError,
		ipc.CodeContextOverflow, ipc.CodeUnavailable, ipc.CodeShuttingDown, ipc.CodeInternal, ipc.CodeCancelled, ipc.CodeConfigInvalid} {
		wire[c] = true
	}
	for _, c := range []string{hearth.CodeBadRequest, hearth.CodeUnavailable, hearth.CodeInternal, hearth.CodeNoProvider, hearth.CodeProviderError,
		hearth.CodeContextOverflow, hearth.CodeToolError, hearth.CodeCancelled, hearth.CodeShuttingDown, hearth.CodeSlowClient, hearth.CodeConfigInvalid} {
		if !wire[c] {
			t.Errorf("core code %q is not a protocol v1 error code", c)
		}
	}
}

func TestTurnCutsContent(t *testing.T) {
	long := strings.Repeat("é", ipc.MaxTurnContent) // 2 bytes a rune: twice the cap
	got := Turn(journal.Record{ID: "x", Role: "agent", Text: long})
	if !got.Truncated || len(got.Content) > ipc.MaxTurnContent || !strings.HasPrefix(long, got.Content) {
		t.Errorf("Turn of %d bytes: truncated %v, content %d bytes; want cut on a rune boundary to at most %d", len(long), got.Truncated, len(got.Content), ipc.MaxTurnContent)
	}
	res := Turn(journal.Record{ID: "t", Role: "tool", Text: strings.Repeat("r", 5000), Tool: &journal.ToolResult{CallID: "c", Name: "n"}})
	if res.Content != "" || len(res.Tool.Result) != maxToolSummary {
		t.Errorf("a tool turn: content %q, result %d bytes; want no content and a %d-byte summary", res.Content, len(res.Tool.Result), maxToolSummary)
	}
}

func TestSearchHit(t *testing.T) {
	got := SearchHit(memory.Hit{ID: "v#1", Kind: "turn", Role: "user", Session: "main", Channel: "voice", Text: "spoken", TS: ts, Score: 0.5})
	want := ipc.SearchHit{Turn: ipc.Turn{ID: "v#1", Role: "user", Content: "spoken", TS: ts, Mode: ipc.ModeVoice}, Score: 0.5, Kind: "turn", Session: "main", Channel: "voice"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SearchHit (-want +got):\n%s", diff)
	}
	note := SearchHit(memory.Hit{ID: "note:01N#1", Kind: "knowledge", Path: "knowledge/people/ana.md", Heading: "Home", Status: "active", Confidence: 0.9,
		Text: "## Home\nLisbon", TS: ts, Score: 1})
	wantNote := ipc.SearchHit{Turn: ipc.Turn{ID: "note:01N#1", Content: "## Home\nLisbon", TS: ts, Mode: ipc.ModeText}, Score: 1, Kind: "knowledge",
		Path: "knowledge/people/ana.md", Heading: "Home", Status: "active", Confidence: 0.9}
	if diff := cmp.Diff(wantNote, note); diff != "" {
		t.Errorf("a note's SearchHit (-want +got):\n%s", diff)
	}
}

func TestErrorHidesDetails(t *testing.T) {
	if got := Error(&hearth.Problem{Code: hearth.CodeBadRequest, Message: "search query is empty", Ref: "s"}); got.Code != ipc.CodeBadRequest || got.Ref != "s" {
		t.Errorf("a problem became %+v", got)
	}
	got := Error(errors.New("open /home/owner/.local/share/mnemo/threads: permission denied"))
	if got.Code != ipc.CodeInternal || strings.Contains(got.Message, "/home") {
		t.Errorf("an internal error became %+v: it must not carry the details", got)
	}
}

func TestFarewell(t *testing.T) {
	for _, tt := range []struct {
		why  error
		code string
	}{
		{hearth.ErrLagging, ipc.CodeSlowClient},
		{hearth.ErrShuttingDown, ipc.CodeShuttingDown},
		{hearth.ErrUnsubscribed, ""},
		{nil, ""},
	} {
		got := Farewell(tt.why)
		if (got == nil) != (tt.code == "") || (got != nil && got.Code != tt.code) {
			t.Errorf("Farewell(%v) = %+v, want code %q", tt.why, got, tt.code)
		}
	}
}

// A long reply weighs what the client will read of it, not the whole
// text the core holds by reference.
func TestCostFollowsTheWire(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	tests := []struct {
		name   string
		ev     hearth.Event
		lo, hi int64
	}{
		{"long reply", &hearth.ReplyDone{Record: journal.Record{Text: long}}, ipc.MaxTurnContent, ipc.MaxTurnContent + 256},
		{"long tool result", &hearth.ToolOutcome{Record: journal.Record{Text: long, Tool: &journal.ToolResult{Name: "n"}}}, maxToolSummary, 2*maxToolSummary + 256},
		{"token", &hearth.Token{Text: "abc"}, 3, 3},
		{"huge snapshot", &hearth.Snapshot{Turns: []journal.Record{{Text: long}, {Text: long}, {Text: long}, {Text: long}, {Text: long}, {Text: long}, {Text: long}, {Text: long}, {Text: long}}}, ipc.MaxLineBytes, ipc.MaxLineBytes},
	}
	for _, tt := range tests {
		if got := Cost(tt.ev); got < tt.lo || got > tt.hi {
			t.Errorf("%s: Cost = %d, want within [%d, %d]", tt.name, got, tt.lo, tt.hi)
		}
	}
}

// A page of history always fits one line: the turns that do not are left
// for the next page, and at least one turn is always sent.
func TestHistoryPageFitsALine(t *testing.T) {
	big := strings.Repeat("<", ipc.MaxTurnContent) // escaped six-fold on the wire
	rec := func(i int, text string) journal.Record {
		return journal.Record{ID: fmt.Sprintf("r%03d", i), Role: "user", Text: text, TS: ts, Mode: "text"}
	}
	for _, tc := range []struct {
		name      string
		recs      []journal.Record
		more      bool
		wantTurns int
		wantMore  bool
	}{
		{"small", []journal.Record{rec(1, "a"), rec(2, "b")}, false, 2, false},
		{"small, more to come", []journal.Record{rec(1, "a")}, true, 1, true},
		{"too big for a line", []journal.Record{rec(1, big), rec(2, big), rec(3, big)}, false, 1, true},
		{"empty", nil, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := HistoryPage("h1", hearth.HistoryPage{Records: tc.recs, More: tc.more})
			if len(p.Turns) != tc.wantTurns || p.More != tc.wantMore || p.Ref != "h1" {
				t.Errorf("page of %d turns, more %v, ref %q; want %d, %v, h1", len(p.Turns), p.More, p.Ref, tc.wantTurns, tc.wantMore)
			}
			if _, err := ipc.Encode(p); err != nil {
				t.Errorf("page does not encode: %v", err)
			}
		})
	}
}

// A proposal under review carries its new content and the file as it is,
// each cut, and the file cut further so that the whole fits one line even
// when every byte is escaped.
func TestReviewProposalFitsOneLine(t *testing.T) {
	big := strings.Repeat("\x01", ipc.MaxTurnContent+10)
	q := hearth.ProposalQueued{Why: "w", Current: []byte(big), Proposal: vault.Proposal{ID: "prop_1", Op: vault.OpUpdate, Path: "knowledge/a.md", Content: big, CreatedAt: ts}}
	w := ReviewProposal(q)
	line, err := ipc.Encode(&w)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Truncated || !w.CurrentTruncated || w.Current == "" || len(line) > ipc.MaxLineBytes+1 {
		t.Errorf("truncated %v, current truncated %v, %d bytes of current, line %d bytes", w.Truncated, w.CurrentTruncated, len(w.Current), len(line))
	}
	l := ReviewList("r", []hearth.ProposalQueued{q, q})
	if line, err := ipc.Encode(l); err != nil || len(l.Proposals) != 1 || !l.More {
		t.Errorf("list of two: %d proposals, more %v, %d bytes, %v", len(l.Proposals), l.More, len(line), err)
	}
	small := ReviewProposal(hearth.ProposalQueued{Current: []byte("a\n"), Proposal: vault.Proposal{ID: "prop_2", Content: "b\n"}})
	if small.Current != "a\n" || small.CurrentTruncated {
		t.Errorf("a small file: %q, truncated %v", small.Current, small.CurrentTruncated)
	}
}

// A list of proposals too long for one line carries what fits, oldest
// first, and says there are more.
func TestProposalListFitsOneLine(t *testing.T) {
	var ps []vault.Proposal
	for i := range 20 {
		ps = append(ps, vault.Proposal{ID: fmt.Sprintf("prop_%02d", i), Op: vault.OpCreate, Path: "knowledge/a.md", Content: strings.Repeat("\x01", 64<<10), CreatedAt: ts})
	}
	l := ProposalList("r", ps)
	line, err := ipc.Encode(l)
	if err != nil {
		t.Fatal(err)
	}
	if !l.More || len(l.Proposals) == 0 || len(l.Proposals) == len(ps) || len(line) > ipc.MaxLineBytes+1 || l.Proposals[0].ID != "prop_00" {
		t.Errorf("%d of %d proposals, more %v, %d bytes", len(l.Proposals), len(ps), l.More, len(line))
	}
	if l := ProposalList("r", ps[:2]); l.More || len(l.Proposals) != 2 {
		t.Errorf("two small proposals: %d, more %v", len(l.Proposals), l.More)
	}
}
