package ipc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/ipc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	ts1 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	ts2 = time.Date(2025, 3, 14, 16, 0, 0, 0, time.FixedZone("CET", 3600))
	t1  = ipc.Turn{ID: "01JTURN1", Role: ipc.RoleUser, Content: "hello <b>&</b>\nsecond line", TS: ts1, Mode: ipc.ModeText}
	t2  = ipc.Turn{ID: "01JTURN2", Role: ipc.RoleAgent, Content: "héllo, 世界 \u2028 \"quoted\"", TS: ts2, Mode: ipc.ModeVoice, Incomplete: true}
)

// samples holds one message of every type, with every field set where
// that is possible. The golden file testdata/wire.golden holds their
// encodings; regenerate it with go test -run TestEncodeGolden -update.
var samples = []struct {
	name string
	msg  ipc.Msg
}{
	{ipc.TypeConnect, &ipc.Connect{Token: "s3cret", Client: "mnemo/0.1", Protocol: ipc.ProtocolVersion, ConversationID: "trip-2026"}},
	{ipc.TypeMessage, &ipc.Message{Content: "hello\nworld <&>", Ref: "c1", ConversationID: "trip-2026"}},
	{ipc.TypeVoiceRequest, &ipc.VoiceRequest{Ref: "vr1"}},
	{ipc.TypeTranscript, &ipc.Transcript{Role: ipc.RoleUser, Text: "hi there", Ref: "t1", Incomplete: true}},
	{ipc.TypeStopVoice, &ipc.StopVoice{}},
	{ipc.TypeVoiceToolCall, &ipc.VoiceToolCall{CallID: "call_1", Name: "memory_search", Arguments: `{"query":"coffee"}`, Ref: "vt1"}},
	{ipc.TypeVoiceToolResult, &ipc.VoiceToolResult{CallID: "call_1", Output: "no memories match", IsError: true, Ref: "vt1"}},
	{ipc.TypeDisconnect, &ipc.Disconnect{}},
	{ipc.TypePing, &ipc.Ping{Ref: "p1"}},
	{ipc.TypeHistory, &ipc.History{
		Turns:          []ipc.Turn{t1, t2},
		Server:         "hearth/0.1.0",
		Protocol:       ipc.ProtocolVersion,
		ConversationID: "main",
		State:          ipc.StateThinking,
		Pending:        "Hel",
		Provider:       "xai",
		Model:          "grok-4.3",
		Ref:            "r1",
	}},
	{ipc.TypeToken, &ipc.Token{Content: "Hel"}},
	{ipc.TypeStatus, &ipc.Status{State: ipc.StateTool, Detail: "current_time"}},
	{ipc.TypeTurn, &ipc.TurnStored{Turn: t1, Ref: "c1"}},
	{ipc.TypeDone, &ipc.Done{Turn: t2, Usage: &ipc.Usage{InputTokens: 12, OutputTokens: 40}, Model: "grok-4.3"}},
	{ipc.TypeToolCall, &ipc.ToolCall{
		ID:        "call_1",
		Name:      "memory_search",
		Arguments: map[string]any{"query": "tea", "limit": 5.0, "tags": []any{"a", nil, true}, "opts": map[string]any{}},
		Reason:    "the owner asked about tea",
	}},
	{ipc.TypeToolResult, &ipc.ToolResult{ID: "call_1", Name: "memory_search", Result: "3 hits", Error: "partial", DurationMS: 3}},
	{ipc.TypeVoiceCredential, &ipc.VoiceCredential{
		Token: "eph", ExpiresAt: ts2, Instructions: "be brief", Model: "grok-voice", URL: "wss://example.invalid/v1/realtime",
		Dialect: ipc.DialectXAI, Voice: "eve", TranscriptionModel: "grok-transcribe",
		VAD:   &ipc.VoiceVAD{Type: ipc.VADServer, Threshold: 0.2, SilenceMS: 500, PrefixPaddingMS: 300},
		Tools: []ipc.VoiceTool{{Name: "memory_search", Description: "search memory", Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}},
		Ref:   "vr1",
	}},
	{ipc.TypeError, &ipc.Error{Code: ipc.CodeNoProvider, Message: "no model provider is configured", Ref: "c1"}},
	{ipc.TypePong, &ipc.Pong{Ref: "p1"}},
	{ipc.TypeCancel, &ipc.Cancel{Ref: "c1"}},
	{ipc.TypeConfirmRequest, &ipc.ConfirmRequest{ID: "call_2", Name: "fs_write", Arguments: map[string]any{"path": "notes.md"}, Reason: "save the list", Effect: "writes_local", ExpiresAt: ts2}},
	{ipc.TypeConfirm, &ipc.Confirm{ID: "call_2", Approve: true}},
	{ipc.TypeSearch, &ipc.Search{Query: "garden", K: 5, Roles: []string{ipc.RoleUser, ipc.RoleAgent}, Kinds: []string{ipc.KindTurn}, Since: ts1, Until: ts2, Ref: "s1"}},
	{ipc.TypeSearchResults, &ipc.SearchResults{Ref: "s1", Results: []ipc.SearchHit{{Turn: t1, Score: 2.5, Kind: ipc.KindTurn, Session: "main", Channel: "chat"}}}},
	{ipc.TypeHealth, &ipc.Health{Ref: "h1"}},
	{ipc.TypeHealthReport, &ipc.HealthReport{Ref: "h1", State: ipc.StateIdle, Clients: 2, Provider: "xai", Model: "grok-4.3",
		Index: &ipc.IndexHealth{Backend: "embedded", Embedder: "wordvec:wink-sg100d:100000", Indexed: 120, LagMS: 1500, Failures: 2, Failing: "indexing is failing; retrying", Unavailable: true}}},
	{ipc.TypeHistoryQuery, &ipc.HistoryQuery{Limit: 20, After: "01KAK3J7Y0", Since: ts1, Ref: "h1", ConversationID: "trip-2026"}},
	{ipc.TypeHistoryPage, &ipc.HistoryPage{Ref: "h1", Turns: []ipc.Turn{t1}, More: true}},
	{ipc.TypeForget, &ipc.Forget{IDs: []string{"01KAK3J7Y0Q2V5S8WZ3C9D4E6F#2"}, Purge: true, Ref: "f1"}},
	{ipc.TypeForgotten, &ipc.Forgotten{IDs: []string{"01KAK3J7Y0Q2V5S8WZ3C9D4E6F"}, By: "owner", Ref: "f1", Unknown: []string{"x"}, Purged: &ipc.Purged{Records: 1, Shards: 1}}},
	{ipc.TypeProposals, &ipc.Proposals{Ref: "v1"}},
	{ipc.TypeProposal, &prop1},
	{ipc.TypeProposalList, &ipc.ProposalList{Ref: "v1", Proposals: []ipc.Proposal{prop1}, More: true}},
	{ipc.TypeProposalDecide, &ipc.ProposalDecide{ID: "prop_01KAK3J7Y0Q2V5S8WZ3C9D4E6F", Approve: true, Content: "---\nid: x\n---\nflat white\n", Ref: "v2"}},
	{ipc.TypeProposalDecided, &ipc.ProposalDecided{ID: "prop_01KAK3J7Y0Q2V5S8WZ3C9D4E6F", Path: "knowledge/prefs/coffee.md", Decision: "applied",
		Why: "approved by the owner", Commit: "4f1c2d", CommitFailed: true, By: "owner", Ref: "v2"}},
	{ipc.TypeVaultRead, &ipc.VaultRead{Path: "knowledge/prefs/coffee.md", At: "4f1c2d", Ref: "r1"}},
	{ipc.TypeVaultFile, &ipc.VaultFile{Path: "knowledge/prefs/coffee.md", Commit: "4f1c2d", Content: "---\nid: x\n---\nblack coffee\n", Truncated: true, Ref: "r1"}},
	{ipc.TypeVaultWrite, &ipc.VaultWrite{Op: ipc.VaultOpEdit, Path: "knowledge/prefs/coffee.md", Content: "---\n", Hard: true, Base: "ab12",
		Patch: &ipc.VaultPatch{Append: "no sugar", TagsAdd: []string{"drinks"}, Confidence: new(0.9), Confirmed: true}, Reason: "my coffee", Ref: "w1"}},
	{ipc.TypeVaultList, &ipc.VaultList{NoteType: "person", Status: "active", Tag: "family", Prefix: "knowledge/people/", Ref: "l1"}},
	{ipc.TypeVaultNotes, &ipc.VaultNotes{Notes: []ipc.VaultNote{{Path: "knowledge/people/ana.md", ID: "01KAK3J7Y0Q2V5S8WZ3C9D4E6F", Title: "Ana", NoteType: "person",
		Status: "active", Tags: []string{"family"}, UpdatedAt: ts1, Error: "bad"}}, More: true, Ref: "l1"}},
	{ipc.TypeVaultHistory, &ipc.VaultHistory{Path: "knowledge/prefs/coffee.md", Limit: 20, Ref: "h1"}},
	{ipc.TypeVaultChanges, &ipc.VaultChanges{Path: "knowledge/prefs/coffee.md", Changes: []ipc.VaultChange{{Commit: "4f1c2d", Author: "owner", When: ts1,
		Op: "update", Subject: "vault: update knowledge/prefs/coffee.md", Reason: "my coffee", Proposal: "prop_01KAK3J7Y0Q2V5S8WZ3C9D4E6F"}}, More: true, Ref: "h1"}},
	{ipc.TypeVaultPurge, &ipc.VaultPurge{Layer: "threads", Confirm: true, Reason: "start over", Ref: "p1"}},
	{ipc.TypeVaultPurged, &ipc.VaultPurged{Layer: "knowledge", Removed: 12, Commit: "4f1c2d", CommitFailed: true, Ref: "p1"}},
	{ipc.TypeVaultExport, &ipc.VaultExport{Path: "/home/ana/mnemo.tar.gz", Ref: "e1"}},
	{ipc.TypeVaultExported, &ipc.VaultExported{Path: "/home/ana/mnemo.tar.gz", Bytes: 48213, Files: 31, Notes: []string{"threads/x: a symbolic link, not exported"}, Ref: "e1"}},
	{ipc.TypeShutdown, &ipc.Shutdown{Ref: "s1"}},
	{ipc.TypePairStart, &ipc.PairStart{Actor: "owner", Ref: "p1"}},
	{ipc.TypePairCode, &ipc.PairCode{Code: "7KQ2M9XHTR", Actor: "owner", Expires: ts1, Fingerprint: "sha256:ab12", Ref: "p1"}},
	{ipc.TypePair, &ipc.Pair{Code: "7KQ2M9XHTR", Name: "laptop", Client: "mnemo/0.1", Protocol: ipc.ProtocolVersion}},
	{ipc.TypePaired, &ipc.Paired{Device: dev1, Token: "mnemo_dev_x", Fingerprint: "sha256:ab12"}},
	{ipc.TypeDevices, &ipc.Devices{Ref: "d1"}},
	{ipc.TypeDeviceList, &ipc.DeviceList{Devices: []ipc.Device{dev1}, Ref: "d1"}},
	{ipc.TypeDeviceRevoke, &ipc.DeviceRevoke{ID: "3fa9c1d2", Ref: "r1"}},
	{ipc.TypeDeviceRevoked, &ipc.DeviceRevoked{ID: "3fa9c1d2", Ref: "r1"}},
	{ipc.TypeWhoami, &ipc.Whoami{Ref: "w1"}},
	{ipc.TypeIdentity, &ipc.Identity{Subject: "laptop", Actor: "owner", Device: "3fa9c1d2", Ref: "w1"}},
	{ipc.TypeJobs, &ipc.Jobs{Ref: "j1"}},
	{ipc.TypeJobList, &ipc.JobList{Ref: "j1", Jobs: []ipc.JobInfo{{Name: "daily", Schedule: "daily at 05:00", Enabled: true, LastKey: "daily:2026-11-25", Result: "ok", Applied: 1}, {Name: "broken", Error: "jobs/broken.yml: schedule"}}}},
	{ipc.TypeJobRun, &ipc.JobRun{Ref: "j2", Name: "daily"}},
	{ipc.TypeJobResult, &ipc.JobResult{Ref: "j2", Name: "daily", Key: "daily:2026-11-25", Applied: 1, Queued: 1}},
	{ipc.TypeProviderCheck, &ipc.ProviderCheck{Ref: "p1"}},
	{ipc.TypeProviderStatus, &ipc.ProviderStatus{Ref: "p1", Provider: "openai", Model: "m", LatencyMS: 80, Category: "rejected_key", Problem: "set OPENAI_API_KEY"}},
	{ipc.TypeConversations, &ipc.Conversations{Ref: "l1"}},
	{ipc.TypeConversationList, &ipc.ConversationList{Ref: "l1", Current: "main", Conversations: []ipc.ConversationInfo{
		{ID: "trip-2026", Title: "Lisbon in May?", Created: ts1, LastActive: ts1, Turns: 4}, {ID: "main", Turns: 0}}}},
	{ipc.TypeNewConversation, &ipc.NewConversation{ConversationID: "trip-2026", Ref: "n1"}},
	{ipc.TypeResume, &ipc.Resume{ConversationID: "trip-2026", Ref: "r1"}},
}

