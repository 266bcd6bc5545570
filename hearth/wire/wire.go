// Package wire is protocol v1 (package ipc) over hearth's core: it turns
// a client's requests into core commands and the core's domain events into
// wire messages. Doors that speak v1 — the NDJSON server (hearth/ndjson)
// and the in-process client (hearth/local) — share it, so the conversion
// exists once, at the edge.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/ipc"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/journal"
	"github.com/mnemo/mnemo/memory/vault"
)

// Core is what a v1 session needs from hearth's core. *hearth.Hearth
// implements it.
type Core interface {
	Subscribe(opts hearth.WatchOptions) (*hearth.Subscription, error)
	Send(ref, content string) error
	SendTo(ctx context.Context, conv, ref, content string) error
	CancelIn(conv, ref string) error
	NewConversation(id string) (hearth.ConversationInfo, error)
	Conversations() []hearth.ConversationInfo
	AddTranscriptIn(conv, ref, role, text string, incomplete bool) error
	Cancel(ref string) error
	Confirm(id string, approve bool) error
	Search(ctx context.Context, req memory.SearchRequest) ([]memory.Hit, error)
	Forget(ctx context.Context, req hearth.ForgetRequest) (hearth.ForgetResult, error)
	History(ctx context.Context, q hearth.HistoryQuery) (hearth.HistoryPage, error)
	Health() hearth.Health
	ReviewProposals(ctx context.Context) ([]hearth.ProposalQueued, error)
	Settled(ctx context.Context) error
	RequestVoiceIn(ctx context.Context, conv string) (hearth.VoiceCredential, error)
	StopVoiceIn(conv string)
	RunVoiceTool(ctx context.Context, call hearth.VoiceToolCall) (hearth.VoiceToolResult, error)
	Proposals(ctx context.Context) ([]vault.Proposal, error)
	DecideProposal(ctx context.Context, id string, d hearth.ProposalDecision) (hearth.ProposalOutcome, error)
	VaultCore
}

// Options configure a Session.
type Options struct {
	// Watch configures the subscription (name, queue bounds, OnCut).
	Watch hearth.WatchOptions
	// Health, when set, adds the door's own counters to a health report.
	Health func(*ipc.HealthReport)
	// Shutdown, when set, asks hearth to shut down gracefully (the
	// daemon's signal path); Owner says whether this client may ask.
	Shutdown func()
	Owner    bool
	Log      *slog.Logger
}

// Session is one v1 client over the core: its subscription and the
// requests it has under way (searches run off the caller's goroutine).
type Session struct {
	core Core
	opts Options
	log  *slog.Logger

	// mu guards sub, the subscription of the conversation followed, and
	// subs, every subscription not yet closed: a resume subscribes to
	// the next conversation at once and Run moves to it once the
	// previous one's events are delivered (see switchTo).
	mu   sync.Mutex
	sub  *hearth.Subscription
	subs []*hearth.Subscription

	ctx    context.Context // ends with Close: cancels searches
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Open subscribes a client; its first message will be the history
// snapshot. ctx bounds the requests the session runs (searches).
func Open(ctx context.Context, core Core, o Options) (*Session, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	sub, err := core.Subscribe(o.Watch)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Session{core: core, sub: sub, subs: []*hearth.Subscription{sub}, opts: o, log: o.Log, ctx: ctx, cancel: cancel}, nil
}

// Close unsubscribes, cancels the session's searches and waits for them.
func (s *Session) Close() {
	s.cancel()
	s.mu.Lock()
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Close()
	}
	s.wg.Wait()
}

// current is the subscription of the conversation followed now.
func (s *Session) current() *hearth.Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sub
}

// Conversation is the conversation the session follows.
func (s *Session) Conversation() string { return s.current().Conversation() }