var dev1 = ipc.Device{ID: "3fa9c1d2", Name: "laptop", Actor: "owner", Created: ts1, LastUsed: ts1, RevokedAt: ts1}

var prop1 = ipc.Proposal{ID: "prop_01KAK3J7Y0Q2V5S8WZ3C9D4E6F", Op: "create", Path: "knowledge/prefs/coffee.md", Reason: "the owner said so",
	Author: "agent", Why: "the policy reviews changes to knowledge/prefs/", Content: "---\nid: x\n---\nblack coffee\n", Truncated: true, CreatedAt: ts1,
	Current: "---\nid: x\n---\ntea\n", CurrentTruncated: true, Sources: []ipc.ProposalSource{{Thread: "main", Turn: "01KAK3J7Y0Q2V5S8WZ3C9D4E6F"}}}

// allTypes lists every type constant of protocol v1; a new type must be
// added here and to samples.
var allTypes = []string{
	ipc.TypeConnect, ipc.TypeMessage, ipc.TypeVoiceRequest, ipc.TypeTranscript,
	ipc.TypeStopVoice, ipc.TypeVoiceToolCall, ipc.TypeVoiceToolResult, ipc.TypeDisconnect, ipc.TypePing,
	ipc.TypeHistory, ipc.TypeToken, ipc.TypeStatus, ipc.TypeTurn, ipc.TypeDone,
	ipc.TypeToolCall, ipc.TypeToolResult, ipc.TypeVoiceCredential, ipc.TypeError, ipc.TypePong,
	ipc.TypeCancel, ipc.TypeConfirmRequest, ipc.TypeConfirm, ipc.TypeSearch, ipc.TypeSearchResults,
	ipc.TypeHealth, ipc.TypeHealthReport, ipc.TypeHistoryQuery, ipc.TypeHistoryPage,
	ipc.TypeForget, ipc.TypeForgotten,
	ipc.TypeProposals, ipc.TypeProposal, ipc.TypeProposalList, ipc.TypeProposalDecide, ipc.TypeProposalDecided,
	ipc.TypeVaultRead, ipc.TypeVaultFile, ipc.TypeVaultWrite, ipc.TypeVaultList, ipc.TypeVaultNotes, ipc.TypeVaultHistory, ipc.TypeVaultChanges,
	ipc.TypeVaultPurge, ipc.TypeVaultPurged, ipc.TypeVaultExport, ipc.TypeVaultExported,
	ipc.TypeShutdown,
	ipc.TypePairStart, ipc.TypePairCode, ipc.TypePair, ipc.TypePaired, ipc.TypeDevices, ipc.TypeDeviceList,
	ipc.TypeDeviceRevoke, ipc.TypeDeviceRevoked, ipc.TypeWhoami, ipc.TypeIdentity,
	ipc.TypeJobs, ipc.TypeJobList, ipc.TypeJobRun, ipc.TypeJobResult,
	ipc.TypeProviderCheck, ipc.TypeProviderStatus,
	ipc.TypeConversations, ipc.TypeConversationList, ipc.TypeNewConversation, ipc.TypeResume,
}