// Run delivers the core's events as wire messages to emit, a batch at a
// time (see hearth.Subscription.Run), until the session ends. It returns
// hearth.ErrLagging or hearth.ErrShuttingDown when the core ended the
// subscription; Farewell says what to tell the client then.
func (s *Session) Run(ctx context.Context, emit func([]ipc.Msg) error) error {
	var out []ipc.Msg
	s.mu.Lock()
	sub := s.subs[0] // the oldest not closed: its events come first
	s.mu.Unlock()
	ref := "" // of the resume whose History comes next
	for {
		var next *switchTo
		err := sub.Run(ctx, func(evs []hearth.Event) error {
			out = out[:0]
			var end error
			for _, ev := range evs {
				if r, ok := ev.(*hearth.Reply); ok {
					if r.Value == (finished{}) {
						end = errFinished
						break
					}
					if sw, ok := r.Value.(*switchTo); ok {
						next, end = sw, errSwitched
						break
					}
				}
				m := Event(ev)
				if h, ok := m.(*ipc.History); ok && ref != "" {
					h.Ref, ref = ref, ""
				}
				if m != nil {
					out = append(out, m)
				}
			}
			if len(out) > 0 {
				if err := emit(out); err != nil {
					return err
				}
			}
			return end
		})
		if errors.Is(err, errSwitched) {
			sub.Close()
			s.mu.Lock()
			s.subs = slices.DeleteFunc(s.subs, func(x *hearth.Subscription) bool { return x == sub })
			s.mu.Unlock()
			sub, ref = next.sub, next.ref
			continue
		}
		if errors.Is(err, errFinished) {
			return nil
		}
		return err
	}
}

// finished marks, in a session's queue, the end of what its client asked
// for; see Finish.
type finished struct{}

var errFinished = errors.New("wire: the client's requests are answered")

// Finish ends the session once everything its client asked for has been
// answered: its searches, and every message and transcript the core has
// accepted (their replies, errors and final state). A door calls it when
// the client has said all it will say, such as a TCP half-close from
// `nc -N`; Run then returns nil after delivering those answers. Close
// stops the wait.
func (s *Session) Finish() {
	s.wg.Wait()
	if s.core.Settled(s.ctx) != nil {
		return
	}
	s.current().Reply(finished{})
}

// Farewell is the error a client is told when its session ends for why;
// nil when there is nothing to say (it left, or the door closed).
func Farewell(why error) *ipc.Error {
	switch {
	case errors.Is(why, hearth.ErrLagging):
		return &ipc.Error{Code: ipc.CodeSlowClient, Message: "this client fell behind and was disconnected; reconnect to resync"}
	case errors.Is(why, hearth.ErrShuttingDown):
		return &ipc.Error{Code: ipc.CodeShuttingDown, Message: "hearth is shutting down"}
	}
	return nil
}

func (s *Session) send(m *ipc.Message) error {
	conv := m.ConversationID
	if conv == "" {
		conv = s.Conversation()
	}
	return s.core.SendTo(s.ctx, conv, m.Ref, m.Content)
}

// Reply queues m for this client, in order with its events: for the
// door's own answers (authorization, devices, pairing).
func (s *Session) Reply(m ipc.Msg) { s.current().Reply(m) }

// reply queues m for this client, in order with its events.
func (s *Session) reply(m ipc.Msg) {
	s.current().Reply(m)
}

// Handle carries out one request from the client. It returns false when
// the client said goodbye.
func (s *Session) Handle(m ipc.Msg) bool {
	switch m := m.(type) {
	case *ipc.Message:
		s.refuse(s.send(m), m.Ref)
	case *ipc.Transcript:
		s.refuse(s.core.AddTranscriptIn(s.Conversation(), m.Ref, m.Role, m.Text, m.Incomplete), m.Ref)
	case *ipc.Ping:
		s.reply(&ipc.Pong{Ref: m.Ref})
	case *ipc.VoiceRequest:
		s.voice(m.Ref)
	case *ipc.StopVoice:
		s.core.StopVoiceIn(s.Conversation())
	case *ipc.VoiceToolCall:
		s.voiceTool(m)
	case *ipc.Cancel:
		s.refuse(s.core.CancelIn(s.Conversation(), m.Ref), m.Ref)
	case *ipc.Confirm:
		s.refuse(s.core.Confirm(m.ID, m.Approve), "")
	case *ipc.Search:
		s.search(m)
	case *ipc.Forget:
		s.forget(m)
	case *ipc.HistoryQuery:
		s.history(m)
	case *ipc.Proposals:
		s.proposals(m)
	case *ipc.ProposalDecide:
		s.decide(m)
	case *ipc.VaultRead:
		s.vaultRead(m)
	case *ipc.VaultWrite:
		s.vaultWrite(m)
	case *ipc.VaultList:
		s.vaultList(m)
	case *ipc.VaultHistory:
		s.vaultHistory(m)
	case *ipc.VaultPurge:
		s.vaultPurge(m)
	case *ipc.VaultExport:
		s.vaultExport(m)
	case *ipc.Jobs:
		s.jobs(m)
	case *ipc.JobRun:
		s.jobRun(m)
	case *ipc.Conversations:
		s.reply(ConversationList(m.Ref, s.Conversation(), s.core.Conversations()))
	case *ipc.NewConversation:
		s.newConversation(m)
	case *ipc.Resume:
		s.resume(m.ConversationID, m.Ref)
	case *ipc.Health:
		s.reply(s.health(m.Ref))
	case *ipc.Shutdown:
		s.shutdown(m)
	case *ipc.ProviderCheck:
		s.providerCheck(m)
	case *ipc.Disconnect:
		return false
	case *ipc.Connect:
		s.reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "already connected"})
	default:
		s.reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: fmt.Sprintf("%q is sent by hearth, not by clients", m.Type())})
	}
	return true
}

// shutdown asks hearth to stop when the owner asks and hearth can be
// stopped so; every client then gets the shutting_down farewell.
func (s *Session) shutdown(m *ipc.Shutdown) {
	switch {
	case s.opts.Shutdown == nil:
		s.reply(&ipc.Error{Code: ipc.CodeUnavailable, Message: "this hearth cannot be stopped by a client", Ref: m.Ref})
	case !s.opts.Owner:
		s.reply(&ipc.Error{Code: ipc.CodeForbidden, Message: "only the owner may stop hearth", Ref: m.Ref})
	default:
		s.log.Info("a client asked hearth to shut down")
		s.opts.Shutdown()
	}
}

// BadLine answers a line that did not decode; the connection stays open.
func (s *Session) BadLine(err error) {
	var se *ipc.SyntaxError
	var ute *ipc.UnknownTypeError
	switch {
	case errors.As(err, &ute):
		s.reply(&ipc.Error{Code: ipc.CodeUnknownType, Message: fmt.Sprintf("unknown message type %q", ute.Type)})
	case errors.As(err, &se):
		s.reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: se.Error()})
	default:
		s.reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "malformed request"})
	}
}

// refuse tells the client why a command refused its request, if it did.
func (s *Session) refuse(err error, ref string) {
	if err == nil {
		return
	}
	e := Error(err)
	if e.Ref == "" {
		e.Ref = ref
	}
	s.reply(e)
}

// Error is a command's error as the client sees it: a *hearth.Problem
// keeps its code and message; anything else is an internal error with a
// fixed message (details belong in the log, never on the wire).
func Error(err error) *ipc.Error {
	var p *hearth.Problem
	if errors.As(err, &p) {
		return &ipc.Error{Code: p.Code, Message: p.Message, Ref: p.Ref}
	}
	return &ipc.Error{Code: ipc.CodeInternal, Message: "hearth failed to carry out the request; details are in hearth's log"}
}

// Bounds of what a search reply carries.
const (
	maxSearchSnippet = 4 << 10
	maxSearchField   = 256 // a hit's session or channel, a note's heading
	maxNotePath      = 1024
	searchTimeout    = 10 * time.Second
)

// search answers a memory search off the caller's goroutine; Close
// cancels it.
func (s *Session) search(m *ipc.Search) {
	req := memory.SearchRequest{Query: m.Query, K: m.K, Roles: m.Roles, Kinds: m.Kinds, Since: m.Since, Until: m.Until,
		Statuses: m.Statuses, MinConfidence: m.MinConfidence}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, searchTimeout)
		defer cancel()
		hits, err := s.core.Search(ctx, req)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		res := &ipc.SearchResults{Ref: m.Ref, Results: make([]ipc.SearchHit, 0, len(hits))}
		for _, hit := range hits {
			res.Results = append(res.Results, SearchHit(hit))
		}
		s.reply(res)
	})
}

// voiceTimeout bounds minting a voice credential (the minter bounds its
// own call to the provider more tightly).
const voiceTimeout = 30 * time.Second

// voice mints a voice credential off the caller's goroutine and sends it
// to this client only, with the request's ref (also on the error); Close
// cancels it.
func (s *Session) voice(ref string) {
	// The session talks in the conversation this client follows (its
	// transcripts, stop and tool calls go there too).
	conv := s.Conversation()
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, voiceTimeout)
		defer cancel()
		cred, err := s.core.RequestVoiceIn(ctx, conv)
		if err != nil {
			s.refuse(err, ref)
			return
		}
		m := VoiceCredential(cred)
		m.Ref = ref
		s.reply(m)
	})
}