func TestSamplesCoverEveryType(t *testing.T) {
	var got []string
	for _, s := range samples {
		if s.msg.Type() != s.name {
			t.Errorf("sample %s: Type() = %q, want %q", s.name, s.msg.Type(), s.name)
		}
		got = append(got, s.msg.Type())
	}
	if diff := cmp.Diff(allTypes, got); diff != "" {
		t.Errorf("sample types (-want +got):\n%s", diff)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, tt := range samples {
		t.Run(tt.name, func(t *testing.T) {
			line, err := ipc.Encode(tt.msg)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
				t.Errorf("Encode = %q, want exactly one newline, at the end", line)
			}
			if got := firstKey(t, line); got != "type" {
				t.Errorf("first key of %s is %q, want %q", line, got, "type")
			}
			got, err := ipc.Decode(bytes.TrimSuffix(line, []byte("\n")))
			if err != nil {
				t.Fatalf("Decode(%s): %v", line, err)
			}
			if diff := cmp.Diff(tt.msg, got); diff != "" {
				t.Errorf("Decode(Encode(m)) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// firstKey returns the first key of the JSON object in line.
func firstKey(t *testing.T, line []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: got %v, %v, want an object", line, tok, err)
	}
	tok, err := dec.Token()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	key, _ := tok.(string)
	return key
}

func TestEncodeGolden(t *testing.T) {
	var buf bytes.Buffer
	for _, s := range samples {
		line, err := ipc.Encode(s.msg)
		if err != nil {
			t.Fatalf("Encode(%s): %v", s.name, err)
		}
		buf.Write(line)
	}
	path := filepath.Join("testdata", "wire.golden")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestEncodeGolden -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("wire format changed (-%s +got); if on purpose, rerun with -update:\n%s", path, diff)
	}
}

func TestEncodeEmpty(t *testing.T) {
	tests := []struct {
		msg  ipc.Msg
		want string
	}{
		{&ipc.VoiceRequest{}, `{"type":"voice_request"}` + "\n"},
		{&ipc.StopVoice{}, `{"type":"stop_voice"}` + "\n"},
		{&ipc.Disconnect{}, `{"type":"disconnect"}` + "\n"},
		{&ipc.Ping{}, `{"type":"ping"}` + "\n"},
		{&ipc.Pong{}, `{"type":"pong"}` + "\n"},
		{&ipc.Token{}, `{"type":"token","content":""}` + "\n"},
		// Filters and provenance are optional: without them the lines are
		// those of hearths and clients before them.
		{&ipc.Search{Query: "q"}, `{"type":"search","query":"q"}` + "\n"},
		{&ipc.Search{Query: "q", Roles: []string{}, Kinds: []string{}}, `{"type":"search","query":"q"}` + "\n"},
		{&ipc.SearchResults{Results: []ipc.SearchHit{{Turn: ipc.Turn{ID: "1"}, Score: 1}}}, `{"type":"search_results","results":[{"turn":{"id":"1","role":"","content":"","ts":"0001-01-01T00:00:00Z","mode":""},"score":1}]}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.msg.Type(), func(t *testing.T) {
			got, err := ipc.Encode(tt.msg)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Encode = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDecodeZero checks that a line holding nothing but its type decodes
// to the zero message of that type.
func TestDecodeZero(t *testing.T) {
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			got, err := ipc.Decode([]byte(`{"type":"` + s.name + `"}`))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got.Type() != s.name {
				t.Errorf("Type() = %q, want %q", got.Type(), s.name)
			}
			if diff := cmp.Diff(zeroOf(s.msg), got); diff != "" {
				t.Errorf("Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// zeroOf returns a new zero message of m's type.
func zeroOf(m ipc.Msg) ipc.Msg {
	return reflect.New(reflect.TypeOf(m).Elem()).Interface().(ipc.Msg)
}

// decodeCases are lines Decode must take or refuse; they also seed the
// fuzz tests.
var decodeCases = []struct {
	name    string
	line    string
	want    ipc.Msg
	wantErr error  // *ipc.SyntaxError (Err ignored) or *ipc.UnknownTypeError
	errText string // in the error's text, for errors shown to a peer
}{
	{name: "token", line: `{"type":"token","content":"Hel"}`, want: &ipc.Token{Content: "Hel"}},
	{name: "type not first", line: `{"content":"Hel","type":"token"}`, want: &ipc.Token{Content: "Hel"}},
	{name: "spaces", line: " \t{ \"type\" : \"token\" , \"content\" : \"x\" } \r", want: &ipc.Token{Content: "x"}},
	{name: "unknown fields ignored", line: `{"type":"token","content":"x","future":{"a":[1,2,{"b":null}]},"n":1.5e3,"type2":"status"}`, want: &ipc.Token{Content: "x"}},
	{name: "unknown fields on empty type", line: `{"type":"disconnect","reason":"bye"}`, want: &ipc.Disconnect{}},
	{name: "nulls leave zero values", line: `{"type":"done","turn":null,"usage":null,"model":null}`, want: &ipc.Done{}},
	{name: "escaped type", line: `{"type":"\u0074oken","content":"x"}`, want: &ipc.Token{Content: "x"}},
	{name: "history", line: `{"type":"history","turns":[{"id":"1","role":"user","content":"hi","ts":"2025-03-14T15:09:26Z","mode":"text"}],"server":"hearth/0.1.0","protocol":1,"conversation_id":"main"}`,
		want: &ipc.History{Turns: []ipc.Turn{{ID: "1", Role: "user", Content: "hi", TS: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC), Mode: "text"}}, Server: "hearth/0.1.0", Protocol: 1, ConversationID: "main"}},

	{name: "search from an older client", line: `{"type":"search","query":"garden","k":5,"ref":"s1"}`, want: &ipc.Search{Query: "garden", K: 5, Ref: "s1"}},
	{name: "search with filters", line: `{"type":"search","query":"garden","roles":["user"],"kinds":["turn","tool"],"since":"2026-01-01T00:00:00Z","until":"2026-02-01T00:00:00+01:00"}`,
		want: &ipc.Search{Query: "garden", Roles: []string{"user"}, Kinds: []string{"turn", "tool"}, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 2, 1, 0, 0, 0, 0, time.FixedZone("", 3600))}},
	{name: "search with empty lists", line: `{"type":"search","query":"q","roles":[],"kinds":[]}`, want: &ipc.Search{Query: "q", Roles: []string{}, Kinds: []string{}}},
	{name: "search with null filters", line: `{"type":"search","query":"garden","roles":null,"kinds":null,"since":null,"until":null}`, want: &ipc.Search{Query: "garden"}},
	{name: "search_results from an older hearth", line: `{"type":"search_results","ref":"s1","results":[{"turn":{"id":"1","role":"user","content":"hi","ts":"2025-03-14T15:09:26Z","mode":"text"},"score":2.5}]}`,
		want: &ipc.SearchResults{Ref: "s1", Results: []ipc.SearchHit{{Turn: ipc.Turn{ID: "1", Role: "user", Content: "hi", TS: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC), Mode: "text"}, Score: 2.5}}}},
	{name: "search_results with provenance", line: `{"type":"search_results","results":[{"turn":{"id":"1#2","role":"tool","content":"rain","ts":"2025-03-14T15:09:26Z","mode":"text"},"score":0.5,"kind":"tool","session":"main","channel":"weather"}]}`,
		want: &ipc.SearchResults{Results: []ipc.SearchHit{{Turn: ipc.Turn{ID: "1#2", Role: "tool", Content: "rain", TS: time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC), Mode: "text"}, Score: 0.5, Kind: "tool", Session: "main", Channel: "weather"}}}},

	{name: "empty line", line: ``, wantErr: &ipc.SyntaxError{}, errText: "invalid JSON"},
	{name: "not json", line: `hello`, wantErr: &ipc.SyntaxError{}, errText: "invalid JSON"},
	{name: "truncated", line: `{"type":"token","content":"He`, wantErr: &ipc.SyntaxError{}, errText: "invalid JSON"},
	{name: "trailing garbage", line: `{"type":"ping"} x`, wantErr: &ipc.SyntaxError{}, errText: "invalid JSON"},
	{name: "two objects", line: `{"type":"ping"}{"type":"pong"}`, wantErr: &ipc.SyntaxError{}, errText: "invalid JSON"},
	{name: "array", line: `[{"type":"ping"}]`, wantErr: &ipc.SyntaxError{}, errText: "not a JSON object"},
	{name: "string", line: `"ping"`, wantErr: &ipc.SyntaxError{}, errText: "not a JSON object"},
	{name: "number", line: `42`, wantErr: &ipc.SyntaxError{}, errText: "not a JSON object"},
	{name: "null", line: `null`, wantErr: &ipc.SyntaxError{}, errText: "not a JSON object"},
	{name: "true", line: `true`, wantErr: &ipc.SyntaxError{}, errText: "not a JSON object"},
	{name: "no type", line: `{"content":"x"}`, wantErr: &ipc.SyntaxError{}, errText: `missing "type"`},
	{name: "empty object", line: `{}`, wantErr: &ipc.SyntaxError{}, errText: `missing "type"`},
	{name: "null type", line: `{"type":null}`, wantErr: &ipc.SyntaxError{}, errText: `missing "type"`},
	{name: "empty type", line: `{"type":""}`, wantErr: &ipc.SyntaxError{}, errText: `missing "type"`},
	{name: "number type", line: `{"type":1}`, wantErr: &ipc.SyntaxError{}, errText: `"type" is not a string`},
	{name: "bool type", line: `{"type":true}`, wantErr: &ipc.SyntaxError{}, errText: `"type" is not a string`},
	{name: "array type", line: `{"type":["token"]}`, wantErr: &ipc.SyntaxError{}, errText: `"type" is not a string`},
	{name: "object type", line: `{"type":{"name":"token"}}`, wantErr: &ipc.SyntaxError{}, errText: `"type" is not a string`},
	{name: "wrong field type", line: `{"type":"token","content":5}`, wantErr: &ipc.SyntaxError{Type: "token"}, errText: `"content"`},
	{name: "wrong nested field type", line: `{"type":"done","usage":{"input_tokens":"12"}}`, wantErr: &ipc.SyntaxError{Type: "done"}, errText: "input_tokens"},
	{name: "wrong slice type", line: `{"type":"history","turns":{}}`, wantErr: &ipc.SyntaxError{Type: "history"}, errText: "turns"},
	{name: "string protocol", line: `{"type":"connect","token":"x","protocol":"1"}`, wantErr: &ipc.SyntaxError{Type: "connect"}, errText: "protocol"},
	{name: "bad time", line: `{"type":"turn","turn":{"ts":"yesterday"}}`, wantErr: &ipc.SyntaxError{Type: "turn"}, errText: "invalid field"},
	{name: "time not a string", line: `{"type":"voice_credential","expires_at":5}`, wantErr: &ipc.SyntaxError{Type: "voice_credential"}},
	{name: "search roles not a list", line: `{"type":"search","query":"q","roles":"user"}`, wantErr: &ipc.SyntaxError{Type: "search"}, errText: `"roles"`},
	{name: "search kinds of numbers", line: `{"type":"search","query":"q","kinds":[1]}`, wantErr: &ipc.SyntaxError{Type: "search"}, errText: "kinds"},
	{name: "search since a date only", line: `{"type":"search","query":"q","since":"2026-01-01"}`, wantErr: &ipc.SyntaxError{Type: "search"}, errText: "invalid field"},
	{name: "search until not a string", line: `{"type":"search","query":"q","until":20260101}`, wantErr: &ipc.SyntaxError{Type: "search"}, errText: "invalid field"},
	{name: "search hit kind not a string", line: `{"type":"search_results","results":[{"turn":{},"score":1,"kind":2}]}`, wantErr: &ipc.SyntaxError{Type: "search_results"}, errText: "kind"},
	{name: "unknown type", line: `{"type":"teleport","to":"mars"}`, wantErr: &ipc.UnknownTypeError{Type: "teleport"}, errText: `"teleport"`},
	{name: "types are case sensitive", line: `{"type":"TOKEN","content":"x"}`, wantErr: &ipc.UnknownTypeError{Type: "TOKEN"}},
	{name: "unknown type with bad fields", line: `{"type":"teleport","to":[}`, wantErr: &ipc.SyntaxError{}},
}

func TestDecode(t *testing.T) {
	for _, tt := range decodeCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ipc.Decode([]byte(tt.line))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Decode(%s): got error %v, want %T", tt.line, err, tt.want)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Decode(%s) mismatch (-want +got):\n%s", tt.line, diff)
				}
				return
			}
			if got != nil {
				t.Errorf("Decode(%s): got message %#v with the error, want nil", tt.line, got)
			}
			checkDecodeErr(t, err, tt.wantErr)
			if err != nil && !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("Decode(%s): got error %q, want it to contain %q", tt.line, err, tt.errText)
			}
		})
	}
}