// voiceTool runs a tool the client's voice model called, off the
// caller's goroutine (a confirmation may wait minutes; the client's other
// requests go on), and answers this client only. Close cancels it: the
// client that would send the output is gone. The core bounds the call
// (its tool and confirmation timeouts).
func (s *Session) voiceTool(m *ipc.VoiceToolCall) {
	call := hearth.VoiceToolCall{CallID: m.CallID, Name: m.Name, Arguments: m.Arguments, Ref: m.Ref, Conversation: s.Conversation()}
	s.wg.Go(func() {
		res, err := s.core.RunVoiceTool(s.ctx, call)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(VoiceToolResult(res, m.Ref))
	})
}

// VoiceToolResult is a voice tool call's answer on the wire, its output
// cut to maxVoiceOutput so that it always fits a line, escaped.
func VoiceToolResult(r hearth.VoiceToolResult, ref string) *ipc.VoiceToolResult {
	out, _ := Cut(r.Output, maxVoiceOutput)
	return &ipc.VoiceToolResult{CallID: r.CallID, Output: out, IsError: r.IsError, Ref: ref}
}

// maxVoiceOutput bounds a voice tool's output on the wire: the registry's
// own bound on a result (64 KiB), so that in practice nothing is cut.
const maxVoiceOutput = 64 << 10

// VoiceCredential is a minted credential on the wire.
func VoiceCredential(c hearth.VoiceCredential) *ipc.VoiceCredential {
	m := &ipc.VoiceCredential{
		Token: c.Value, ExpiresAt: c.ExpiresAt, URL: c.URL, Model: c.Model, Dialect: c.Dialect,
		Voice: c.Voice, Instructions: c.Instructions, TranscriptionModel: c.Transcription,
	}
	if c.VAD.Type != "" {
		m.VAD = &ipc.VoiceVAD{Type: c.VAD.Type, Threshold: c.VAD.Threshold, SilenceMS: c.VAD.Silence.Milliseconds(), PrefixPaddingMS: c.VAD.PrefixPadding.Milliseconds()}
	}
	for _, t := range c.Tools {
		m.Tools = append(m.Tools, ipc.VoiceTool{Name: t.Name, Description: t.Description, Parameters: rawArgs(t.Parameters)})
	}
	return m
}

// forgetTimeout bounds a forget, its purge included.
const forgetTimeout = 2 * time.Minute

// forget carries out a Forget off the caller's goroutine. Once asked it
// completes even when the client leaves: the tombstone may already be
// stored.
func (s *Session) forget(m *ipc.Forget) {
	req := hearth.ForgetRequest{IDs: m.IDs, By: hearth.ByOwner, Purge: m.Purge}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), forgetTimeout)
		defer cancel()
		res, err := s.core.Forget(ctx, req)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		out := &ipc.Forgotten{IDs: res.Forgotten, By: hearth.ByOwner, Ref: m.Ref, Unknown: res.Unknown}
		if out.IDs == nil {
			out.IDs = []string{}
		}
		if p := res.Purged; p != nil {
			out.Purged = &ipc.Purged{Records: p.Records, Shards: p.Shards}
		}
		if d := res.Derived; len(d.Removed)+len(d.Hidden)+len(d.Entities) > 0 {
			out.Vault = &ipc.ForgottenVault{Removed: d.Removed, Hidden: d.Hidden, Entities: d.Entities}
		}
		out.GitKeeps = res.GitKeeps
		s.reply(out)
	})
}

// vaultTimeout bounds listing proposals, or deciding one (apply: file,
// commit, ledger).
const vaultTimeout = 2 * time.Minute

// proposals lists the proposals waiting, off the caller's goroutine.
func (s *Session) proposals(m *ipc.Proposals) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, vaultTimeout)
		defer cancel()
		qs, err := s.core.ReviewProposals(ctx)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(ReviewList(m.Ref, qs))
	})
}