func checkDecodeErr(t *testing.T, err, want error) {
	t.Helper()
	switch want := want.(type) {
	case *ipc.SyntaxError:
		var se *ipc.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("got error %v (%T), want *ipc.SyntaxError", err, err)
			return
		}
		if se.Type != want.Type {
			t.Errorf("got SyntaxError.Type %q, want %q", se.Type, want.Type)
		}
		if se.Err == nil {
			t.Errorf("got SyntaxError.Err nil, want the cause")
		}
	case *ipc.UnknownTypeError:
		var ue *ipc.UnknownTypeError
		if !errors.As(err, &ue) {
			t.Errorf("got error %v (%T), want *ipc.UnknownTypeError", err, err)
			return
		}
		if ue.Type != want.Type {
			t.Errorf("got UnknownTypeError.Type %q, want %q", ue.Type, want.Type)
		}
	default:
		t.Fatalf("bad test: wantErr %T", want)
	}
}

func TestEncodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		msg  ipc.Msg
		want error // nil: any error
	}{
		{"nil", nil, nil},
		{"nil pointer", (*ipc.Token)(nil), nil},
		{"unencodable argument", &ipc.ToolCall{Name: "f", Arguments: map[string]any{"f": func() {}}}, nil},
		{"one byte over the limit", tokenOfLen(ipc.MaxLineBytes + 1), ipc.ErrLineTooLong},
		{"far over the limit", &ipc.Token{Content: strings.Repeat("<", ipc.MaxLineBytes/6+1)}, ipc.ErrLineTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, err := ipc.Encode(tt.msg)
			if err == nil {
				t.Fatalf("Encode = %.80q, want an error", line)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Encode: got error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEncodeAtLimit(t *testing.T) {
	m := tokenOfLen(ipc.MaxLineBytes)
	line, err := ipc.Encode(m)
	if err != nil {
		t.Fatalf("Encode of a line of exactly MaxLineBytes: %v", err)
	}
	if got := len(line) - 1; got != ipc.MaxLineBytes {
		t.Errorf("got a line of %d bytes, want %d", got, ipc.MaxLineBytes)
	}
}

// tokenOverhead is the length of an encoded token line with no content.
const tokenOverhead = len(`{"type":"token","content":""}`)

// tokenLine returns an encoded token line of n bytes, newline excluded.
func tokenLine(n int) string {
	return `{"type":"token","content":"` + strings.Repeat("a", n-tokenOverhead) + `"}`
}

// tokenOfLen returns the token that tokenLine(n) encodes.
func tokenOfLen(n int) *ipc.Token {
	return &ipc.Token{Content: strings.Repeat("a", n-tokenOverhead)}
}

// step is one result of Reader.Read.
type step struct {
	Msg ipc.Msg
	Err string // errKind of the error, "" for none
}

func errKind(err error) string {
	var se *ipc.SyntaxError
	var ue *ipc.UnknownTypeError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		return "syntax"
	case errors.As(err, &ue):
		return "unknown " + ue.Type
	case errors.Is(err, ipc.ErrLineTooLong):
		return "too long"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, iotest.ErrTimeout):
		return "timeout"
	default:
		return "other: " + err.Error()
	}
}

// readSteps reads r to its end. It stops early at an error the reader
// cannot continue after, and after 1<<20 steps, in case a reader never
// reaches the end.
func readSteps(r *ipc.Reader) []step {
	var steps []step
	for range 1 << 20 {
		m, err := r.Read()
		k := errKind(err)
		steps = append(steps, step{Msg: m, Err: k})
		if k == "EOF" || strings.HasPrefix(k, "other") {
			break
		}
	}
	return steps
}

var (
	ping = step{Msg: &ipc.Ping{}}
	pong = step{Msg: &ipc.Pong{}}
	eof  = step{Err: "EOF"}
	long = step{Err: "too long"}
)

func tok(n int) step { return step{Msg: tokenOfLen(n)} }

// readerMax is the line limit of readerCases.
const readerMax = 64

// readerCases run through NewReaderSize(…, readerMax).
var readerCases = []struct {
	name string
	in   string
	want []step
}{
	{"empty", "", []step{eof}},
	{"one line", `{"type":"ping"}` + "\n", []step{ping, eof}},
	{"two lines", `{"type":"ping"}` + "\n" + `{"type":"pong"}` + "\n", []step{ping, pong, eof}},
	{"blank lines skipped", "\n\n \t \n" + `{"type":"ping"}` + "\n\r\n\n" + `{"type":"pong"}` + "\n  \n", []step{ping, pong, eof}},
	{"only blank lines", "\n \n\r\n\t\n", []step{eof}},
	{"crlf", `{"type":"ping"}` + "\r\n" + `{"type":"pong"}` + "\r\n", []step{ping, pong, eof}},
	{"final line without newline", `{"type":"ping"}` + "\n" + `{"type":"pong"}`, []step{ping, pong, eof}},
	{"final line with a lone cr", `{"type":"pong"}` + "\r", []step{pong, eof}},
	{"syntax error stays in step", "garbage\n" + `{"type":"ping"}` + "\n", []step{{Err: "syntax"}, ping, eof}},
	{"unknown type stays in step", `{"type":"teleport"}` + "\n" + `{"type":"ping"}` + "\n", []step{{Err: "unknown teleport"}, ping, eof}},
	{"bad field stays in step", `{"type":"token","content":1}` + "\n" + `{"type":"ping"}` + "\n", []step{{Err: "syntax"}, ping, eof}},
	{"exactly max", tokenLine(readerMax) + "\n", []step{tok(readerMax), eof}},
	{"exactly max with crlf", tokenLine(readerMax) + "\r\n", []step{tok(readerMax), eof}},
	{"exactly max at the end", tokenLine(readerMax), []step{tok(readerMax), eof}},
	{"max+1", tokenLine(readerMax+1) + "\n", []step{long, eof}},
	{"max+1 with crlf", tokenLine(readerMax+1) + "\r\n", []step{long, eof}},
	{"max+1 at the end", tokenLine(readerMax + 1), []step{long, eof}},
	{"max+1 with cr at the end", tokenLine(readerMax+1) + "\r", []step{long, eof}},
	{"max+2", tokenLine(readerMax+2) + "\n", []step{long, eof}},
	// After an oversize line, the next Read returns the next line.
	{"next line after max+1", tokenLine(readerMax+1) + "\n" + `{"type":"ping"}` + "\n", []step{long, ping, eof}},
	{"between lines", `{"type":"ping"}` + "\n" + tokenLine(readerMax+3) + "\r\n" + `{"type":"pong"}` + "\n", []step{ping, long, pong, eof}},
	{"two oversize lines", tokenLine(readerMax+10) + "\n" + tokenLine(readerMax+1) + "\n" + `{"type":"ping"}`, []step{long, long, ping, eof}},
	// Lines longer than the reader's 64 KiB buffer are discarded in pieces.
	{"next line after 200 KiB", tokenLine(200<<10) + "\n" + `{"type":"ping"}` + "\n", []step{long, ping, eof}},
	{"200 KiB at the end", `{"type":"ping"}` + "\n" + tokenLine(200<<10), []step{ping, long, eof}},
	{"oversize blank line", strings.Repeat(" ", readerMax+1) + "\n" + `{"type":"ping"}` + "\n", []step{long, ping, eof}},
}

var wrappers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"plain", func(r io.Reader) io.Reader { return r }},
	{"OneByteReader", iotest.OneByteReader},
	{"HalfReader", iotest.HalfReader},
	{"DataErrReader", iotest.DataErrReader},
}