// decide carries out the owner's decision on a proposal off the caller's
// goroutine. Once asked it completes even when the client leaves: the
// write may be under way.
func (s *Session) decide(m *ipc.ProposalDecide) {
	if m.ID == "" {
		s.reply(&ipc.Error{Code: ipc.CodeBadRequest, Message: "proposal_decide: name the proposal by its id", Ref: m.Ref})
		return
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), vaultTimeout)
		defer cancel()
		out, err := s.core.DecideProposal(ctx, m.ID, hearth.ProposalDecision{Approve: m.Approve, By: hearth.ByOwner, Content: m.Content})
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(ProposalDecided(out, hearth.ByOwner, m.Ref))
	})
}

// Proposal is a proposal on the wire, its content cut to
// ipc.MaxTurnContent.
func Proposal(p vault.Proposal) ipc.Proposal {
	w := ipc.Proposal{ID: p.ID, Op: string(p.Op), Path: p.Path, Reason: p.Reason, Author: p.Author, CreatedAt: p.CreatedAt}
	w.Content, w.Truncated = Cut(p.Content, ipc.MaxTurnContent)
	for _, s := range p.Sources {
		w.Sources = append(w.Sources, ipc.ProposalSource{Thread: s.Thread, Turn: s.Turn})
	}
	return w
}

// maxProposalBytes bounds one proposal's JSON, so that it fits one line
// as an event and, alone, in a list.
const maxProposalBytes = ipc.MaxLineBytes - 1024

// ReviewProposal is a queued proposal on the wire as the owner reviews
// it: with why policy queued it and the file as it is now, cut to
// ipc.MaxTurnContent and further if the whole would not fit one line.
func ReviewProposal(q hearth.ProposalQueued) ipc.Proposal {
	w := Proposal(q.Proposal)
	w.Why = q.Why
	cur, cut := Cut(string(q.Current), ipc.MaxTurnContent)
	for {
		w.Current, w.CurrentTruncated = cur, cut
		b, err := json.Marshal(w)
		if err != nil || len(b) <= maxProposalBytes || cur == "" {
			return w
		}
		cur, cut = Cut(cur, len(cur)/2)
	}
}

// ProposalList is the proposals waiting, on the wire, cut to fit one line:
// those that do not fit are left out (More).
func ProposalList(ref string, ps []vault.Proposal) *ipc.ProposalList {
	ws := make([]ipc.Proposal, len(ps))
	for i, p := range ps {
		ws[i] = Proposal(p)
	}
	return fitProposals(ref, ws)
}

// ReviewList is ReviewProposals' answer on the wire, cut to fit one line.
func ReviewList(ref string, qs []hearth.ProposalQueued) *ipc.ProposalList {
	ws := make([]ipc.Proposal, len(qs))
	for i, q := range qs {
		ws[i] = ReviewProposal(q)
	}
	return fitProposals(ref, ws)
}

func fitProposals(ref string, ws []ipc.Proposal) *ipc.ProposalList {
	out := &ipc.ProposalList{Ref: ref, Proposals: make([]ipc.Proposal, 0, len(ws))}
	room := ipc.MaxLineBytes - 256 - len(ref)*6
	for _, w := range ws {
		b, err := json.Marshal(w)
		if err != nil {
			continue // cannot happen: a Proposal always encodes
		}
		if room -= len(b) + 1; room < 0 {
			out.More = true
			break
		}
		out.Proposals = append(out.Proposals, w)
	}
	return out
}

// ProposalDecided is a proposal's outcome on the wire.
func ProposalDecided(o hearth.ProposalOutcome, by, ref string) *ipc.ProposalDecided {
	return &ipc.ProposalDecided{ID: o.ID, Path: o.Path, Decision: o.Decision, Why: o.Why, Commit: o.Commit, CommitFailed: o.CommitFailed, By: by, Ref: ref}
}

// history answers a history query off the caller's goroutine (it reads
// the journal); Close cancels it.
func (s *Session) history(m *ipc.HistoryQuery) {
	q := hearth.HistoryQuery{Limit: m.Limit, After: m.After, Since: m.Since, Conversation: m.ConversationID}
	if q.Conversation == "" {
		q.Conversation = s.Conversation()
	}
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.ctx, historyTimeout)
		defer cancel()
		page, err := s.core.History(ctx, q)
		if err != nil {
			s.refuse(err, m.Ref)
			return
		}
		s.reply(HistoryPage(m.Ref, page))
	})
}

// historyTimeout bounds reading one page of history from the journal.
const historyTimeout = 30 * time.Second

// HistoryPage is a page of records on the wire, cut to fit one line: the
// turns that do not fit are left for the next page (More).
func HistoryPage(ref string, p hearth.HistoryPage) *ipc.HistoryPage {
	out := &ipc.HistoryPage{Ref: ref, Turns: make([]ipc.Turn, 0, len(p.Records)), More: p.More}
	room := ipc.MaxLineBytes - 256 - len(ref)*6
	for _, r := range p.Records {
		t := Turn(r)
		b, err := json.Marshal(t)
		if err != nil {
			continue // cannot happen: a Turn always encodes
		}
		if room -= len(b) + 1; room < 0 && len(out.Turns) > 0 {
			out.More = true
			break
		}
		out.Turns = append(out.Turns, t)
	}
	return out
}

// SearchHit is a memory hit on the wire, its text and provenance bounded.
func SearchHit(hit memory.Hit) ipc.SearchHit {
	t := ipc.Turn{ID: hit.ID, Role: hit.Role, TS: hit.TS, Mode: ipc.ModeText}
	if hit.Mode == memory.ModeVoice || hit.Channel == memory.ModeVoice {
		t.Mode = ipc.ModeVoice
	}
	t.Content, t.Truncated = Cut(hit.Text, maxSearchSnippet)
	h := ipc.SearchHit{Turn: t, Score: hit.Score, Kind: hit.Kind}
	h.Session, _ = Cut(hit.Session, maxSearchField)
	h.Channel, _ = Cut(hit.Channel, maxSearchField)
	if hit.Kind == memory.KindKnowledge {
		h.Path, _ = Cut(hit.Path, maxNotePath)
		h.Heading, _ = Cut(hit.Heading, maxSearchField)
		h.Status, h.Confidence = hit.Status, hit.Confidence
	}
	return h
}

func (s *Session) health(ref string) *ipc.HealthReport {
	h := s.core.Health()
	r := &ipc.HealthReport{Ref: ref, State: h.State, Clients: h.Subscribers, Provider: h.Provider, Model: h.Model, Dropped: h.Dropped, Time: h.At}
	if ix := h.Index; ix != nil && !ix.Opening {
		r.Index = &ipc.IndexHealth{
			Backend: ix.Backend, Embedder: ix.Embedder, Indexed: ix.IndexedSinceStart, LagMS: ix.Lag.Milliseconds(),
			Failures: ix.Failures, Failing: ix.Failing, Unavailable: ix.Unavailable, Ready: ix.Ready, Rebuilding: ix.Rebuilding,
			RecallSearches: ix.Searches.Recall, KeywordSearches: ix.Searches.Keyword,
			Note: ix.Note,
		}
	}
	if v := h.Vault; v != nil {
		r.Vault = &ipc.VaultHealth{Uncommitted: v.Uncommitted, Failing: v.Failing, Since: v.Since}
	}
	if jc, ok := s.core.(JobsCore); ok {
		if jh := jc.JobsHealth(); jh != nil {
			r.Jobs = &ipc.JobsHealth{Jobs: jh.Jobs, Failing: jh.Failing, Bad: jh.Bad, Runs: jh.Runs, LastError: jh.LastError}
		}
	}
	if s.opts.Health != nil {
		s.opts.Health(r)
	}
	return r
}

// Event is a core event as a wire message; nil for an event v1 does not
// carry.
func Event(ev hearth.Event) ipc.Msg {
	switch e := ev.(type) {
	case *hearth.Snapshot:
		return History(e)
	case *hearth.TurnStored:
		return &ipc.TurnStored{Turn: Turn(e.Record), Ref: e.Ref}
	case *hearth.ToolOutcome:
		return Turn(e.Record).Tool
	case *hearth.ReplyDone:
		d := &ipc.Done{Turn: Turn(e.Record), Model: e.Model}
		if e.Usage != nil {
			d.Usage = &ipc.Usage{InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens}
		}
		return d
	case *hearth.Token:
		return &ipc.Token{Content: e.Text}
	case *hearth.StateChanged:
		return &ipc.Status{State: e.State, Detail: e.Detail}
	case *hearth.ToolStarted:
		return &ipc.ToolCall{ID: e.ID, Name: e.Name, Arguments: rawArgs(e.Args), Reason: e.Reason}
	case *hearth.ConfirmAsked:
		return &ipc.ConfirmRequest{ID: e.ID, Name: e.Name, Arguments: rawArgs(e.Args), Reason: e.Reason, Effect: e.Effect, ExpiresAt: e.ExpiresAt}
	case *hearth.Problem:
		return &ipc.Error{Code: e.Code, Message: e.Message, Ref: e.Ref}
	case *hearth.Notice:
		return &ipc.Error{Code: e.Code, Message: e.Message}
	case *hearth.Forgotten:
		return &ipc.Forgotten{IDs: e.IDs, By: e.By}
	case *hearth.ProposalQueued:
		p := ReviewProposal(*e)
		return &p
	case *hearth.ProposalDecided:
		return ProposalDecided(e.ProposalOutcome, e.By, "")
	case *hearth.Reply:
		m, _ := e.Value.(ipc.Msg)
		return m
	}
	return nil
}