func TestReader(t *testing.T) {
	for _, w := range wrappers {
		t.Run(w.name, func(t *testing.T) {
			for _, tt := range readerCases {
				t.Run(tt.name, func(t *testing.T) {
					r := ipc.NewReaderSize(w.wrap(strings.NewReader(tt.in)), readerMax)
					if diff := cmp.Diff(tt.want, readSteps(r)); diff != "" {
						t.Errorf("Read steps mismatch (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestReaderMaxLineBytes runs the real limit once.
func TestReaderMaxLineBytes(t *testing.T) {
	in := tokenLine(ipc.MaxLineBytes) + "\n" +
		tokenLine(ipc.MaxLineBytes+1) + "\n" +
		`{"type":"ping"}` + "\n" +
		tokenLine(ipc.MaxLineBytes) + "\r\n" +
		tokenLine(ipc.MaxLineBytes+1)
	want := []step{tok(ipc.MaxLineBytes), long, ping, tok(ipc.MaxLineBytes), long, eof}
	for _, w := range wrappers {
		if w.name == "OneByteReader" || w.name == "DataErrReader" {
			continue // slow under -race, and the small cases cover them
		}
		t.Run(w.name, func(t *testing.T) {
			r := ipc.NewReader(w.wrap(strings.NewReader(in)))
			if diff := cmp.Diff(want, readSteps(r)); diff != "" {
				t.Errorf("Read steps mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// faultReader fails once with err when at bytes have been read, then
// reads on as if nothing happened, as a read deadline does.
type faultReader struct {
	r    io.Reader
	at   int
	err  error
	n    int
	done bool
}

func (f *faultReader) Read(p []byte) (int, error) {
	if !f.done {
		if f.n == f.at {
			f.done = true
			return 0, f.err
		}
		if rest := f.at - f.n; len(p) > rest {
			p = p[:rest]
		}
	}
	n, err := f.r.Read(p)
	f.n += n
	return n, err
}

// TestReaderResumesAfterError injects a timeout at every offset of every
// reader case: the reader reports it once, then goes on as if it had not
// happened, even mid-line or while skipping an oversize line.
func TestReaderResumesAfterError(t *testing.T) {
	for _, tt := range readerCases {
		if len(tt.in) > 4096 {
			continue // the long cases add nothing but time
		}
		t.Run(tt.name, func(t *testing.T) {
			for at := 0; at <= len(tt.in); at++ {
				fr := &faultReader{r: strings.NewReader(tt.in), at: at, err: iotest.ErrTimeout}
				got := readSteps(ipc.NewReaderSize(fr, readerMax))
				timeouts := 0
				got = slices.DeleteFunc(got, func(s step) bool {
					if s.Err == "timeout" {
						timeouts++
						return true
					}
					return false
				})
				if timeouts != 1 {
					t.Errorf("fault at %d: got %d timeouts, want 1", at, timeouts)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("fault at %d: steps other than the timeout mismatch (-want +got):\n%s", at, diff)
				}
			}
		})
	}
}

func TestReaderTimeoutReader(t *testing.T) {
	// TimeoutReader fails its second read, here after the first byte of
	// the line: the next Read resumes that line.
	in := `{"type":"token","content":"Hel"}` + "\n" + `{"type":"ping"}` + "\n"
	r := ipc.NewReader(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(in))))
	want := []step{{Err: "timeout"}, {Msg: &ipc.Token{Content: "Hel"}}, ping, eof}
	if diff := cmp.Diff(want, readSteps(r)); diff != "" {
		t.Errorf("Read steps mismatch (-want +got):\n%s", diff)
	}
}

func TestReaderErrors(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		r    io.Reader
		want []string // errKind of each Read until the first error
	}{
		{"error at once", iotest.ErrReader(errBoom), []string{"other: boom"}},
		{"error after a line", io.MultiReader(strings.NewReader(`{"type":"ping"}`+"\n"), iotest.ErrReader(errBoom)), []string{"", "other: boom"}},
		{"error mid-line", io.MultiReader(strings.NewReader(`{"type":"ping"}`+"\n"+`{"type":"po`), iotest.ErrReader(errBoom)), []string{"", "other: boom"}},
		{"error while skipping", io.MultiReader(strings.NewReader(tokenLine(readerMax+10)), iotest.ErrReader(errBoom)), []string{"too long", "other: boom"}},
		{"unexpected EOF", io.MultiReader(strings.NewReader(`{"type":"ping"}`+"\n"), iotest.ErrReader(io.ErrUnexpectedEOF)), []string{"", "other: unexpected EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ipc.NewReaderSize(tt.r, readerMax)
			var got []string
			for _, s := range readSteps(r) {
				got = append(got, s.Err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Read errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("error is the reader's", func(t *testing.T) {
		_, err := ipc.NewReader(iotest.ErrReader(errBoom)).Read()
		if !errors.Is(err, errBoom) {
			t.Errorf("Read: got error %v, want %v", err, errBoom)
		}
	})
}

func TestReadLine(t *testing.T) {
	in := "\r\n" + `{"type":"ping"}` + "\r\n  \n" + "not json\n" + tokenLine(readerMax+1) + "\nlast"
	r := ipc.NewReaderSize(strings.NewReader(in), readerMax)
	type result struct {
		Line string
		Err  string
	}
	var got []result
	for range 10 {
		line, err := r.ReadLine()
		got = append(got, result{string(line), errKind(err)})
		if err == io.EOF {
			break
		}
	}
	want := []result{{`{"type":"ping"}`, ""}, {"not json", ""}, {"", "too long"}, {"last", ""}, {"", "EOF"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadLine mismatch (-want +got):\n%s", diff)
	}
}

// recorder records every Write it is given.
type recorder struct {
	writes []string
	err    error
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func TestWriter(t *testing.T) {
	rec := &recorder{}
	w := ipc.NewWriter(rec)
	msgs := []ipc.Msg{tokenOfLen(10_000)} // bigger than the writer's buffer
	for _, s := range samples {
		msgs = append(msgs, s.msg)
	}
	var want []string
	for _, m := range msgs {
		line, err := ipc.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(m); err != nil {
			t.Fatalf("Write(%s): %v", m.Type(), err)
		}
		want = append(want, string(line))
		// Flushed: the line is out before Write returns, in one write.
		if diff := cmp.Diff(want, rec.writes); diff != "" {
			t.Errorf("after Write(%s), writes mismatch (-want +got):\n%s", m.Type(), diff)
			return
		}
	}

	t.Run("refuses an oversize message", func(t *testing.T) {
		rec := &recorder{}
		err := ipc.NewWriter(rec).Write(tokenOfLen(ipc.MaxLineBytes + 1))
		if !errors.Is(err, ipc.ErrLineTooLong) {
			t.Errorf("Write: got error %v, want %v", err, ipc.ErrLineTooLong)
		}
		if len(rec.writes) != 0 {
			t.Errorf("got %d writes, want none", len(rec.writes))
		}
	})
	t.Run("reports a write error", func(t *testing.T) {
		errBoom := errors.New("boom")
		err := ipc.NewWriter(&recorder{err: errBoom}).Write(&ipc.Ping{})
		if !errors.Is(err, errBoom) {
			t.Errorf("Write: got error %v, want %v", err, errBoom)
		}
	})
	t.Run("reader reads what writer writes", func(t *testing.T) {
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf)
		var want []step
		for _, s := range samples {
			if err := w.Write(s.msg); err != nil {
				t.Fatal(err)
			}
			want = append(want, step{Msg: s.msg})
		}
		want = append(want, eof)
		if diff := cmp.Diff(want, readSteps(ipc.NewReader(&buf))); diff != "" {
			t.Errorf("Read steps mismatch (-want +got):\n%s", diff)
		}
	})
}