// History is a snapshot on the wire.
func History(s *hearth.Snapshot) *ipc.History {
	h := &ipc.History{
		Turns:          make([]ipc.Turn, len(s.Turns)),
		Server:         "hearth/" + s.Version,
		Protocol:       ipc.ProtocolVersion,
		ConversationID: s.Conversation,
		State:          s.State,
		Detail:         s.Detail,
		Pending:        s.Pending,
		Provider:       s.Provider,
		Model:          s.Model,
		Features:       s.Features,
	}
	for i, r := range s.Turns {
		h.Turns[i] = Turn(r)
	}
	return h
}

// Turn is a journal record on the wire: content cut to MaxTurnContent, a
// tool record's outcome in Tool with its result or error cut to 2 KiB.
func Turn(r journal.Record) ipc.Turn {
	t := ipc.Turn{ID: r.ID, Role: r.Role, TS: r.TS, Mode: r.Mode, Incomplete: r.Incomplete}
	t.Content, t.Truncated = Cut(r.Text, ipc.MaxTurnContent)
	for _, c := range r.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, ipc.ToolCall{ID: c.ID, Name: c.Name, Arguments: rawArgs(c.Arguments), Reason: c.Reason})
	}
	if tr := r.Tool; tr != nil {
		res := &ipc.ToolResult{ID: tr.CallID, Name: tr.Name, Arguments: rawArgs(tr.Arguments), Reason: tr.Reason, DurationMS: tr.DurationMS, Confirmed: tr.Confirmed}
		if tr.Error != "" {
			res.Error, _ = Cut(tr.Error, maxToolSummary)
		} else {
			res.Result, _ = Cut(r.Text, maxToolSummary)
		}
		t.Tool = res
		t.Content, t.Truncated = "", false // the outcome is in Tool
	}
	return t
}

// maxToolSummary bounds a tool's result or error as clients see it; the
// model and the journal get all of it.
const maxToolSummary = 2 << 10

// Cut shortens s to at most n bytes on a rune boundary.
func Cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// rawArgs makes redacted arguments a JSON value on the wire.
func rawArgs(b json.RawMessage) any {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return b
}

// Cost is what an event weighs in a v1 client's queue: about the bytes
// its message will take on the wire, where a turn's content is cut to
// ipc.MaxTurnContent and a tool's result to 2 KiB. The queue holds the
// core's records by reference; what bounds it is what the client has yet
// to read.
func Cost(ev hearth.Event) int64 {
	const overhead = 64
	switch e := ev.(type) {
	case *hearth.TurnStored:
		return overhead + turnCost(e.Record)
	case *hearth.ToolOutcome:
		return overhead + turnCost(e.Record)
	case *hearth.ReplyDone:
		return overhead + turnCost(e.Record)
	case *hearth.Snapshot:
		n := int64(overhead + len(e.Pending))
		for _, r := range e.Turns {
			n += turnCost(r)
		}
		return min(n, ipc.MaxLineBytes) // a history is cut to fit one line
	}
	return hearth.Size(ev)
}

func turnCost(r journal.Record) int64 {
	if r.Tool != nil {
		return int64(min(len(r.Text)+len(r.Tool.Error), 2*maxToolSummary) + len(r.Tool.Arguments) + len(r.Tool.Reason))
	}
	n := min(len(r.Text), ipc.MaxTurnContent)
	for _, c := range r.ToolCalls {
		n += len(c.Arguments) + len(c.Reason) + len(c.Name)
	}
	return int64(n)
}
